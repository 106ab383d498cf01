package accounting

import (
	"fmt"
	"io"

	"github.com/fairway-hpc/fairway/policy/trace"
)

// TraceSource is a Source over a workload trace (SWF, Helios, Philly-MIX),
// read by package policy/trace.
type TraceSource struct {
	*trace.Reader
	name string
}

// NewTraceSource reads a trace of format f from r. name is the file name
// for messages ("file:line: reason"); cluster is stored as every job's
// cluster; skipBad skips malformed lines (counted by Skipped) instead of
// stopping at the first.
func NewTraceSource(r io.Reader, f trace.Format, name, cluster string, skipBad bool) (*TraceSource, error) {
	tr, err := trace.NewReader(r, f, trace.Options{Name: name, SkipBad: skipBad, Cluster: cluster})
	if err != nil {
		return nil, err
	}
	return &TraceSource{Reader: tr, name: name}, nil
}

// Where implements Source: the file and line of the current job.
func (t *TraceSource) Where() string { return fmt.Sprintf("%s:%d", t.name, t.Line()) }
