package predeval

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/fairway-hpc/fairway/internal/trace"
	"github.com/fairway-hpc/fairway/policy"
	"github.com/fairway-hpc/fairway/policy/predict"
)

// LoadTrace reads the jobs of the trace at path, the name results carry
// (the file's base name) and the records the reader left out (never nil:
// a trace reports "left out: none").
func LoadTrace(path string, f trace.Format) ([]policy.Job, string, map[string]int, error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, "", nil, fmt.Errorf("open trace: %w", err)
	}
	defer fh.Close()
	tr, err := trace.ReadAll(fh, f, trace.Options{Name: path})
	if err != nil {
		return nil, "", nil, fmt.Errorf("read trace: %w", err)
	}
	if tr.LeftOut == nil {
		tr.LeftOut = map[string]int{}
	}
	return tr.Jobs, filepath.Base(path), tr.LeftOut, nil
}

// ParsePredictors reads a comma-separated list of predictor names.
func ParsePredictors(list string) ([]string, error) {
	var names []string
	for _, n := range strings.Split(list, ",") {
		n = strings.TrimSpace(n)
		if n == "" {
			continue
		}
		if _, ok := predict.Predictors[n]; !ok {
			return nil, &FieldError{Field: "Predictors", Err: fmt.Errorf("unknown predictor %q: want some of %s", n, strings.Join(predict.Names(), ","))}
		}
		names = append(names, n)
	}
	if len(names) == 0 {
		return nil, &FieldError{Field: "Predictors", Err: errors.New("empty")}
	}
	return names, nil
}

// RunNamed is Run with fresh predictors of the given names.
func RunNamed(jobs []policy.Job, names []string, opt Options) (*Result, error) {
	preds := make([]policy.Predictor, len(names))
	for i, n := range names {
		var err error
		if preds[i], err = predict.New(n, predict.Params{}); err != nil {
			return nil, err
		}
	}
	return Run(jobs, preds, opt)
}
