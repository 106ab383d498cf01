package policy

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestFile_RoundTrip(t *testing.T) {
	p := LearnedParams{Run: 0.8, Limit: 0.25, Size: -0.5, Usage: 3, Counter: 0.1, Age: 1.5, Effective: 0.7}
	f := NewLearnedFile(p)
	f.TrainedOn = TrainedOn{Cluster: "lab", From: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), To: time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC), Jobs: 30000, Source: "ctc.swf.gz"}
	f.Objective = "bsld"
	f.Validation = []ValidationRow{{Policy: "learned", Metrics: map[string]float64{"avg_bsld": 12.5}, Meets: []string{"avg wait ≤ fairshare"}}}
	b, err := f.Encode()
	if err != nil {
		t.Fatal(err)
	}
	g, err := ParseFile(b)
	if err != nil {
		t.Fatalf("ParseFile(Encode()) = %v\n%s", err, b)
	}
	if diff := cmp.Diff(f, g); diff != "" {
		t.Errorf("round trip (-written +read):\n%s", diff)
	}
	got, err := g.LearnedParams()
	if err != nil || got != p {
		t.Errorf("LearnedParams() = %+v, %v; want %+v", got, err, p)
	}
	pol, err := g.Policy()
	if err != nil || pol.Name() != "learned" {
		t.Fatalf("Policy() = %v, %v", pol, err)
	}
}

// TestParseFile_Refuses checks each way a file can be unusable is refused
// with an error naming the problem.
func TestParseFile_Refuses(t *testing.T) {
	const good = `{"format_version": 2, "family": "learned",
  "features": ["run", "limit", "size", "usage", "counter", "age", "effective"],
  "parameters": {"run": 1, "limit": 0, "size": 0, "usage": 2, "counter": 0, "age": 1, "effective": 0},
  "trained_on": {"cluster": "lab", "from": "2026-01-01T00:00:00Z", "to": "2026-02-01T00:00:00Z", "jobs": 100},
  "objective": "bsld"}`
	if _, err := ParseFile([]byte(good)); err != nil {
		t.Fatalf("the good file: %v", err)
	}
	tests := []struct {
		name     string
		old, new string // edit of good
		want     string
	}{
		{"a later format version", `"format_version": 2`, `"format_version": 3`, "format_version 3: this Fairway reads versions 1 to 2"},
		{"format version 0", `"format_version": 2`, `"format_version": 0`, "format_version 0: this Fairway reads versions 1 to 2"},
		{"no format version", `"format_version": 2,`, ``, "no format_version: want 2"},
		{"a format version not a whole number", `"format_version": 2`, `"format_version": 2.0`, "format_version 2.0: want a whole number, 1 to 2"},
		{"a format version as a string", `"format_version": 2`, `"format_version": "2"`, `format_version "2": want a whole number, 1 to 2`},
		// Version 1 predates effective: a file naming it is not version 1.
		{"version 1 with effective", `"format_version": 2`, `"format_version": 1`, `feature "effective": format_version 1 has no such feature (it has run, limit, size, usage, counter, age); a file with it is format_version 2`},
		{"version 2 without effective", `"age", "effective"]`, `"age"]`, `feature "effective" missing from features`},
		{"not JSON", `{"format_version"`, `{format_version`, "not a JSON object"},
		{"a feature missing", `"counter", "age",`, `"age",`, `feature "counter" missing from features`},
		{"a parameter missing", `"counter": 0, `, ``, `parameter "counter" missing`},
		{"an unknown feature", `"effective"]`, `"effective", "colour"]`, `feature "colour": the learned family has no such feature`},
		{"a feature twice", `"effective"]`, `"effective", "run"]`, `feature "run" listed twice in features`},
		{"an unknown parameter", `"effective": 0}`, `"effective": 0, "colour": 2}`, `parameter "colour": the learned family has no such feature`},
		{"a non-finite parameter", `"usage": 2`, `"usage": 1e999`, `parameter "usage" = 1e999: want a finite number`},
		{"a negative age", `"age": 1,`, `"age": -1,`, "age = -1: want >= 0"},
		{"another family", `"family": "learned"`, `"family": "neural"`, `family "neural": want learned`},
		{"an unknown field", `"objective": "bsld"`, `"objective": "bsld", "extra": 1`, `unknown field "extra"`},
		// encoding/json keeps the last of two keys: the file would run with
		// a parameter other than the one a reader sees first.
		{"a parameter twice", `"usage": 2,`, `"usage": 2, "usage": 0,`, `key "usage" given twice`},
		{"a field twice", `"objective": "bsld"`, `"objective": "bsld", "objective": "wait"`, `key "objective" given twice`},
		{"a parameter as a string", `"run": 1`, `"run": "1"`, `parameter "run" = "1": want a number, not a string`},
		{"a parameter null", `"run": 1`, `"run": null`, `parameter "run" = null: want a finite number`},
		{"an empty file", good, ``, "empty: no JSON object"},
		{"only space", good, " \r\n\t", "empty: no JSON object"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if !strings.Contains(good, tt.old) {
				t.Fatalf("%q is not in the good file", tt.old)
			}
			_, err := ParseFile([]byte(strings.Replace(good, tt.old, tt.new, 1)))
			if err == nil || !errors.Is(err, ErrPolicyFile) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("ParseFile = %v, want ErrPolicyFile saying %q", err, tt.want)
			}
		})
	}
}

// TestParseFile_Version1 checks a file of format version 1, written before
// the effective feature, still runs, with that exponent 0 as it was
// fitted, and that one naming the feature in its parameters is refused.
func TestParseFile_Version1(t *testing.T) {
	const v1 = `{"format_version": 1, "family": "learned",
  "features": ["run", "limit", "size", "usage", "counter", "age"],
  "parameters": {"run": 1.5, "limit": 0.25, "size": -0.5, "usage": 3, "counter": 0.5, "age": 2},
  "trained_on": {"cluster": "lab", "jobs": 100}, "objective": "bsld"}`
	f, err := ParseFile([]byte(v1))
	if err != nil {
		t.Fatalf("ParseFile(version 1) = %v", err)
	}
	want := LearnedParams{Run: 1.5, Limit: 0.25, Size: -0.5, Usage: 3, Counter: 0.5, Age: 2}
	if p, err := f.LearnedParams(); err != nil || p != want {
		t.Errorf("LearnedParams() = %+v, %v; want %+v", p, err, want)
	}
	if _, err := f.Policy(); err != nil {
		t.Errorf("Policy() = %v", err)
	}
	bad := strings.Replace(v1, `"age": 2}`, `"age": 2, "effective": 1}`, 1)
	if _, err := ParseFile([]byte(bad)); err == nil || !strings.Contains(err.Error(), `parameter "effective": format_version 1 has no such feature`) {
		t.Errorf("ParseFile(version 1 with an effective parameter) = %v", err)
	}
}

// TestParseFile_Accepts: what an editor may add around the text a tuner
// wrote does not change its meaning, and is read.
func TestParseFile_Accepts(t *testing.T) {
	b, err := NewLearnedFile(DefaultLearnedParams()).Encode()
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name string
		text string
	}{
		{"as written", string(b)},
		// Notepad and PowerShell's Out-File write one; RFC 8259 §8.1 lets a
		// reader ignore it, as the trace readers do.
		{"a UTF-8 byte order mark", "\ufeff" + string(b)},
		{"CRLF line ends", strings.ReplaceAll(string(b), "\n", "\r\n")},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f, err := ParseFile([]byte(tt.text))
			if err != nil {
				t.Fatalf("ParseFile = %v", err)
			}
			if p, err := f.LearnedParams(); err != nil || p != DefaultLearnedParams() {
				t.Errorf("LearnedParams() = %+v, %v; want %+v", p, err, DefaultLearnedParams())
			}
		})
	}
}

func TestTrainedOn_String(t *testing.T) {
	from, to := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(2026, 3, 31, 23, 0, 0, 0, time.UTC)
	tests := []struct {
		name string
		on   TrainedOn
		want string
	}{
		{"everything", TrainedOn{Cluster: "lab", From: from, To: to, Jobs: 1200, Source: "accounting database"},
			"cluster lab, jobs submitted 2026-01-01 to 2026-03-31, 1200 jobs, from accounting database"},
		{"a trace", TrainedOn{Jobs: 30000, Source: "ctc.swf.gz"}, "30000 jobs, from ctc.swf.gz"},
		{"nothing", TrainedOn{}, "unknown history (the file does not say)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.on.String(); got != tt.want {
				t.Errorf("String() = %q, want %q", got, tt.want)
			}
		})
	}
}
