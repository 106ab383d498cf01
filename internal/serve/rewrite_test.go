package serve

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fairway-hpc/fairway/policy"
	"github.com/fairway-hpc/fairway/policy/rewrite"
	"github.com/fairway-hpc/fairway/slurmctl"
	"github.com/google/go-cmp/cmp"
)

// luaCase is one job_desc handed to job_submit.lua's slurm_job_submit:
// built from the fields below, or, when desc is set, that Lua table
// constructor as it is (captured from a release, testdata/job_desc).
type luaCase struct {
	name                          string
	user, jobName, partition      string
	tresPerNode, tresPerJob, comm string
	minNodes                      int // 0: unset (NO_VAL)
	desc                          string
	wantNode, wantJob             string
}

func luaString(s string) string {
	if s == "" {
		return "nil"
	}
	return fmt.Sprintf("%q", s)
}

// luaInterpreters are the Lua releases Slurm links job_submit/lua against
// (configure takes lua 5.1 to 5.4; Debian's and a default source build of
// 22.05 and 26.05 take 5.1, EL9's packages 5.4): the script must behave
// the same under each. Debian ships all three as lua5.N; the lab installs
// them. Under CI=true a missing one fails the test.
var luaInterpreters = []string{"lua5.1", "lua5.3", "lua5.4"}

// luaRun is what one run of the script printed: per case, the return
// code and tres_per_node, tres_per_job and tres_per_task afterwards
// (rc|node|job|task), the messages for the user, and what it logged.
type luaRun struct {
	lines              []string
	user, info, errLog string
}

// runJobSubmit runs contrib/slurm/job_submit.lua with a stub of Slurm's
// `slurm` table and the table at tablePath, under every Lua in
// luaInterpreters, checks that they agree, and returns lua5.1's rc|node|job
// lines and its error log.
func runJobSubmit(t *testing.T, tablePath string, cases []luaCase) (got []string, errLog string) {
	t.Helper()
	r := runJobSubmitEnv(t, []string{"FAIRWAY_REWRITE_TABLE=" + tablePath}, cases)
	for _, l := range r.lines {
		rc, rest, _ := strings.Cut(l, "|")
		node, rest, _ := strings.Cut(rest, "|")
		job, _, _ := strings.Cut(rest, "|")
		got = append(got, rc+"|"+node+"|"+job)
	}
	return got, r.errLog
}

// runJobSubmitEnv is runJobSubmit with the script's environment given
// (FAIRWAY_REWRITE_TABLE, SLURM_CONF) and all it printed returned.
func runJobSubmitEnv(t *testing.T, env []string, cases []luaCase) luaRun {
	t.Helper()
	var runs []luaRun
	for _, name := range luaInterpreters {
		lua, err := exec.LookPath(name)
		if err != nil {
			if os.Getenv("CI") == "true" {
				t.Fatalf("%s not installed (apt-get install %s): job_submit.lua cannot be tested under it", name, name)
			}
			t.Logf("%s not installed (apt-get install %s): job_submit.lua not tested under it", name, name)
			continue
		}
		r := runLua(t, lua, env, cases)
		if len(runs) > 0 {
			// Lua's own error texts differ between releases: the errors
			// must only be as many.
			a, b := runs[0], r
			a.errLog, b.errLog = fmt.Sprint(strings.Count(a.errLog, "\n"), " errors"), fmt.Sprint(strings.Count(b.errLog, "\n"), " errors")
			if d := cmp.Diff(a, b, cmp.AllowUnexported(luaRun{})); d != "" {
				t.Fatalf("job_submit.lua under %s differs from %s (-%s +%s):\n%s", name, luaInterpreters[0], luaInterpreters[0], name, d)
			}
		}
		runs = append(runs, r)
	}
	if len(runs) == 0 {
		t.Skip("no Lua installed (apt-get install lua5.1): job_submit.lua not tested")
	}
	return runs[0]
}

func runLua(t *testing.T, lua string, env []string, cases []luaCase) luaRun {
	t.Helper()
	script, err := filepath.Abs(filepath.Join("..", "..", "contrib", "slurm", "job_submit.lua"))
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	b.WriteString(`local function out(f, prefix) return function(fmt, ...) f:write(prefix .. string.format(fmt, ...) .. "\n") end end
slurm = { SUCCESS = 0, ERROR = -1, log_debug = function(...) end,
	log_info = out(io.stderr, "INFO "), log_error = out(io.stderr, "ERROR "), log_user = out(io.stderr, "USER ") }
-- FAIRWAY_TEST_STATE_DIR stands in for /var/lib/fairway, which a test must not touch.
local src = assert(io.open(` + fmt.Sprintf("%q", script) + `)):read("*a")
if os.getenv("FAIRWAY_TEST_STATE_DIR") then
	src = src:gsub("/var/lib/fairway/", os.getenv("FAIRWAY_TEST_STATE_DIR") .. "/")
end
assert((loadstring or load)(src, "@job_submit.lua"))()
local parts = { gpu = { name = "gpu", flag_default = 1 }, cpu = { name = "cpu", flag_default = 0 } }
local cases = {
`)
	for _, c := range cases {
		if c.desc != "" {
			b.WriteString("  " + c.desc + ",\n")
			continue
		}
		nodes := "4294967294"
		if c.minNodes > 0 {
			nodes = fmt.Sprint(c.minNodes)
		}
		comment := luaString(c.comm)
		if c.comm == "<table>" { // a field of the wrong type: the script must survive it
			comment = "{}"
		}
		fmt.Fprintf(&b, "  { user_name = %s, name = %s, partition = %s, tres_per_node = %s, tres_per_job = %s, comment = %s, min_nodes = %s, max_nodes = 4294967294 },\n",
			luaString(c.user), luaString(c.jobName), luaString(c.partition), luaString(c.tresPerNode), luaString(c.tresPerJob), comment, nodes)
	}
	b.WriteString(`}
for i, job in ipairs(cases) do
  local rc = slurm_job_submit(job, parts, 1000)
  print(rc .. "|" .. tostring(job.tres_per_node) .. "|" .. tostring(job.tres_per_job) .. "|" .. tostring(job.tres_per_task))
end
`)
	driver := filepath.Join(t.TempDir(), "driver.lua")
	if err := os.WriteFile(driver, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(lua, driver)
	cmd.Env = append(os.Environ(), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s: %v\n%s", lua, err, stderr.String())
	}
	var r luaRun
	r.lines = strings.Split(strings.TrimSpace(stdout.String()), "\n")
	for _, l := range strings.Split(stderr.String(), "\n") {
		switch {
		case strings.HasPrefix(l, "USER "):
			r.user += strings.TrimPrefix(l, "USER ") + "\n"
		case strings.HasPrefix(l, "INFO "):
			r.info += strings.TrimPrefix(l, "INFO ") + "\n"
		case l != "":
			r.errLog += l + "\n"
		}
	}
	return r
}

// TestJobSubmitLua_Table writes the table with serve's writer and runs the
// real job_submit.lua on it: jobs that match are turned into shards, all
// others are left exactly as submitted, and every job is accepted.
func TestJobSubmitLua_Table(t *testing.T) {
	dir := t.TempDir()
	table := filepath.Join(dir, "fairway-rewrite.table")
	rules := []rewrite.ShareRule{
		{User: "alice", Name: "train", Shards: 2, Reason: "test"},
		{User: "alice", Name: "my sweep 3", Shards: 1, Reason: "names may hold spaces"},
	}
	if err := writeTable(table, time.Now(), 15*time.Minute, []string{"gpu"}, rules); err != nil {
		t.Fatal(err)
	}
	cases := []luaCase{
		{name: "gres", user: "alice", jobName: "train", partition: "gpu", tresPerNode: "gres:gpu:1", wantNode: "gres:shard:2", wantJob: "nil"},
		{name: "--gpus, default partition", user: "alice", jobName: "train", tresPerJob: "gres:gpu:1", wantNode: "gres:shard:2", wantJob: ""},
		{name: "typed", user: "alice", jobName: "train", partition: "gpu", tresPerNode: "gres:gpu:h100:1", wantNode: "gres:shard:h100:2", wantJob: "nil"},
		{name: "name with spaces", user: "alice", jobName: "my sweep 3", partition: "gpu", tresPerNode: "gres:gpu:1", wantNode: "gres:shard:1", wantJob: "nil"},
		{name: "two GPUs", user: "alice", jobName: "train", partition: "gpu", tresPerNode: "gres:gpu:2", wantNode: "gres:gpu:2", wantJob: "nil"},
		{name: "GPU and shard", user: "alice", jobName: "train", partition: "gpu", tresPerNode: "gres:gpu:1,gres:shard:1", wantNode: "gres:gpu:1,gres:shard:1", wantJob: "nil"},
		{name: "opted out", user: "alice", jobName: "train", partition: "gpu", tresPerNode: "gres:gpu:1", comm: "x fairway:no-rewrite", wantNode: "gres:gpu:1", wantJob: "nil"},
		{name: "no history", user: "bob", jobName: "train", partition: "gpu", tresPerNode: "gres:gpu:1", wantNode: "gres:gpu:1", wantJob: "nil"},
		{name: "partition not enabled", user: "alice", jobName: "train", partition: "cpu", tresPerNode: "gres:gpu:1", wantNode: "gres:gpu:1", wantJob: "nil"},
		{name: "one of two partitions not enabled", user: "alice", jobName: "train", partition: "gpu,cpu", tresPerNode: "gres:gpu:1", wantNode: "gres:gpu:1", wantJob: "nil"},
		{name: "two nodes", user: "alice", jobName: "train", partition: "gpu", tresPerNode: "gres:gpu:1", minNodes: 2, wantNode: "gres:gpu:1", wantJob: "nil"},
		{name: "no GPU", user: "alice", jobName: "train", partition: "gpu", wantNode: "nil", wantJob: "nil"},
		{name: "a field of the wrong type", user: "alice", jobName: "train", partition: "gpu", tresPerNode: "gres:gpu:1", comm: "<table>", wantNode: "gres:gpu:1", wantJob: "nil"},
	}
	got, errLog := runJobSubmit(t, table, cases)
	if len(got) != len(cases) {
		t.Fatalf("lua printed %d lines for %d cases: %q", len(got), len(cases), got)
	}
	for i, c := range cases {
		if want := "0|" + c.wantNode + "|" + c.wantJob; got[i] != want {
			t.Errorf("%s: got %q, want %q", c.name, got[i], want)
		}
	}
	if !strings.Contains(errLog, "left as submitted") {
		t.Errorf("the wrong-typed field was not logged as an error: %q", errLog)
	}

	// Without a usable table every job is left alone and accepted.
	match := []luaCase{{name: "match", user: "alice", jobName: "train", partition: "gpu", tresPerNode: "gres:gpu:1", wantNode: "gres:gpu:1", wantJob: "nil"}}
	stale := filepath.Join(dir, "stale.table")
	if err := writeTable(stale, time.Now().Add(-time.Hour), 15*time.Minute, []string{"gpu"}, rules); err != nil {
		t.Fatal(err)
	}
	corrupt := filepath.Join(dir, "corrupt.table")
	good := rewrite.RenderTable(time.Now(), 15*time.Minute, []string{"gpu"}, rules)
	if err := os.WriteFile(corrupt, append(good, []byte("shard\talice\tmany\ttrain\n")...), 0o644); err != nil {
		t.Fatal(err)
	}
	truncated := filepath.Join(dir, "truncated.table")
	if err := os.WriteFile(truncated, good[:len(good)/3], 0o644); err != nil {
		t.Fatal(err)
	}
	// A valid table padded with comments past job_submit.lua's 4 MiB cap.
	oversized := filepath.Join(dir, "oversized.table")
	pad := bytes.Repeat([]byte("# padding padding padding padding padding padding padding padding\n"), 4<<20/64)
	if err := os.WriteFile(oversized, append(slices.Clone(good), pad...), 0o644); err != nil {
		t.Fatal(err)
	}
	for name, path := range map[string]string{"missing": filepath.Join(dir, "none"), "stale": stale, "corrupt": corrupt, "truncated": truncated, "oversized": oversized} {
		got, _ := runJobSubmit(t, path, match)
		if len(got) != 1 || got[0] != "0|gres:gpu:1|nil" {
			t.Errorf("%s table: got %q, want the job accepted as submitted", name, got)
		}
	}
}

// writeTable renders a rewrite table and writes it as serve's Live sink
// does.
func writeTable(path string, now time.Time, maxAge time.Duration, partitions []string, rules []rewrite.ShareRule) error {
	return (&Live{}).WriteTable(path, rewrite.RenderTable(now, maxAge, partitions, rules))
}

// TestWriteRewriteTable_Atomic: the table is replaced by rename, leaves no
// temporary file behind, and is readable by its owner and group only
// (slurmctld runs as SlurmUser like serve; the table names users and their
// jobs).
func TestWriteRewriteTable_Atomic(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "t")
	for i := range 3 {
		if err := writeTable(path, time.Unix(int64(1000+i), 0), time.Minute, []string{"gpu"}, nil); err != nil {
			t.Fatal(err)
		}
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 1 {
		t.Errorf("directory holds %d entries, want only the table", len(ents))
	}
	st, err := os.Stat(path)
	if err != nil || st.Mode().Perm() != 0o640 {
		t.Fatalf("stat: %v %v", st, err)
	}
	b, _ := os.ReadFile(path)
	if !strings.Contains(string(b), "generated\t1002\nmax_age\t60\npartition\tgpu\n") {
		t.Errorf("table:\n%s", b)
	}
	if err := writeTable(filepath.Join(dir, "no", "such", "dir"), time.Now(), time.Minute, nil, nil); err == nil {
		t.Error("writing into a missing directory succeeded")
	}
}

type fakeUsage struct{ samples []rewrite.UsageSample }

func (f *fakeUsage) UsageSamples(context.Context, string, time.Time) ([]rewrite.UsageSample, error) {
	return f.samples, nil
}

type fakeResizer struct {
	comments map[int64]string
	resized  [][]slurmctl.Resize
	limits   string // the lab capture Limits answers: "nolimits" (also for ""), "limits"
	limitErr error  // Limits fails with it
}

func (f *fakeResizer) Comments(context.Context) (map[int64]string, error) { return f.comments, nil }

// Limits answers with the lab's real sacctmgr and scontrol output
// (slurmctl/testdata/sacctmgr-22.05.8).
func (f *fakeResizer) Limits(context.Context) (*slurmctl.Limits, error) {
	if f.limitErr != nil {
		return nil, f.limitErr
	}
	dir := f.limits
	if dir == "" {
		dir = "nolimits"
	}
	var b [3][]byte
	for i, name := range []string{"associations.txt", "qos.txt", "partitions.txt"} {
		var err error
		if b[i], err = os.ReadFile(filepath.Join("..", "..", "slurmctl", "testdata", "sacctmgr-22.05.8", dir, name)); err != nil {
			return nil, err
		}
	}
	return slurmctl.NewLimits(b[0], b[1], b[2])
}

func (f *fakeResizer) Resize(_ context.Context, jobs []slurmctl.Job, want []slurmctl.Resize) (slurmctl.ResizeReport, error) {
	f.resized = append(f.resized, want)
	var rep slurmctl.ResizeReport
	for _, w := range want {
		// As ResizeWriter: From holds the request read, for the fields that change.
		c := slurmctl.ResizeChange{Resize: w, From: slurmctl.Resize{JobID: w.JobID}}
		for _, j := range jobs {
			if j.ID != w.JobID {
				continue
			}
			if w.CPUs > 0 {
				c.From.CPUs = j.CPUs
			}
			if w.MemoryMB > 0 {
				c.From.MemoryMB = j.MemoryMB
			}
			if w.GPUs > 0 {
				c.From.GPUs = j.GPUs
			}
		}
		rep.Planned = append(rep.Planned, c)
		rep.Applied = append(rep.Applied, c)
	}
	return rep, nil
}

// rewriteCluster is two lab-like nodes (8 CPUs, 16000 MB, 4 GPUs, 16
// shards each) in partition gpu, one GPU busy, and pending jobs.
func rewriteCluster(jobs ...slurmctl.Job) *slurmctl.Cluster {
	node := func(name string, alloc int) slurmctl.Node {
		return slurmctl.Node{Name: name, State: []string{"MIXED"}, Partitions: []string{"gpu"}, CPUs: 8, MemoryMB: 16000,
			GPUs: 4, Shards: 16, AllocGPUs: alloc}
	}
	return &slurmctl.Cluster{Nodes: []slurmctl.Node{node("gpu1", 1), node("gpu2", 0)}, Jobs: jobs}
}

// pendingJob is a pending job of a lab user in the lab's cluster, in the
// user's account (alice, bob: physics; carol: chem) and QOS normal.
func pendingJob(id int64, user, name, part string, gpus, cpus int) slurmctl.Job {
	account := map[string]string{"alice": "physics", "bob": "physics", "carol": "chem"}[user]
	return slurmctl.Job{Job: policy.Job{Cluster: "fairwaylab", ID: id, User: user, Account: account, QOS: "normal", Name: name,
		Partition: part, GPUs: gpus, CPUs: cpus, MemoryMB: 1000, Nodes: 1, State: policy.StatePending}, TaskCount: 1}
}

func TestRewriter_Cycle(t *testing.T) {
	var samples []rewrite.UsageSample
	for i := range 4 {
		samples = append(samples, rewrite.UsageSample{JobID: int64(100 + i), User: "alice", Name: "light", End: time.Now().Add(-time.Hour),
			State: policy.StateCompleted, GPUs: 1, CPUs: 2, Run: time.Hour, GPUUtilPct: 12, GPUMemPeakMB: 4000, GPUMemTotalMB: 81920, CPUsUsed: -1},
			rewrite.UsageSample{JobID: int64(200 + i), User: "bob", Name: "heavy", End: time.Now().Add(-time.Hour),
				State: policy.StateCompleted, GPUs: 1, CPUs: 2, Run: time.Hour, GPUUtilPct: 95, GPUMemPeakMB: 70000, GPUMemTotalMB: 81920, CPUsUsed: 1.5})
	}
	cl := rewriteCluster(
		pendingJob(1, "alice", "light", "gpu", 1, 1),                                                          // no CPU history: raised to 2 CPUs per GPU
		pendingJob(2, "bob", "heavy", "gpu", 1, 8),                                                            // history: 1.5 × 1.25 → 2 CPUs
		pendingJob(3, "carol", "opt", "gpu", 1, 1),                                                            // opted out
		pendingJob(4, "carol", "cpu", "cpu", 1, 1),                                                            // partition not enabled
		pendingJob(5, "carol", "elastic", "gpu", 2, 2),                                                        // elastic 1-8: 7 GPUs free, at most 4 on a node
		func() slurmctl.Job { j := pendingJob(6, "carol", "vip", "gpu", 1, 1); j.QOS = "urgent"; return j }(), // exempt QOS
	)
	comments := map[int64]string{3: "fairway:no-rewrite", 5: "fairway:elastic=1-8"}
	dir := t.TempDir()
	cfg := RewriteConfig{Partitions: []string{"gpu"}, Rules: map[string]bool{"share": true, "cpus": true, "elastic": true},
		Table: filepath.Join(dir, "fairway-rewrite.table"), TableMaxAge: 15 * time.Minute, HistoryDays: 30, RefreshEvery: 10,
		ShareMaxUtil: 50, MinHistory: 3, ShardsPerGPU: 4, Cluster: "c", ExemptQOS: []string{"urgent"}}

	// run is one rewriting cycle; plan makes its sink a Planner (a dry
	// run, explain, or a follower).
	run := func(t *testing.T, cfg RewriteConfig, plan bool) (*RewriteReport, *fakeResizer, *Planner) {
		write := &fakeResizer{comments: comments}
		rw, err := NewRewriter(cfg, quietLogger(), &fakeUsage{samples}, write)
		if err != nil {
			t.Fatal(err)
		}
		var sink Sink = &Live{Values: &fakeWriter{}, Resizes: write, Recorder: &fakeStore{}}
		var planner *Planner
		if plan {
			planner = NewPlanner(nil, nil)
			sink = planner
		}
		return rw.Cycle(context.Background(), 1, time.Now(), cl, nil, nil, sink), write, planner
	}

	rep, write, _ := run(t, cfg, false)
	if !rep.TableWritten || len(rep.Rules) != 1 || rep.Rules[0].User != "alice" || rep.Rules[0].Shards != 1 {
		t.Errorf("share rules %+v, written %v", rep.Rules, rep.TableWritten)
	}
	// Why bob's heavy got no rule is reported too (serve listed only the
	// rules it made).
	if len(rep.NoShare) != 1 || rep.NoShare[0].User != "bob" || !strings.Contains(rep.NoShare[0].Reason, "uses 95% of its GPU") {
		t.Errorf("names without a share rule %+v, want bob's heavy with its reason", rep.NoShare)
	}
	b, err := os.ReadFile(cfg.Table)
	if err != nil || !strings.Contains(string(b), "shard\talice\t1\tlight\n") {
		t.Errorf("table %q: %v", b, err)
	}
	if len(write.resized) != 1 {
		t.Fatalf("leader wrote %d batches, want 1", len(write.resized))
	}
	want := []slurmctl.Resize{{JobID: 5, GPUs: 4, CPUs: 8}, {JobID: 1, CPUs: 2}, {JobID: 2, CPUs: 2}}
	if d := cmp.Diff(want, write.resized[0]); d != "" {
		t.Errorf("resizes (-want +got):\n%s", d)
	}
	for _, p := range rep.Proposals {
		if p.Reason == "" {
			t.Errorf("proposal without a reason: %+v", p)
		}
	}

	// A Planner (dry run, explain, follower): the same decisions, nothing
	// written.
	dry := cfg
	dry.Table = filepath.Join(dir, "dry.table")
	rep, write, plan := run(t, dry, true)
	if _, err := os.Stat(dry.Table); !errors.Is(err, os.ErrNotExist) {
		t.Error("a planning cycle wrote the table")
	}
	if _, ok := plan.Tables[dry.Table]; !ok {
		t.Errorf("planner kept tables %v; want the table planned", plan.Tables)
	}
	// The Planner reports its plan applied, as a writer would have.
	if len(write.resized) != 0 || len(plan.Resizes) != 1 || len(rep.Resize.Applied) != len(plan.Resizes[0].Planned) {
		t.Fatalf("writer %d, planner %d, applied %d", len(write.resized), len(plan.Resizes), len(rep.Resize.Applied))
	}
	var planned []slurmctl.Resize
	for _, c := range plan.Resizes[0].Planned {
		planned = append(planned, c.Resize)
	}
	wantPlanned := []slurmctl.Resize{{JobID: 1, CPUs: 2}, {JobID: 2, CPUs: 2}, {JobID: 5, GPUs: 4, CPUs: 8}} // by job id
	if d := cmp.Diff(wantPlanned, planned); d != "" {
		t.Errorf("planned resizes (-want +got):\n%s", d)
	}
}

// TestRewriter_LimitsGuard: a CPU or memory change by SlurmUser exempts
// the job from Slurm's limits on that resource, so the rules leave the
// CPUs and memory of every job that a CPU or memory limit applies to, or
// whose limits cannot be told, as they are, and all of them when the
// limits cannot be read. Elastic GPU counts still change (a GRES update
// exempts nothing). Limits are the lab's real answers (bob in account lim
// under GrpTRES=cpu=4, alice under MaxTRES=mem=4000M, chem under
// GrpTRESMins=cpu=600000), and a planning cycle decides the same.
func TestRewriter_LimitsGuard(t *testing.T) {
	cl := rewriteCluster(
		pendingJob(1, "bob", "free", "gpu", 1, 1), // no limit anywhere: 2 CPUs, 4000 MB
		func() slurmctl.Job { j := pendingJob(2, "bob", "capped", "gpu", 1, 1); j.Account = "lim"; return j }(),
		pendingJob(3, "alice", "memcap", "gpu", 1, 1),
		func() slurmctl.Job {
			j := pendingJob(4, "dave", "stranger", "gpu", 1, 1)
			j.Account = "physics"
			return j
		}(), // no association
		pendingJob(5, "carol", "elastic", "gpu", 2, 2),
	)
	comments := map[int64]string{5: "fairway:elastic=1-8"}
	cfg := RewriteConfig{Partitions: []string{"gpu"}, Rules: map[string]bool{"cpus": true, "memory": true, "elastic": true},
		Table: filepath.Join(t.TempDir(), "t"), TableMaxAge: time.Minute, HistoryDays: 30, RefreshEvery: 10, MinHistory: 3, ShardsPerGPU: 4, Cluster: "c"}
	withheld := func(rep *RewriteReport) map[int64]string {
		got := map[int64]string{}
		for _, h := range rep.Withheld {
			if h.Rule != rewrite.RuleCPUs && h.Rule != rewrite.RuleMemory {
				t.Errorf("withheld a %s change: %+v", h.Rule, h)
			}
			got[h.JobID] = h.Why
		}
		return got
	}
	for _, plan := range []bool{false, true} {
		write := &fakeResizer{comments: comments, limits: "limits"}
		rw, err := NewRewriter(cfg, quietLogger(), &fakeUsage{}, write)
		if err != nil {
			t.Fatal(err)
		}
		var sink Sink = &Live{Values: &fakeWriter{}, Resizes: write, Recorder: &fakeStore{}}
		if plan {
			sink = NewPlanner(nil, nil)
		}
		rep := rw.Cycle(context.Background(), 1, time.Now(), cl, nil, nil, sink)
		var asked []slurmctl.Resize
		for _, c := range rep.Resize.Planned {
			asked = append(asked, c.Resize)
		}
		slices.SortFunc(asked, func(a, b slurmctl.Resize) int { return int(a.JobID - b.JobID) })
		// 7 free GPUs, 4 taken by the jobs ranked ahead: the elastic job gets 3.
		want := []slurmctl.Resize{{JobID: 1, CPUs: 2, MemoryMB: 4000}, {JobID: 5, GPUs: 3}}
		if d := cmp.Diff(want, asked); d != "" {
			t.Errorf("plan %v: resizes asked (-want +got):\n%s", plan, d)
		}
		got := withheld(rep)
		for id, why := range map[int64]string{
			2: "GrpTRES=cpu=4 on account lim", 3: "MaxTRES=mem=4000M on user alice in account physics",
			4: "no association of user dave in account physics", 5: "GrpTRESMins=cpu=600000 on account chem",
		} {
			if !strings.Contains(got[id], why) {
				t.Errorf("plan %v: job %d withheld for %q, want %q", plan, id, got[id], why)
			}
		}
		if _, ok := got[1]; ok || len(rep.Withheld) != 8 { // jobs 2-5, a CPU and a memory change each
			t.Errorf("plan %v: withheld %+v, want the CPU and memory changes of jobs 2-5", plan, rep.Withheld)
		}
	}

	// Limits that cannot be read: no CPU or memory change at all.
	write := &fakeResizer{comments: comments, limitErr: errors.New("sacctmgr: Connection refused")}
	rw, err := NewRewriter(cfg, quietLogger(), &fakeUsage{}, write)
	if err != nil {
		t.Fatal(err)
	}
	rep := rw.Cycle(context.Background(), 1, time.Now(), cl, nil, nil, &Live{Values: &fakeWriter{}, Resizes: write, Recorder: &fakeStore{}})
	if len(write.resized) != 1 || cmp.Diff([]slurmctl.Resize{{JobID: 5, GPUs: 3}}, write.resized[0]) != "" {
		t.Errorf("limits unreadable: resized %+v, want only the elastic GPU count", write.resized)
	}
	got := withheld(rep)
	for id := int64(1); id <= 5; id++ {
		if !strings.Contains(got[id], "could not be read") {
			t.Errorf("limits unreadable: job %d withheld for %q", id, got[id])
		}
	}
}

// TestRewriter_ElasticRanksAhead: only the jobs ranked ahead of an elastic
// job take free GPUs before it, and only those that can start now. Sizing
// used to let every job that is not elastic take its GPUs first, and to
// count jobs that cannot start yet (--begin), so on the lab the job ranked
// first got 4 → 1 instead of the GPUs it could have.
func TestRewriter_ElasticRanksAhead(t *testing.T) {
	node := func(name string, alloc int) slurmctl.Node {
		return slurmctl.Node{Name: name, State: []string{"MIXED"}, Partitions: []string{"gpu"}, CPUs: 8, MemoryMB: 16000,
			GPUs: 4, Shards: 16, AllocGPUs: alloc}
	}
	elastic := pendingJob(10, "carol", "elastic", "gpu", 4, 1)
	other := pendingJob(11, "alice", "other", "gpu", 1, 1)
	later := pendingJob(12, "bob", "later", "gpu", 1, 1)
	later.Reason = "BeginTime" // sbatch --begin=now+1hour
	for _, tc := range []struct {
		name  string
		order []int64
		want  int
	}{
		{"elastic first", []int64{10, 11, 12}, 3},
		{"one job ahead", []int64{11, 10, 12}, 2},
		{"a job that cannot start yet ahead", []int64{12, 10, 11}, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// 3 GPUs free, all on gpu1.
			cl := &slurmctl.Cluster{Nodes: []slurmctl.Node{node("gpu1", 1), node("gpu2", 4)}, Jobs: []slurmctl.Job{elastic, other, later}}
			var ranking []policy.Score
			for _, id := range tc.order {
				ranking = append(ranking, policy.Score{JobID: id})
			}
			write := &fakeResizer{comments: map[int64]string{10: "fairway:elastic=1-4"}}
			cfg := RewriteConfig{Partitions: []string{"gpu"}, Rules: map[string]bool{"elastic": true}, HistoryDays: 30, RefreshEvery: 10,
				MinHistory: 3, ShardsPerGPU: 4, Cluster: "c"}
			rw, err := NewRewriter(cfg, quietLogger(), &fakeUsage{}, write)
			if err != nil {
				t.Fatal(err)
			}
			rep := rw.Cycle(context.Background(), 1, time.Now(), cl, nil, ranking, &Live{Values: &fakeWriter{}, Resizes: write, Recorder: &fakeStore{}})
			want := []slurmctl.Resize{{JobID: 10, GPUs: tc.want}}
			if len(write.resized) != 1 || cmp.Diff(want, write.resized[0]) != "" {
				t.Errorf("resizes %+v, want %+v (proposals %+v)", write.resized, want, rep.Proposals)
			}
		})
	}
}

// TestRewriter_CPUsFromTheRequest: the CPU rule sizes a job from what it
// asked for, not from CPUs Fairway gave it earlier. On the lab an elastic
// job of 4 GPUs and 1 CPU was grown to 8 CPUs, then shrunk to 2 GPUs; the
// rule took its 8 CPUs as the request ("never fewer than asked"), kept
// them, and the job stayed PENDING (Resources) on a node with 2 free GPUs
// and 7 free CPUs.
func TestRewriter_CPUsFromTheRequest(t *testing.T) {
	node := func(name string, alloc int) slurmctl.Node {
		return slurmctl.Node{Name: name, State: []string{"MIXED"}, Partitions: []string{"gpu"}, CPUs: 8, MemoryMB: 16000,
			GPUs: 4, Shards: 16, AllocGPUs: alloc}
	}
	job := pendingJob(10, "carol", "elastic", "gpu", 4, 1)
	write := &fakeResizer{comments: map[int64]string{10: "fairway:elastic=1-4"}}
	cfg := RewriteConfig{Partitions: []string{"gpu"}, Rules: map[string]bool{"elastic": true, "cpus": true}, HistoryDays: 30, RefreshEvery: 10,
		MinHistory: 3, ShardsPerGPU: 4, Cluster: "c"}
	rw, err := NewRewriter(cfg, quietLogger(), &fakeUsage{}, write)
	if err != nil {
		t.Fatal(err)
	}
	sink := &Live{Values: &fakeWriter{}, Resizes: write, Recorder: &fakeStore{}}

	// Cycle 1: 4 GPUs free on gpu1: the job keeps 4 GPUs and gets their
	// proportional 8 CPUs.
	cl := &slurmctl.Cluster{Nodes: []slurmctl.Node{node("gpu1", 0), node("gpu2", 4)}, Jobs: []slurmctl.Job{job}}
	rw.Cycle(context.Background(), 1, time.Now(), cl, nil, nil, sink)
	if want := []slurmctl.Resize{{JobID: 10, CPUs: 8}}; len(write.resized) != 1 || cmp.Diff(want, write.resized[0]) != "" {
		t.Fatalf("cycle 1: resizes %+v, want %+v", write.resized, want)
	}

	// Cycle 2: Slurm holds the job at 8 CPUs; only 2 GPUs are free now.
	// 2 GPUs, and the CPUs of 2 GPUs: 4, not the 8 of the earlier change.
	job.CPUs = 8
	cl = &slurmctl.Cluster{Nodes: []slurmctl.Node{node("gpu1", 2), node("gpu2", 4)}, Jobs: []slurmctl.Job{job}}
	rep := rw.Cycle(context.Background(), 2, time.Now(), cl, nil, nil, sink)
	if want := []slurmctl.Resize{{JobID: 10, GPUs: 2, CPUs: 4}}; len(write.resized) != 2 || cmp.Diff(want, write.resized[1]) != "" {
		t.Fatalf("cycle 2: resizes %+v, want %+v (proposals %+v)", write.resized, want, rep.Proposals)
	}
	for _, p := range rep.Proposals {
		if p.Rule == rewrite.RuleCPUs && (p.From != 8 || !strings.Contains(p.Reason, "never below the 1 asked")) {
			t.Errorf("CPU proposal %+v: want from 8, never below the 1 asked", p)
		}
	}
}
