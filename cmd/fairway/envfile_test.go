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
	for _, bad := range []string{"novalue\n", "lower=1\n", "=1\n", "export FAIRWAY_A=1\n"} {
		if _, err := parseEnvFile([]byte(bad)); err == nil {
			t.Errorf("parseEnvFile(%q): no error", bad)
		}
	}
}
