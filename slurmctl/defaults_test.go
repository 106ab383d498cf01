package slurmctl

import (
	"testing"
	"time"

	"github.com/fairway-hpc/fairway/policy"
	"github.com/google/go-cmp/cmp"
)

// TestFillCommands_EveryWriter: every constructor that runs Slurm's
// programs fills unset settings the one way (fillCommands): programs by
// name on PATH, ExecRunner, its own default timeout; what was set stays.
func TestFillCommands_EveryWriter(t *testing.T) {
	type got struct {
		Programs []string
		Runner   Runner
		Timeout  time.Duration
	}
	w, err := NewWriter(WriterConfig{Mode: ModeScontrolSiteFactor, Range: policy.SiteFactorRange()}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	rw, err := NewResizeWriter(ResizeConfig{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	pw, err := NewPowerWriter(PowerConfig{})
	if err != nil {
		t.Fatal(err)
	}
	tok, err := NewScontrolToken(ScontrolTokenConfig{User: "slurm"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name      string
		got, want got
	}{
		{"writer", got{[]string{w.cfg.Scontrol, w.cfg.Sprio}, w.cfg.Runner, w.cfg.CmdTimeout}, got{[]string{"scontrol", "sprio"}, ExecRunner{}, 2 * time.Minute}},
		{"resize", got{[]string{rw.cfg.Scontrol, rw.cfg.Squeue, rw.cfg.Sacctmgr}, rw.cfg.Runner, rw.cfg.CmdTimeout}, got{[]string{"scontrol", "squeue", "sacctmgr"}, ExecRunner{}, 2 * time.Minute}},
		{"power", got{[]string{pw.cfg.Scontrol, pw.cfg.Squeue}, pw.cfg.Runner, pw.cfg.CmdTimeout}, got{[]string{"scontrol", "squeue"}, ExecRunner{}, time.Minute}},
		{"token", got{[]string{tok.cfg.Scontrol}, tok.cfg.Runner, 0}, got{[]string{"scontrol"}, ExecRunner{}, 0}},
		{"commands", got{nil, Commands{}.runner(), 0}, got{nil, ExecRunner{}, 0}},
	} {
		if d := cmp.Diff(tt.want, tt.got); d != "" {
			t.Errorf("%s defaults (-want +got):\n%s", tt.name, d)
		}
	}

	r := &fakeRunner{}
	scontrol, sprio, timeout := "/opt/slurm/bin/scontrol", "", 5*time.Second
	var runner Runner = r
	fillCommands(&runner, &timeout, time.Hour, program{&scontrol, "scontrol"}, program{&sprio, "sprio"})
	if runner != Runner(r) || timeout != 5*time.Second || scontrol != "/opt/slurm/bin/scontrol" || sprio != "sprio" {
		t.Errorf("set settings changed or unset ones not filled: runner %v, timeout %s, scontrol %q, sprio %q", runner, timeout, scontrol, sprio)
	}
}
