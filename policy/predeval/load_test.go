package predeval

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestParsePredictors(t *testing.T) {
	if got, err := ParsePredictors(" limit, tsafrir ,"); err != nil || strings.Join(got, ",") != "limit,tsafrir" {
		t.Errorf("ParsePredictors = %v, %v", got, err)
	}
	for in, want := range map[string]string{"limit,crystal": `unknown predictor "crystal"`, " , ": "empty"} {
		var fe *FieldError
		if _, err := ParsePredictors(in); !errors.As(err, &fe) || fe.Field != "Predictors" || !strings.Contains(fe.Err.Error(), want) {
			t.Errorf("ParsePredictors(%q) = %v, want %q", in, err, want)
		}
	}
}

func TestLoadTraceAndRunNamed(t *testing.T) {
	p := filepath.Join(t.TempDir(), "t.swf")
	swf := "; MaxProcs: 8\n1 0 1 10 1 -1 -1 1 60 -1 1 1 1 -1 -1 -1 -1 -1\n2 5 1 20 1 -1 -1 1 60 -1 1 1 1 -1 -1 -1 -1 -1\n"
	if err := os.WriteFile(p, []byte(swf), 0o644); err != nil {
		t.Fatal(err)
	}
	jobs, name, left, err := LoadTrace(p, "swf")
	if err != nil || len(jobs) != 2 || name != "t.swf" || left == nil {
		t.Fatalf("LoadTrace = %d jobs, %q, %v, %v", len(jobs), name, left, err)
	}
	res, err := RunNamed(jobs, []string{"limit"}, Options{Protocol: SubmitOrder, Trace: name})
	if err != nil || len(res.Predictors) != 1 || res.Predictors[0].Name != "limit" || res.Jobs != 2 {
		t.Fatalf("RunNamed = %+v, %v", res, err)
	}
	if _, _, _, err := LoadTrace(filepath.Join(t.TempDir(), "none"), "swf"); err == nil || !strings.Contains(err.Error(), "open trace") {
		t.Errorf("a missing trace: %v", err)
	}
}
