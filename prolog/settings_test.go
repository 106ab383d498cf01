package prolog

import (
	"bytes"
	"errors"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fairway-hpc/fairway/prolog/nvmltest"
)

// goodSettings are valid hook settings, with the state and spool
// directories under / (root's on any test machine).
func goodSettings() Settings {
	return Settings{Hooks: Config{Cluster: "lab", StateDir: "/", SpoolDir: "/", MPSDir: "/mps", ShardsPerGPU: 4,
		DefaultMode: ComputeExclusiveProcess, KillStray: true, StoreTimeout: 2 * time.Second},
		Timeout: 5 * time.Second, LogLevel: slog.LevelInfo, Scontrol: "/", MPSControl: "/"}
}

func TestSettingsValidate(t *testing.T) {
	s := goodSettings()
	if err := s.Validate(false); err != nil {
		t.Errorf("Validate: %v", err)
	}
	noCluster := s
	noCluster.Hooks.Cluster = ""
	if err := noCluster.Validate(true); err != nil {
		t.Errorf("a flush needs no cluster: %v", err)
	}
	if err := noCluster.Validate(false); err == nil || !strings.Contains(err.Error(), "cluster") {
		t.Errorf("a hook without a cluster: %v", err)
	}
	relProgram := s
	relProgram.Scontrol = "scontrol"
	var se *SettingError
	if err := relProgram.Validate(true); !errors.As(err, &se) || se.Field != "Scontrol" {
		t.Errorf("a relative scontrol: %v, want a SettingError naming Scontrol", err)
	}
}

func TestRunWithoutJobDoesNothing(t *testing.T) {
	var logs bytes.Buffer
	s := goodSettings()
	d := s.Deps(nil, nil, nil, slog.New(slog.NewTextHandler(&logs, nil)))
	if err := Run(t.Context(), "prolog", s, d, func(string) string { return "" }); err != nil {
		t.Fatalf("Run without SLURM_JOB_ID = %v, want nil (the job starts)", err)
	}
	if !strings.Contains(logs.String(), "prolog does nothing") {
		t.Errorf("log %q does not say the prolog did nothing", logs.String())
	}
}

// At debug level Run logs every GPU call with its time and the hook's total,
// which is how an admin finds what a slow prolog waited for; at info level
// it logs none of it.
func TestRun_DebugTimesEachGPUCall(t *testing.T) {
	env := map[string]string{"SLURM_JOB_ID": "7", "SLURM_JOB_UID": "1001", "SLURMD_NODENAME": "n1",
		"SLURM_JOB_GPUS": "0,1", "SLURM_SHARDS_ON_NODE": "0", "SLURM_JOB_EXIT_CODE": "0"}
	for _, tc := range []struct {
		level slog.Level
		want  []string // each hook's log holds every one
	}{
		{slog.LevelDebug, []string{"op=open ", "op=device gpu=0 ", "op=device gpu=1 ", "op=close ", " done\" job_id=7 took="}},
		{slog.LevelInfo, nil},
	} {
		dir := t.TempDir()
		s := goodSettings()
		s.LogLevel = tc.level
		s.Hooks.StateDir, s.Hooks.SpoolDir = filepath.Join(dir, "state"), filepath.Join(dir, "spool")
		hookWant := map[string][]string{
			"prolog": {"op=health gpu=1 ", "op=set-compute-mode gpu=0 ", "op=start-accounting gpu=1 "},
			"epilog": {"op=accounting gpu=0 ", "op=energy gpu=1 "},
		}
		m := nvmltest.New(2)
		for _, which := range []string{"prolog", "epilog"} {
			var logs syncBuffer
			d := s.Deps(NewNVML(m), nil, nil, slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: tc.level})))
			if err := Run(t.Context(), which, s, d, func(k string) string { return env[k] }); err != nil {
				t.Fatalf("%v %s: %v", tc.level, which, err)
			}
			got := logs.String()
			if tc.want == nil {
				if strings.Contains(got, "GPU call") || strings.Contains(got, "took=") {
					t.Errorf("%v %s logs timings:\n%s", tc.level, which, got)
				}
				continue
			}
			for _, w := range append(hookWant[which], tc.want...) {
				if !strings.Contains(got, w) {
					t.Errorf("%v %s: log lacks %q:\n%s", tc.level, which, w, got)
				}
			}
		}
		// The timed library passes the driver's answers through: the epilog
		// measured both GPUs.
		recs, _, err := Spool{Dir: s.Hooks.SpoolDir}.Pending()
		if err != nil || len(recs) != 2 || recs[0].GPUUUID == "" || recs[1].UtilAvgPct == nil {
			t.Errorf("%v: spool %+v, %v; want 2 measured records", tc.level, recs, err)
		}
	}
}
