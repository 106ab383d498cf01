package accounting

import (
	"errors"
	"fmt"
	"io"

	"github.com/fairway-hpc/fairway/internal/trace"
)

// TraceSource is a Source over a workload trace (SWF, Helios, Philly-MIX),
// read by package internal/trace. It can Rewind when its reader can seek (a
// file, not a pipe).
type TraceSource struct {
	*trace.Reader
	r      io.Reader
	format trace.Format
	opt    trace.Options
}

// NewTraceSource reads a trace of format f from r. name is the file name
// for messages ("file:line: reason"); cluster is stored as every job's
// cluster; skipBad skips malformed lines (counted by Skipped) instead of
// stopping at the first.
func NewTraceSource(r io.Reader, f trace.Format, name, cluster string, skipBad bool) (*TraceSource, error) {
	opt := trace.Options{Name: name, SkipBad: skipBad, Cluster: cluster}
	tr, err := trace.NewReader(r, f, opt)
	if err != nil {
		return nil, err
	}
	return &TraceSource{Reader: tr, r: r, format: f, opt: opt}, nil
}

// Where implements Source: the file and line of the current job.
func (t *TraceSource) Where() string { return fmt.Sprintf("%s:%d", t.opt.Name, t.Line()) }

// Rewind implements Rewinder by seeking the underlying reader back to its
// start and reading the trace anew.
func (t *TraceSource) Rewind() error {
	sk, ok := t.r.(io.Seeker)
	if !ok {
		return errors.New("trace input cannot seek")
	}
	if _, err := sk.Seek(0, io.SeekStart); err != nil {
		return fmt.Errorf("rewind %s: %w", t.opt.Name, err)
	}
	tr, err := trace.NewReader(t.r, t.format, t.opt)
	if err != nil {
		return err
	}
	t.Reader = tr
	return nil
}
