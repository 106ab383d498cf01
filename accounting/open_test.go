package accounting

import (
	"context"
	"errors"
	"strings"
	"testing"
)

// TestConnect_ClearErrors checks that each way of not reaching the
// database is named, and that the password never shows.
func TestConnect_ClearErrors(t *testing.T) {
	for _, tc := range []struct {
		name, url, want string
	}{
		{"no-url", "", "FAIRWAY_DATABASE_URL"},
		{"bad-url", "postgres://a b:secret@/", "not a valid PostgreSQL URL"},
		{"dead-db", "postgres://fairway:secret@127.0.0.1:1/fairway?connect_timeout=2", `connect to PostgreSQL at 127.0.0.1:1 database "fairway"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			conn, err := Connect(context.Background(), tc.url)
			if conn != nil {
				conn.Close(context.Background())
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want it to mention %q", err, tc.want)
			}
			if strings.Contains(err.Error(), "secret") {
				t.Fatalf("err = %v: shows the password", err)
			}
			if tc.url == "" && !errors.Is(err, ErrNoDatabase) {
				t.Fatalf("err = %v, want ErrNoDatabase", err)
			}
		})
	}
}
