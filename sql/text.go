package sql

import (
	"context"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/jackc/pgx/v5"
)

// UpText runs Up and says on w what it applied, one migration a line, or
// that the schema was already current.
func UpText(ctx context.Context, conn *pgx.Conn, w io.Writer) error {
	done, err := Up(ctx, conn)
	for _, m := range done {
		fmt.Fprintf(w, "applied %04d_%s\n", m.Version, m.Name)
	}
	if err != nil {
		return err
	}
	if len(done) == 0 {
		latest, _ := Latest()
		fmt.Fprintf(w, "schema is current (version %d)\n", latest)
	}
	return nil
}

// StatusText writes the applied and pending migrations as a table on w,
// then fails as CheckCurrent does when the schema is not current.
func StatusText(ctx context.Context, conn *pgx.Conn, w io.Writer) error {
	applied, err := Status(ctx, conn)
	if err != nil {
		return err
	}
	pend, err := Pending(applied)
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "VERSION\tNAME\tAPPLIED")
	for _, a := range applied {
		fmt.Fprintf(tw, "%04d\t%s\t%s\n", a.Version, a.Name, a.AppliedAt.UTC().Format(time.RFC3339))
	}
	for _, m := range pend {
		fmt.Fprintf(tw, "%04d\t%s\tpending\n", m.Version, m.Name)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	return CheckCurrent(ctx, conn)
}
