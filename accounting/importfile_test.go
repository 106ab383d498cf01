package accounting

import (
	"errors"
	"fmt"
	"testing"

	"github.com/fairway-hpc/fairway/internal/trace"
)

func TestTraceCluster(t *testing.T) {
	for in, want := range map[string]string{
		"../shared/data/traces/KTH-SP2-filtered.swf.gz": "KTH-SP2-filtered",
		"Philly-MIX1.csv.gz":                            "Philly-MIX1",
		"cluster_log.csv":                               "cluster_log",
		"stdin":                                         "stdin",
	} {
		if got := TraceCluster(in); got != want {
			t.Errorf("TraceCluster(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestIsBadInput(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{fmt.Errorf("line 3: %w", trace.ErrMalformed), true},
		{fmt.Errorf("job 7: %w", ErrInvalidJob), true},
		{fmt.Errorf("record 2: %w", ErrMalformed), true},
		{errors.New("connection refused"), false},
		{nil, false},
	} {
		if got := IsBadInput(tc.err); got != tc.want {
			t.Errorf("IsBadInput(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}
