package main

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/fairway-hpc/fairway/contrib/lab"
	"github.com/jackc/pgx/v5"
)

// runApp runs the fairway CLI in-process and returns what it printed.
func runApp(t *testing.T, args ...string) (string, error) {
	t.Helper()
	app := newApp()
	var out bytes.Buffer
	app.Writer = &out
	app.ErrWriter = &out
	err := app.RunContext(context.Background(), append([]string{"fairway"}, args...))
	return out.String(), err
}

func TestMigrateCommand_UpTwiceThenStatus(t *testing.T) {
	e := lab.Get(t)
	ctx := context.Background()
	admin, err := pgx.Connect(ctx, e.DatabaseURL)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(ctx)
	name := fmt.Sprintf("fairway_test_cli_%d", time.Now().UnixNano())
	if _, err := admin.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = admin.Exec(ctx, "DROP DATABASE "+name+" WITH (FORCE)") })
	cfg, _ := pgx.ParseConfig(e.DatabaseURL)
	url := fmt.Sprintf("postgres://%s@%s:%d/%s?sslmode=disable", cfg.User, cfg.Host, cfg.Port, name)

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
