package main

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fairway-hpc/fairway/contrib/lab"
	"github.com/fairway-hpc/fairway/internal/serve"
	"github.com/fairway-hpc/fairway/policy"
)

// ourOrder is the order ranked lists ids in.
func ourOrder(ranked []policy.Score, ids ...int64) []int64 {
	var out []int64
	for _, sc := range ranked {
		if slices.Contains(ids, sc.JobID) {
			out = append(out, sc.JobID)
		}
	}
	return out
}

// TestLab_PolicyFile: a policy file of the learned family with parameters
// that are not its defaults (large jobs first, by the size exponent −1,
// slow aging, no run-time or fair-share term) runs in `serve --policy-file`
// on the real lab (dry run, one cycle, a throwaway database) and in
// explain and queue. One user's 4-GPU job with a 10-minute limit and two
// 1-GPU jobs with 2-minute limits: sjf-limit ranks the short jobs first (the
// same user, so the same usage), the file's policy the large one first.
// serve's ranking must be exactly the file's policy's on the cycle's
// snapshot, and explain must show each feature's contribution.
func TestLab_PolicyFile(t *testing.T) {
	e := lab.Get(t)
	ctx := context.Background()
	dbURL, _ := throwawayDB(t, e)
	params := policy.LearnedParams{Size: -1, Age: 0.5}
	path := writeLearnedFile(t, t.TempDir(), params)
	tag := fmt.Sprintf("pfile%d", time.Now().UnixNano()%1e6)
	fillCluster(t, e, "alice", tag)
	large := e.Submit(t, "bob", "-J", tag+"-large", "-p", e.Partition, "--gres=gpu:4", "-t", "10", "--wrap", "sleep 1")
	small := []int64{
		e.Submit(t, "bob", "-J", tag+"-small", "-p", e.Partition, "--gres=gpu:1", "-t", "2", "--wrap", "sleep 1"),
		e.Submit(t, "bob", "-J", tag+"-small", "-p", e.Partition, "--gres=gpu:1", "-t", "2", "--wrap", "sleep 1"),
	}
	ours := append([]int64{large}, small...)

	// In process: the ranking is the file's policy's on the same snapshot,
	// and opposite to sjf-limit's for these jobs.
	cfg := serveLabConfig(e, policy.Default, true)
	cfg.HA = false
	cfg.Runner.PolicyFile = path
	s, err := buildLabServe(ctx, cfg, dbURL, quietLogger())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	res, err := s.Runner.RunCycle(ctx)
	if err != nil {
		t.Fatal(err)
	}
	assertRanksAsFile(t, path, res, "serve's ranking is not the policy file's on the same snapshot")
	// The contrast is sjf-limit, whose order is the time limits': fair-sjf
	// ranks by predicted run times, and on a lab whose history holds
	// jobs that ran a second all three are predicted alike (then the
	// large job, submitted first, is first under fair-sjf too).
	byLimit, err := policy.New("sjf-limit", nil)
	if err != nil {
		t.Fatal(err)
	}
	byDefault, err := byLimit.Rank(res.Snapshot)
	if err != nil {
		t.Fatal(err)
	}
	got, def := ourOrder(res.Ranked, ours...), ourOrder(byDefault, ours...)
	t.Logf("policy file ranks %v, sjf-limit %v (large job %d)", got, def, large)
	if len(got) != 3 || got[0] != large || def[2] != large {
		t.Errorf("our jobs: the file ranks %v, sjf-limit %v; want the large job %d first under the file and last under sjf-limit", got, def, large)
	}
	if res.PolicyFile == nil || res.PolicyFile.Path != path || res.Policy.Name() != "learned" {
		t.Errorf("the cycle ranked with %v from %+v, want learned from %s", res.Policy, res.PolicyFile, path)
	}
	s.Close()

	// The commands, as an admin runs them.
	args := append(labServeArgs(t, e, dbURL), "--no-ha", "--policy-file", path)
	out, err := runApp(t, append(append([]string{"serve"}, args...), "--dry-run", "--once")...)
	if err != nil {
		t.Fatalf("serve --once: %v\n%s", err, out)
	}
	t.Logf("serve --dry-run --once --policy-file:\n%s", out)
	if !strings.Contains(out, "ranked with policy file "+path+" (trained on cluster fairwaylab, 500 jobs, from accounting database)\n") {
		t.Errorf("serve --once does not say which policy file it ranked with:\n%s", out)
	}
	var printed []int64
	for _, line := range strings.Split(out, "\n") {
		if f := strings.Fields(line); len(f) > 1 {
			if id, err := strconv.ParseInt(f[1], 10, 64); err == nil && slices.Contains(ours, id) {
				printed = append(printed, id)
			}
		}
	}
	if len(printed) != 3 || printed[0] != large {
		t.Errorf("serve --once lists our jobs as %v, want the large job %d first", printed, large)
	}

	text, err := runApp(t, append(append([]string{"explain"}, args...), strconv.FormatInt(small[1], 10))...)
	if err != nil {
		t.Fatalf("explain: %v\n%s", err, text)
	}
	t.Logf("explain %d:\n%s", small[1], text)
	for _, re := range []string{
		`pending under learned\n  from policy file ` + regexp.QuoteMeta(path),
		`\n +FEATURE +VALUE +EXPONENT +CONTRIBUTION TO LOG KEY\n`,
		`\n +run +\d+(\.\d+)? +0 +0\n`, `\n +limit +120 +0 +0\n`, `\n +size +1 +-1 +0\n`, `\n +usage +- +0 +0\n`, `\n +counter +- +0 +0\n`,
		`\n +age +1\.\d+ +-0\.5 +-\d`, `\n +log key +-\d`,
		`what moves it: .*\n.*a larger request \(this policy favours large jobs\)`,
	} {
		if !regexp.MustCompile(re).MatchString(text) {
			t.Errorf("explain does not match %s:\n%s", re, text)
		}
	}
	js, err := runApp(t, append(append([]string{"explain"}, args...), "--json", strconv.FormatInt(large, 10))...)
	if err != nil {
		t.Fatalf("explain --json: %v\n%s", err, js)
	}
	var ex serve.Explanation
	if err := json.Unmarshal([]byte(js), &ex); err != nil {
		t.Fatalf("decode %q: %v", js, err)
	}
	if len(ex.Contributions) != len(policy.LearnedFeatures) || ex.PolicyFile == nil || ex.PolicyFile.Path != path || ex.Rank != 1 {
		t.Errorf("explain --json of the large job: rank %d, %d contributions, policy file %+v; want rank 1, %d, %s",
			ex.Rank, len(ex.Contributions), ex.PolicyFile, len(policy.LearnedFeatures), path)
	}

	q, err := runApp(t, append(append([]string{"queue"}, args...), "--user", "bob")...)
	if err != nil {
		t.Fatalf("queue: %v\n%s", err, q)
	}
	if !strings.Contains(q, "under learned (policy file "+path+")") {
		t.Errorf("queue does not name the policy file:\n%s", q)
	}
}
