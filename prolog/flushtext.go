package prolog

import (
	"context"
	"fmt"
	"io"
	"log/slog"
)

// FlushReport is what `fairway spool flush` says it did, as text or JSON.
type FlushReport struct {
	Spool  string `json:"spool"`
	Stored int    `json:"stored"`
	Left   int    `json:"left"`
	Error  string `json:"error,omitempty"`
	err    error
}

// FlushReport runs Flush and returns what it did.
func (s Spool) FlushReport(ctx context.Context, store UsageStore, log *slog.Logger) FlushReport {
	stored, left, err := s.Flush(ctx, store, log)
	r := FlushReport{Spool: s.Dir, Stored: stored, Left: left, err: err}
	if err != nil {
		r.Error = err.Error()
	}
	return r
}

// WriteText writes the report as one line.
func (r FlushReport) WriteText(w io.Writer) error {
	_, err := fmt.Fprintf(w, "stored %d usage records from %s, %d left\n", r.Stored, r.Spool, r.Left)
	return err
}

// Err is the flush's error, or, when files are left that are not usage
// records, an error saying so: a timer's failed run is what makes a
// person look at them.
func (r FlushReport) Err() error {
	if r.err != nil {
		return r.err
	}
	if r.Left > 0 {
		return fmt.Errorf("%d spooled files are not usage records; see the log", r.Left)
	}
	return nil
}
