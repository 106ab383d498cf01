package slurmctl

import (
	"context"
	"errors"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestCommands_SlurmdbdReaders: each reader runs the command line
// accounting's parsers expect (sacct on PATH unless a path is given, the
// window in the form each reads) and returns stdout untouched; a failure
// names the command and carries its stderr.
func TestCommands_SlurmdbdReaders(t *testing.T) {
	since := time.Date(2026, 11, 2, 9, 0, 0, 0, time.Local)
	until := since.Add(time.Hour)
	fail := func() *fakeRunner {
		return &fakeRunner{stderr: []byte(" sacct: error: Problem talking to the database\n"), err: errors.New("exit status 1")}
	}
	tests := []struct {
		name    string
		call    func(Commands) ([]byte, error)
		want    string
		wantErr string
	}{
		{"sacct --json", func(c Commands) ([]byte, error) { return c.SacctJobsJSON(context.Background(), "", "", since, until) },
			"sacct --json -a -D -S now±N -E now±N",
			"sacct --json -a -D -S now±N -E now±N: exit status 1: sacct: error: Problem talking to the database"},
		{"sacct --json -M", func(c Commands) ([]byte, error) {
			return c.SacctJobsJSON(context.Background(), "/opt/slurm/bin/sacct", "kth", since, until)
		},
			"/opt/slurm/bin/sacct --json -a -D -S now±N -E now±N -M kth",
			"/opt/slurm/bin/sacct --json -a -D -S now±N -E now±N -M kth: exit status 1: sacct: error: Problem talking to the database"},
		{"sacct usage", func(c Commands) ([]byte, error) { return c.SacctUsage(context.Background(), "", since, until) },
			"sacct -a -n -P --noconvert --format=JobIDRaw,ElapsedRaw,TotalCPU,MaxRSS -S now±N -E now±N",
			"sacct usage: exit status 1: sacct: error: Problem talking to the database"},
		{"sacctmgr", func(c Commands) ([]byte, error) { return c.SacctmgrAssociations(context.Background(), "") },
			"sacctmgr -nP show associations format=cluster,account,user,parentname,fairshare",
			"sacctmgr -nP show associations format=cluster,account,user,parentname,fairshare: exit status 1: sacct: error: Problem talking to the database"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &fakeRunner{stdout: []byte("printed\n")}
			out, err := tt.call(Commands{Runner: r})
			if err != nil || string(out) != "printed\n" {
				t.Errorf("= %q, %v; want stdout as printed", out, err)
			}
			if diff := cmp.Diff([]string{tt.want}, relTimes(r.calls)); diff != "" {
				t.Errorf("command (-want +got):\n%s", diff)
			}
			if _, err := tt.call(Commands{Runner: fail()}); err == nil || relTimes([]string{err.Error()})[0] != tt.wantErr {
				t.Errorf("error = %v, want %q", err, tt.wantErr)
			}
		})
	}
}

// relTimes writes every relative sacct time (now-N, now+N; the window in
// seconds from the moment of the call, TestCommands_SacctJobsJSONWindowCoversDST
// checks the values) as now±N.
func relTimes(s []string) []string {
	out := make([]string, len(s))
	for i, c := range s {
		out[i] = relTime.ReplaceAllString(c, "now±N")
	}
	return out
}

var relTime = regexp.MustCompile(`now[+-][0-9]+`)

// TestExecRunner_Env: Env is added to the caller's environment (accounting's
// lab readers point sacct at a cluster with SLURM_CONF=...), and SlurmConf
// still sets SLURM_CONF.
func TestExecRunner_Env(t *testing.T) {
	t.Setenv("FW_KEPT", "kept")
	out, _, err := ExecRunner{Env: []string{"FW_ADDED=added"}, SlurmConf: "/etc/x.conf"}.Run(context.Background(), nil,
		"sh", "-c", `printf '%s %s %s' "$FW_KEPT" "$FW_ADDED" "$SLURM_CONF"`)
	if err != nil || string(out) != "kept added /etc/x.conf" {
		t.Errorf("= %q, %v; want %q", out, err, "kept added /etc/x.conf")
	}
}

// TestCommands_SacctUsageWindowAnyZone: SacctUsage's window is what the
// caller asked for whatever zone its times are in. It wrote them as
// wall-clock times in their own zone, which sacct reads as local time: a
// UTC window on a host five hours behind UTC asked for five hours later.
func TestCommands_SacctUsageWindowAnyZone(t *testing.T) {
	defer func(l *time.Location) { time.Local = l }(time.Local)
	time.Local = time.FixedZone("UTC-5", -5*3600)
	now := time.Now().UTC()
	r := &fakeRunner{}
	if _, err := (Commands{Runner: r}).SacctUsage(context.Background(), "", now.Add(-2*time.Hour), now); err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`-S now-([0-9]+) -E now\+([0-9]+)$`).FindStringSubmatch(r.calls[0])
	if m == nil {
		t.Fatalf("sacct %q: want -S now-N -E now+N", r.calls[0])
	}
	start, _ := strconv.Atoi(m[1])
	end, _ := strconv.Atoi(m[2])
	// Two hours and the margin back, the margin ahead; a few seconds for the call.
	if wantS, wantE := int((2*time.Hour+SacctMargin)/time.Second), int(SacctMargin/time.Second); start < wantS-5 || start > wantS+5 || end < wantE-5 || end > wantE+5 {
		t.Errorf("sacct %q: window now-%d … now+%d, want about now-%d … now+%d", r.calls[0], start, end, wantS, wantE)
	}
}
