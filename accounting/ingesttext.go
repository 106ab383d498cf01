package accounting

import (
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/fairway-hpc/fairway/internal/trace"
)

// WriteText writes the import's summary for people: one row per figure,
// then what the reader left out and the rejected records (the first few,
// and how many more).
func (r IngestResult) WriteText(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "source\t%s\n", r.From)
	if r.Via != "" {
		fmt.Fprintf(tw, "via\t%s\n", r.Via)
	}
	if r.File != "" {
		fmt.Fprintf(tw, "file\t%s\n", r.File)
	}
	if r.Cluster != "" {
		fmt.Fprintf(tw, "cluster\t%s\n", r.Cluster)
	}
	if len(r.Window) == 2 {
		fmt.Fprintf(tw, "window\t%s .. %s\n", r.Window[0], r.Window[1])
	}
	for _, row := range []struct {
		k string
		v int
	}{{"read", r.Read}, {"inserted", r.Inserted}, {"updated", r.Updated}, {"unchanged", r.Unchanged},
		{"duplicates", r.Duplicates}, {"unfinished", r.Unfinished}, {"rejected", r.Rejected}} {
		fmt.Fprintf(tw, "%s\t%d\n", row.k, row.v)
	}
	fmt.Fprintf(tw, "seconds\t%.2f\n", r.Seconds)
	if err := tw.Flush(); err != nil {
		return err
	}
	if r.LeftOut != nil {
		fmt.Fprintf(w, "left out: %s\n", trace.FormatLeftOut(r.LeftOut))
	}
	for _, msg := range r.Rejects {
		fmt.Fprintf(w, "rejected: %s\n", msg)
	}
	if r.Rejected > len(r.Rejects) {
		fmt.Fprintf(w, "rejected: %d more not listed\n", r.Rejected-len(r.Rejects))
	}
	return nil
}
