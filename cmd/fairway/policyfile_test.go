package main

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/fairway-hpc/fairway/internal/serve"
	"github.com/fairway-hpc/fairway/policy"
	"github.com/google/go-cmp/cmp"
)

// writeLearnedFile writes a policy file of the learned family with p, as
// `fairway tune` would, and returns its path.
func writeLearnedFile(t *testing.T, dir string, p policy.LearnedParams) string {
	t.Helper()
	f := policy.NewLearnedFile(p)
	f.TrainedOn = policy.TrainedOn{Cluster: "fairwaylab", Jobs: 500, Source: "accounting database"}
	f.Objective = "bsld"
	b, err := f.Encode()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "policy.json")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestSettings_PolicyFile: serve, explain and queue take --policy-file
// (or FAIRWAY_POLICY_FILE), refuse it beside an explicit --policy
// (FAIRWAY_POLICY included), and refuse a bad file at start, naming it
// and the problem.
func TestSettings_PolicyFile(t *testing.T) {
	dir := t.TempDir()
	good := writeLearnedFile(t, dir, policy.LearnedParams{Run: 1, Size: -0.5, Age: 1})
	b, err := os.ReadFile(good)
	if err != nil {
		t.Fatal(err)
	}
	bad := func(name, old, new string) string {
		p := filepath.Join(dir, name)
		if !bytes.Contains(b, []byte(old)) {
			t.Fatalf("%q not in the policy file", old)
		}
		if err := os.WriteFile(p, bytes.Replace(b, []byte(old), []byte(new), 1), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	v3 := bad("v3.json", `"format_version": 2`, `"format_version": 3`)
	noAge := bad("noage.json", `"counter",
    "age"`, `"counter"`)
	inf := bad("inf.json", `"size": -0.5`, `"size": 1e500`)
	tests := []struct {
		name       string
		args       []string
		env        map[string]string
		wantErr    string // "" for none
		wantPolicy string
	}{
		{"the file", []string{"--policy-file", good}, nil, "", "learned"},
		{"the file from the environment", nil, map[string]string{"FAIRWAY_POLICY_FILE": good}, "", "learned"},
		{"no file: --policy's default", nil, nil, "", policy.Default},
		{"both on the command line", []string{"--policy", "fifo", "--policy-file", good}, nil,
			"--policy fifo and --policy-file " + good + " are both set", ""},
		{"--policy from the environment", []string{"--policy-file", good}, map[string]string{"FAIRWAY_POLICY": "fair-sjf"},
			"--policy fair-sjf and --policy-file " + good + " are both set", ""},
		{"a later format version", []string{"--policy-file", v3}, nil,
			"--policy-file: policy file " + v3 + ": bad policy file: format_version 3: this Fairway reads versions 1 to 2", ""},
		{"a feature missing", []string{"--policy-file", noAge}, nil, "policy file " + noAge + `: bad policy file: feature "age" missing`, ""},
		{"a non-finite parameter", []string{"--policy-file", inf}, nil, "policy file " + inf + `: bad policy file: parameter "size" = 1e500: want a finite number`, ""},
		{"missing", []string{"--policy-file", filepath.Join(dir, "none.json")}, nil,
			"--policy-file: policy file " + filepath.Join(dir, "none.json") + ": no such file or directory", ""},
	}
	for _, cmdName := range []string{"serve", "explain", "queue"} {
		for _, tt := range tests {
			t.Run(cmdName+"/"+tt.name, func(t *testing.T) {
				for k, v := range tt.env {
					t.Setenv(k, v)
				}
				args := append([]string{cmdName, "--cluster", "c", "--slurm-url", "http://x", "--database-url", "postgres://x/y", "--no-ha"}, tt.args...)
				cfg, err := settingsFromArgs(t, args)
				switch {
				case tt.wantErr == "" && err != nil:
					t.Fatalf("%v", err)
				case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
					t.Fatalf("err = %v, want one saying %q", err, tt.wantErr)
				case tt.wantErr == "" && cfg.Runner.Policy != tt.wantPolicy:
					t.Errorf("policy %q, want %q", cfg.Runner.Policy, tt.wantPolicy)
				}
			})
		}
	}
}

// TestPolicyFile_OnceExplainQueue: with --policy-file, serve --once ranks
// as the file's policy ranks the cycle's snapshot and says which file it
// ranked with; explain shows each feature's contribution and the file's
// levers (a larger request moves a job forward: size exponent −1); queue
// names the file.
func TestPolicyFile_OnceExplainQueue(t *testing.T) {
	path := writeLearnedFile(t, t.TempDir(), policy.LearnedParams{Run: 1, Size: -1, Age: 0.5})
	d, _, _, _ := rewriteDeps()
	cfg, res := policyFileOnce(t, path, d)
	assertRanksAsFile(t, path, res, "serve's ranking is not the file's policy's")
	if len(res.Ranked) == 0 || res.Ranked[0].JobID != 5 {
		t.Errorf("ranked %v: want carol's 2-GPU job 5 first (the file favours large jobs)", res.Ranked)
	}
	var out bytes.Buffer
	if err := printOnce(&out, res, cfg); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"policy learned, 3 pending jobs ranked", "ranked with policy file " + path + " (trained on cluster fairwaylab, 500 jobs, from accounting database)\n"} {
		if !strings.Contains(out.String(), s) {
			t.Errorf("serve --once lacks %q:\n%s", s, out.String())
		}
	}

	ex, text := explainText(t, cfg, d, 2)
	for _, re := range []string{`pending under learned\n  from policy file ` + regexp.QuoteMeta(path),
		`\n +FEATURE +VALUE +EXPONENT +CONTRIBUTION TO LOG KEY\n +run +3600 +1 +\+8\.189\n +limit +3600 +0 +0\n +size +1 +-1 +0\n` +
			` +usage +- +0 +0\n +counter +- +0 +0\n +age +1\.0\d+ +-0\.5 +-0\.0\d+\n +effective +- +0 +0\n +log key +\+8\.1\d+\n`,
		`what moves it: .*\n.*a larger request \(this policy favours large jobs\)`} {
		if !regexp.MustCompile(re).MatchString(text) {
			t.Errorf("explain does not match %s:\n%s", re, text)
		}
	}
	if len(ex.Contributions) != len(policy.LearnedFeatures) {
		t.Errorf("explain --json: %d contributions, want one per feature (%d)", len(ex.Contributions), len(policy.LearnedFeatures))
	}

	q, err := planCycle(context.Background(), cfg, d, quietLogger())
	if err != nil {
		t.Fatal(err)
	}
	if q.Forecast == nil || q.Forecast.Policy != "learned (policy file "+path+")" {
		t.Errorf("queue's forecast: %+v, want it under learned (policy file %s)", q.Forecast, path)
	}
}

// TestPolicyFile_Effective: a policy file with an effective exponent ranks
// in serve with the effective run times of the jobs whose user ran the same
// job before (from the history serve warms up on), and explain shows the
// feature's factor and contribution.
func TestPolicyFile_Effective(t *testing.T) {
	path := writeLearnedFile(t, t.TempDir(), policy.LearnedParams{Run: 1, Age: 0.5, Effective: 1})
	d, _, _, store := rewriteDeps()
	// alice's job "light" (1 GPU, 1 CPU, an hour) ran twice for 50 minutes
	// and once failed after 10 s; her pending job 1 is that job.
	for i, run := range []time.Duration{3000 * time.Second, 10 * time.Second, 3000 * time.Second} {
		end := time.Now().Add(-time.Duration(3-i) * time.Hour)
		store.history = append(store.history, policy.Job{Cluster: "fairwaylab", ID: int64(200 + i), ArrayTask: -1, User: "alice",
			Account: "physics", Name: "light", Partition: "gpu", GPUs: 1, CPUs: 1, Nodes: 1, TimeLimit: time.Hour,
			Submit: end.Add(-run), Start: end.Add(-run), End: end, State: policy.StateCompleted})
	}
	cfg, res := policyFileOnce(t, path, d)
	pred, eff := res.Snapshot.Predicted[1], res.Snapshot.Effective[1]
	// The prediction (the identical job's last run, 3000 s) and the three
	// runs: √(mean / mean of 1/max(run, 10 s)).
	if want := policy.EffectiveRun([]float64{pred.Seconds(), 3000, 10, 3000}); pred != 3000*time.Second || eff != want {
		t.Fatalf("job 1: predicted %v, effective %v; want 50m0s and %v", pred, eff, want)
	}
	assertRanksAsFile(t, path, res, "serve's ranking is not the file's policy's")
	_, text := explainText(t, cfg, d, 1)
	ratio := eff.Seconds() / pred.Seconds()
	re := fmt.Sprintf(`\n +effective +%s +1 +%s\n`, regexp.QuoteMeta(fmt.Sprintf("%.6g", ratio)), regexp.QuoteMeta(fmt.Sprintf("%+.4g", math.Log(ratio))))
	if !regexp.MustCompile(re).MatchString(text) {
		t.Errorf("explain does not match %s:\n%s", re, text)
	}
}

// explainText is explain's answer for job id under cfg and d, and its text.
func explainText(t *testing.T, cfg serveConfig, d serveDeps, id int64) (*serve.Explanation, string) {
	t.Helper()
	ex, err := explainJob(context.Background(), cfg, d, id, quietLogger())
	if err != nil {
		t.Fatal(err)
	}
	var text bytes.Buffer
	if err := writeExplanation(&text, ex); err != nil {
		t.Fatal(err)
	}
	return ex, text.String()
}

// runCycle builds serve's runner from cfg and d, as serve does, and runs
// one cycle.
func runCycle(t *testing.T, cfg serveConfig, d serveDeps) *serve.CycleResult {
	t.Helper()
	r, err := newServeRunner(context.Background(), cfg, d, serve.Parts{Sink: newSink(cfg, d)}, quietLogger())
	if err != nil {
		t.Fatal(err)
	}
	res, err := r.RunCycle(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// policyFileOnce runs one `serve --dry-run --once --policy-file path`
// cycle on d and returns its settings and result.
func policyFileOnce(t *testing.T, path string, d serveDeps) (serveConfig, *serve.CycleResult) {
	t.Helper()
	cfg, err := settingsFromArgs(t, []string{"serve", "--cluster", "c", "--slurm-url", "http://x", "--database-url", "postgres://x/y",
		"--no-ha", "--dry-run", "--once", "--policy-file", path})
	if err != nil {
		t.Fatal(err)
	}
	return cfg, runCycle(t, cfg, d)
}

// assertRanksAsFile checks that res ranked its snapshot as the policy in
// the file at path ranks it; what names the failure.
func assertRanksAsFile(t *testing.T, path string, res *serve.CycleResult, what string) {
	t.Helper()
	pf, err := serve.LoadPolicyFile(path)
	if err != nil {
		t.Fatal(err)
	}
	want, err := pf.Policy.Rank(res.Snapshot)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, res.Ranked); diff != "" {
		t.Errorf("%s (-file +serve):\n%s", what, diff)
	}
}
