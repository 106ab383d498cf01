package sql_test

import (
	"bytes"
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/fairway-hpc/fairway/sql"
)

// TestText_UpAndStatus: status lists every migration as pending and fails
// before up; up names each migration it applies, then says the schema is
// current; status then lists each with the time it was applied.
func TestText_UpAndStatus(t *testing.T) {
	conn := freshDB(t)
	ctx := context.Background()
	all, _ := sql.Migrations()
	latest, _ := sql.Latest()

	var b bytes.Buffer
	err := sql.StatusText(ctx, conn, &b)
	pending := regexp.MustCompile(`(?m)^\d{4}  +\S+  +pending$`)
	if err == nil || len(pending.FindAllString(b.String(), -1)) != len(all) {
		t.Fatalf("status before up: err %v, want an error and %d pending rows:\n%s", err, len(all), b.String())
	}
	b.Reset()
	if err := sql.UpText(ctx, conn, &b); err != nil {
		t.Fatal(err)
	}
	var want strings.Builder
	for _, m := range all {
		fmt.Fprintf(&want, "applied %04d_%s\n", m.Version, m.Name)
	}
	if b.String() != want.String() {
		t.Errorf("first up printed:\n%s\nwant:\n%s", b.String(), want.String())
	}
	b.Reset()
	if err := sql.UpText(ctx, conn, &b); err != nil || b.String() != fmt.Sprintf("schema is current (version %d)\n", latest) {
		t.Errorf("second up: %v, printed %q", err, b.String())
	}
	b.Reset()
	if err := sql.StatusText(ctx, conn, &b); err != nil {
		t.Fatalf("status after up: %v", err)
	}
	lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
	row := regexp.MustCompile(`^\d{4}  +\S+  +\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$`)
	if len(lines) != len(all)+1 || !strings.HasPrefix(lines[0], "VERSION") {
		t.Fatalf("status after up:\n%s", b.String())
	}
	for _, l := range lines[1:] {
		if !row.MatchString(l) {
			t.Errorf("status row %q: want VERSION NAME APPLIED-time", l)
		}
	}
}
