package main

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fairway-hpc/fairway/contrib/lab"
	"github.com/fairway-hpc/fairway/internal/serve"
	"github.com/fairway-hpc/fairway/policy"
)

// TestLab_TuneFromDB: the lab's own history, tuned on and ranked with, as
// an admin does it. Three users submit 24 short jobs of 1, 2 and 4 GPUs
// with limits of 1 to 5 minutes; `fairway ingest --from slurmdbd` stores
// them; `fairway tune --from-db` (a small budget) writes a policy file
// naming the cluster, the period and the jobs; `serve --dry-run --once
// --policy-file` ranks the lab's queue with it, and `explain` shows each
// feature's contribution to a pending job's key.
func TestLab_TuneFromDB(t *testing.T) {
	e := lab.Get(t)
	ctx := context.Background()
	dbURL, conn := throwawayDB(t, e)
	tag := fmt.Sprintf("tunedb%d", time.Now().UnixNano()%1e6)
	since := time.Now().Add(-time.Minute).UTC().Format(time.RFC3339)

	waitQueueEmpty(t, e)
	users, sizes := []string{"alice", "bob", "carol"}, []int{1, 2, 4}
	var hist []int64
	for i := range 24 {
		hist = append(hist, e.Submit(t, users[i%3], "-J", tag+"-hist", "-p", e.Partition,
			fmt.Sprintf("--gres=gpu:%d", sizes[(i/3)%3]), "-t", strconv.Itoa(1+i%5), "--wrap", "sleep 1"))
	}
	for _, id := range hist {
		if st := e.WaitState(t, id, 3*time.Minute, "COMPLETED"); st != "COMPLETED" {
			t.Fatalf("history job %d ended %s, want COMPLETED", id, st)
		}
	}
	t.Setenv("SLURM_CONF", e.SlurmConf)
	stored := 0
	waitFor(t, 2*time.Minute, "the history jobs in the database", func() bool {
		out, err := runApp(t, "ingest", "--progress", "never", "--database-url", dbURL, "--from", "slurmdbd", "--cluster", e.Cluster,
			"--since", since, "--slurm-url", e.RESTURL, "--slurm-user", e.RESTUser, "--slurm-token-file", e.TokenFile)
		if err != nil {
			t.Fatalf("ingest: %v\n%s", err, out)
		}
		if err := conn.QueryRow(ctx, `SELECT count(*) FROM job WHERE cluster = $1 AND name = $2 AND end_time IS NOT NULL`,
			e.Cluster, tag+"-hist").Scan(&stored); err != nil {
			t.Fatal(err)
		}
		return stored == len(hist)
	})

	path := filepath.Join(t.TempDir(), "lab.json")
	text, err := runApp(t, "tune", "--from-db", "--database-url", dbURL, "--cluster", e.Cluster, "--since", since, "--out", path,
		"--generations", "1", "--population", "4", "--parallel", "1", "--budget", "2m", "--progress", "never")
	t.Logf("tune --from-db:\n%s", text)
	if err != nil {
		t.Fatal(err)
	}
	f := readPolicyFile(t, path)
	// The lab is 2 nodes × 4 GPUs: a 4-GPU job sets the node's size.
	tr := f.TrainedOn
	if !strings.HasPrefix(tr.Cluster, e.Cluster+": ") || !strings.HasSuffix(tr.Cluster, " × 4 gpus") || tr.Jobs < len(hist) ||
		!strings.HasPrefix(tr.Source, "accounting database, jobs that ended since ") || tr.From.IsZero() || tr.To.Before(tr.From) {
		t.Errorf("trained_on %+v: want cluster %s on 4-GPU nodes, at least our %d jobs, the period read", tr, e.Cluster, len(hist))
	}

	// The file ranks the lab's queue.
	fillCluster(t, e, "alice", tag)
	pending := []int64{
		e.Submit(t, "bob", "-J", tag+"-pend", "-p", e.Partition, "--gres=gpu:1", "-t", "2", "--wrap", "sleep 1"),
		e.Submit(t, "carol", "-J", tag+"-pend", "-p", e.Partition, "--gres=gpu:2", "-t", "5", "--wrap", "sleep 1"),
	}
	args := append(labServeArgs(t, e, dbURL), "--no-ha", "--policy-file", path)
	out, err := runApp(t, append(append([]string{"serve"}, args...), "--dry-run", "--once")...)
	t.Logf("serve --dry-run --once --policy-file:\n%s", out)
	if err != nil {
		t.Fatalf("serve --once: %v", err)
	}
	if want := "ranked with policy file " + path + " (trained on cluster " + tr.Cluster + ", "; !strings.Contains(out, want) {
		t.Errorf("serve --once does not say %q", want)
	}
	for _, id := range pending {
		if !regexp.MustCompile(`(?m)^\s*\d+\s+` + strconv.FormatInt(id, 10) + `\s`).MatchString(out) {
			t.Errorf("serve --once does not rank pending job %d", id)
		}
	}

	id := strconv.FormatInt(pending[1], 10)
	text, err = runApp(t, append(append([]string{"explain"}, args...), id)...)
	t.Logf("explain %s:\n%s", id, text)
	if err != nil {
		t.Fatalf("explain: %v", err)
	}
	num := `[-+]?\d+(\.\d+)?(e[-+]\d+)?`
	res := []string{`pending under learned\n  from policy file ` + regexp.QuoteMeta(path),
		`\n +FEATURE +VALUE +EXPONENT +CONTRIBUTION TO LOG KEY\n`, `\n +log key +` + num + `\n`}
	for _, feat := range policy.LearnedFeatures {
		res = append(res, `\n +`+feat.Name+` +(-|`+num+`) +`+num+` +`+num+`\n`)
	}
	for _, re := range res {
		if !regexp.MustCompile(re).MatchString(text) {
			t.Errorf("explain does not match %s", re)
		}
	}
	js, err := runApp(t, append(append([]string{"explain"}, args...), "--json", id)...)
	if err != nil {
		t.Fatalf("explain --json: %v\n%s", err, js)
	}
	var ex serve.Explanation
	if err := json.Unmarshal([]byte(js), &ex); err != nil {
		t.Fatalf("decode %q: %v", js, err)
	}
	var got []string
	for _, c := range ex.Contributions {
		got = append(got, c.Feature)
	}
	var want []string
	for _, feat := range policy.LearnedFeatures {
		want = append(want, feat.Name)
	}
	if strings.Join(got, ",") != strings.Join(want, ",") || ex.PolicyFile == nil || ex.PolicyFile.Path != path {
		t.Errorf("explain --json: contributions of %v from %+v, want %v from %s", got, ex.PolicyFile, want, path)
	}

	// --effective searches the seventh exponent too, on the same history,
	// and its file ranks the same queue.
	effPath := filepath.Join(t.TempDir(), "lab-effective.json")
	text, err = runApp(t, "tune", "--from-db", "--database-url", dbURL, "--cluster", e.Cluster, "--since", since, "--out", effPath,
		"--effective", "--generations", "1", "--population", "4", "--parallel", "1", "--budget", "2m", "--progress", "never")
	t.Logf("tune --from-db --effective:\n%s", text)
	if err != nil {
		t.Fatal(err)
	}
	if g := readPolicyFile(t, effPath); g.Tuning == nil || !g.Tuning.SearchedEffective {
		t.Errorf("tune --effective wrote tuning %+v: want searched_effective", g.Tuning)
	}
	for _, a := range []string{"(anchor sjf-effective): run 1, limit 0, size 0, usage 0, counter 0, age 0.25, effective 1;",
		"(anchor fair-sjf-effective): run 1, limit 0, size 0, usage 2, counter 0, age 1, effective 1;"} {
		if !strings.Contains(text, a) {
			t.Errorf("tune --effective does not judge %q", a)
		}
	}
	args = append(labServeArgs(t, e, dbURL), "--no-ha", "--policy-file", effPath)
	out, err = runApp(t, append(append([]string{"serve"}, args...), "--dry-run", "--once")...)
	t.Logf("serve --dry-run --once --policy-file (effective):\n%s", out)
	if err != nil {
		t.Fatalf("serve --once: %v", err)
	}
	for _, id := range pending {
		if !regexp.MustCompile(`(?m)^\s*\d+\s+` + strconv.FormatInt(id, 10) + `\s`).MatchString(out) {
			t.Errorf("serve --once with the --effective file does not rank pending job %d", id)
		}
	}
}
