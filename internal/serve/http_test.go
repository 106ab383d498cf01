package serve

import (
	"context"
	"log/slog"
	"sync/atomic"
	"testing"
)

// TestStartHTTP_Timeouts: the metrics server bounds how long a client may
// take to send headers or a request, to read the answer, or to hold an
// idle connection.
func TestStartHTTP_Timeouts(t *testing.T) {
	var ready atomic.Bool
	srv, err := StartHTTP("127.0.0.1:0", NewMetrics(), &ready, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Shutdown(context.Background())
	for name, d := range map[string]int64{
		"ReadHeaderTimeout": int64(srv.ReadHeaderTimeout), "ReadTimeout": int64(srv.ReadTimeout),
		"WriteTimeout": int64(srv.WriteTimeout), "IdleTimeout": int64(srv.IdleTimeout),
	} {
		if d <= 0 {
			t.Errorf("%s unset: a client can hold a connection for ever", name)
		}
	}
	if srv.MaxHeaderBytes <= 0 || srv.MaxHeaderBytes > 1<<20 {
		t.Errorf("MaxHeaderBytes %d", srv.MaxHeaderBytes)
	}
}
