package main

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseEnvFile(t *testing.T) {
	got, err := parseEnvFile([]byte("# comment\n\nFAIRWAY_A=1\n  FAIRWAY_B = \"two words\" \n; other comment\nFAIRWAY_C='x=y'\nFAIRWAY_D=\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := []envLine{{"FAIRWAY_A", "1", 3}, {"FAIRWAY_B", "two words", 4}, {"FAIRWAY_C", "x=y", 6}, {"FAIRWAY_D", "", 7}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	// A byte order mark at the start of the file (a Windows editor's) is
	// not part of the first name; anywhere else it is.
	if got, err := parseEnvFile([]byte("\ufeffFAIRWAY_A=1\n")); err != nil || len(got) != 1 || got[0].Key != "FAIRWAY_A" {
		t.Errorf("a file starting with a byte order mark: %v, %v", got, err)
	}
	for _, bad := range []string{"novalue\n", "lower=1\n", "=1\n", "export FAIRWAY_A=1\n", "FAIRWAY_A=1\n\ufeffFAIRWAY_B=2\n"} {
		if _, err := parseEnvFile([]byte(bad)); err == nil {
			t.Errorf("parseEnvFile(%q): no error", bad)
		}
	}
}
