package prolog

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"
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
