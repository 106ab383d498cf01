package slurmctl

import (
	"errors"
	"log/slog"
	"testing"
)

// TestConnect_TwoTokenSources: scontrol and a token file together are
// refused before anything is run or read; one at a time is not refused
// for that reason.
func TestConnect_TwoTokenSources(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  ConnectConfig
		two  bool
	}{
		{"both", ConnectConfig{URL: "http://127.0.0.1:1", ScontrolToken: true, TokenFile: "/nonexistent/token"}, true},
		{"file only", ConnectConfig{URL: "http://127.0.0.1:1", TokenFile: "/nonexistent/token"}, false},
		{"file beside $SLURM_JWT", ConnectConfig{URL: "http://127.0.0.1:1", TokenEnv: "x", TokenFile: "/nonexistent/token"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Connect(t.Context(), tc.cfg, slog.New(slog.DiscardHandler))
			if got := errors.Is(err, ErrTwoTokenSources); got != tc.two {
				t.Errorf("Connect: %v; refused as two token sources = %v, want %v", err, got, tc.two)
			}
		})
	}
}
