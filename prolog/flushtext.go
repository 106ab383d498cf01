package prolog

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
)

// FlushReport is what `fairway spool flush` says it did, as text or JSON.
type FlushReport struct {
	Spool   string `json:"spool"`
	Stored  int    `json:"stored"`
	Left    int    `json:"left"`
	Refused int    `json:"refused,omitempty"`
	Error   string `json:"error,omitempty"`
	err     error
}

// FlushReport runs Flush and returns what it did.
func (s Spool) FlushReport(ctx context.Context, store UsageStore, log *slog.Logger) FlushReport {
	c, err := s.Flush(ctx, store, log)
	r := FlushReport{Spool: s.Dir, Stored: c.Stored, Left: c.Left, Refused: c.Refused, err: err}
	if err != nil {
		r.Error = err.Error()
	}
	return r
}

// WriteText writes the report as one line.
func (r FlushReport) WriteText(w io.Writer) error {
	refused := ""
	if r.Refused > 0 {
		refused = fmt.Sprintf(", %d refused and set aside in %s", r.Refused, filepath.Join(r.Spool, RefusedDir))
	}
	_, err := fmt.Fprintf(w, "stored %d usage records from %s, %d left%s\n", r.Stored, r.Spool, r.Left, refused)
	return err
}

// Err is the flush's error, or, when files are left that are not usage
// records or records were refused, an error saying so: a timer's failed
// run is what makes a person look at them.
func (r FlushReport) Err() error {
	switch {
	case r.err != nil:
		return r.err
	case r.Left > 0:
		return fmt.Errorf("%d spooled files are not usage records; see the log", r.Left)
	case r.Refused > 0:
		return fmt.Errorf("the database refused %d usage records; they are in %s for an import with the schema owner's login (see the log)",
			r.Refused, filepath.Join(r.Spool, RefusedDir))
	}
	return nil
}
