package main

import (
	"strings"
	"testing"
)

func TestServeSettings_HistoryFrom(t *testing.T) {
	for _, tc := range []struct {
		args    []string
		env     string
		want    string
		wantErr string
	}{
		{want: historyFromREST},
		{args: []string{"--history-from", "sacct"}, want: historyFromSacct},
		{env: "sacct", want: historyFromSacct},
		{args: []string{"--history-from", "slurmdbd"}, wantErr: `--history-from "slurmdbd": want rest or sacct`},
	} {
		t.Run(strings.Join(tc.args, " ")+" env="+tc.env, func(t *testing.T) {
			if tc.env != "" {
				t.Setenv("FAIRWAY_HISTORY_FROM", tc.env)
			}
			base := []string{"serve", "--cluster", "c", "--slurm-url", "http://x", "--database-url", "postgres://x/y"}
			cfg, err := settingsFromArgs(t, append(base, tc.args...))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || cfg.HistoryFrom != tc.want {
				t.Fatalf("history from %q, %v; want %q", cfg.HistoryFrom, err, tc.want)
			}
		})
	}
}
