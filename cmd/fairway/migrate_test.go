package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/fairway-hpc/fairway/contrib/lab"
)

// runApp runs the fairway CLI in-process and returns what it printed.
func runApp(t *testing.T, args ...string) (string, error) {
	t.Helper()
	app := newApp()
	var out bytes.Buffer
	app.Writer = &out
	app.ErrWriter = &out
	err := app.RunContext(context.Background(), normalizeArgs(app, append([]string{"fairway"}, args...)))
	return out.String(), err
}

func TestMigrateCommand_UpTwiceThenStatus(t *testing.T) {
	url := lab.Get(t).EmptyDatabase(t)

	out, err := runApp(t, "migrate", "--database-url", url, "status")
	if err == nil || !strings.Contains(err.Error(), "fairway migrate up") {
		t.Fatalf("status before up: err = %v, want a 'run fairway migrate up' error; output:\n%s", err, out)
	}
	out, err = runApp(t, "migrate", "--database-url", url, "up")
	if err != nil || !strings.Contains(out, "applied 0001_base") {
		t.Fatalf("first up: %v\n%s", err, out)
	}
	out, err = runApp(t, "migrate", "--database-url", url, "up")
	if err != nil || !strings.Contains(out, "schema is current") || strings.Contains(out, "applied") {
		t.Fatalf("second up: %v\n%s", err, out)
	}
	out, err = runApp(t, "migrate", "--database-url", url, "status")
	if err != nil || strings.Contains(out, "pending") {
		t.Fatalf("status after up: %v\n%s", err, out)
	}
}

func TestMigrateCommand_ClearErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"no-url", []string{"migrate", "--database-url", "", "up"}, "FAIRWAY_DATABASE_URL"},
		{"bad-url", []string{"migrate", "--database-url", "postgres://a b:c@/", "up"}, "not a valid PostgreSQL URL"},
		{"dead-db", []string{"migrate", "--database-url", "postgres://fairway@127.0.0.1:1/fairway?connect_timeout=2", "up"}, "connect to PostgreSQL at 127.0.0.1:1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("FAIRWAY_DATABASE_URL", "")
			_, err := runApp(t, tc.args...)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want it to mention %q", err, tc.want)
			}
		})
	}
}
