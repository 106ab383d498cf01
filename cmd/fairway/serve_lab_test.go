package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fairway-hpc/fairway/contrib/lab"
	"github.com/fairway-hpc/fairway/internal/serve"
	"github.com/fairway-hpc/fairway/policy"
	"github.com/fairway-hpc/fairway/slurmctl"
	"github.com/jackc/pgx/v5"
)

// serveLabConfig is serve's config against the lab's GPU partition.
func serveLabConfig(e *lab.Env, pol string, dry bool) serveConfig {
	cfg := serveConfig{
		Slurm: slurmctl.ConnectConfig{URL: e.RESTURL, User: e.RESTUser, TokenFile: e.TokenFile}, WriteMode: slurmctl.ModeScontrolSiteFactor,
		Interval: time.Second, MaxBackoff: 4 * time.Second, HA: true, HistoryDays: 1, ChargeEvery: -1, ShardsPerGPU: 4,
	}
	cfg.Planned = dry
	cfg.Runner = serve.Config{Cluster: e.Cluster, Policy: pol, Predictor: "fairway",
		Range: policy.SiteFactorRange(), Field: "site_factor", Partitions: []string{e.Partition}}
	return cfg
}

func quietLogger() *slog.Logger {
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

// siteFactors reads sprio's site factor column for the given jobs.
func siteFactors(t *testing.T, e *lab.Env, ids ...int64) map[int64]int64 {
	t.Helper()
	// Every job, filtered: from 24.11 on `sprio -j a,b` fails the whole
	// call ("Invalid job id") when one of them is not a pending job
	// multifactor prices, where 22.05 leaves it out.
	out := e.Run(t, "", "sprio", "-h", "-o", "%i %S")
	got := map[int64]int64{}
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) != 2 {
			continue
		}
		id, _ := strconv.ParseInt(f[0], 10, 64)
		v, _ := strconv.ParseInt(f[1], 10, 64)
		if slices.Contains(ids, id) {
			got[id] = v
		}
	}
	return got
}

// priorities reads sprio's final priority for the given jobs.
func priorities(t *testing.T, e *lab.Env, ids ...int64) map[int64]int64 {
	t.Helper()
	out := e.Run(t, "", "sprio", "-h", "-o", "%i %Y") // every job, filtered: see siteFactors
	got := map[int64]int64{}
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) == 2 {
			id, _ := strconv.ParseInt(f[0], 10, 64)
			v, _ := strconv.ParseInt(f[1], 10, 64)
			if slices.Contains(ids, id) {
				got[id] = v
			}
		}
	}
	return got
}

// priorityWeightSum adds up the PriorityWeight* values slurmctld runs with.
func priorityWeightSum(t *testing.T, e *lab.Env) int64 {
	t.Helper()
	cfg, err := slurmctl.ParsePriorityConfig([]byte(e.Run(t, "", "scontrol", "show", "config")))
	if err != nil {
		t.Fatal(err)
	}
	sum, _, _ := cfg.MaxMove()
	return int64(math.Ceil(sum))
}

// startTime returns a job's start time from squeue/sacct (zero if not started).
func startTime(t *testing.T, e *lab.Env, id int64) time.Time {
	t.Helper()
	out, err := e.Try("", "sacct", "-n", "-X", "-P", "-o", "Start", "-j", strconv.FormatInt(id, 10))
	if err != nil {
		return time.Time{}
	}
	s := strings.TrimSpace(out)
	ts, err := time.ParseInLocation("2006-01-02T15:04:05", s, time.Local)
	if err != nil {
		return time.Time{}
	}
	return ts
}

// fillCluster submits, as user, one job holding every GPU of the lab
// partition and waits until it runs.
func fillCluster(t *testing.T, e *lab.Env, user, tag string) int64 {
	t.Helper()
	waitQueueEmpty(t, e)
	id := e.Submit(t, user, "-J", tag+"-blocker", "-p", e.Partition, "-N", "2", "--gres=gpu:4", "--exclusive", "-t", "10", "--wrap", "sleep 600")
	waitJobState(t, e, id, 60*time.Second, "RUNNING")
	return id
}

// jobState is slurmctld's state of a job (scontrol), which changes the
// moment the job does; sacct's comes later, through slurmdbd. "" once
// slurmctld has forgotten the job.
func jobState(e *lab.Env, id int64) string {
	out, err := e.Try("", "scontrol", "show", "job", "-o", strconv.FormatInt(id, 10))
	if err != nil {
		return ""
	}
	for _, f := range strings.Fields(out) {
		if v, ok := strings.CutPrefix(f, "JobState="); ok {
			return v
		}
	}
	return ""
}

// waitJobState waits until slurmctld reports one of states for the job.
// Callers wait only for states the job cannot leave before they look: a
// final state, or RUNNING for a job that holds until released (heldJob).
func waitJobState(t *testing.T, e *lab.Env, id int64, timeout time.Duration, states ...string) {
	t.Helper()
	var last string
	waitFor(t, timeout, fmt.Sprintf("job %d to be one of %v", id, states), func() bool {
		last = jobState(e, id)
		return slices.Contains(states, last)
	})
}

// heldJob submits, as user, a job that runs until release is called: a
// test can then look at it running for as long as it needs, however slow
// the machine. The job polls for a file in the lab's job directory.
func heldJob(t *testing.T, e *lab.Env, user, tag string, args ...string) (id int64, release func()) {
	t.Helper()
	flag := filepath.Join(e.JobDir, tag+".release")
	_ = os.Remove(flag)
	t.Cleanup(func() { _ = os.Remove(flag) })
	script := fmt.Sprintf("while [ ! -e %s ]; do sleep 0.2; done", flag)
	id = e.Submit(t, user, append(append([]string{"-J", tag}, args...), "--wrap", script)...)
	return id, func() {
		if err := os.WriteFile(flag, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// waitQueueEmpty waits until the lab partition has no pending, running or
// completing job (earlier tests' cancelled jobs may still be completing):
// serve tests rank the whole partition, and a leftover running job would
// count towards its user's fair-share.
func waitQueueEmpty(t *testing.T, e *lab.Env) {
	t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for {
		out, err := e.Try("", "squeue", "-h", "-p", e.Partition, "-t", "PD,R,CG,CF,S", "-o", "%i %u %T")
		if err == nil && strings.TrimSpace(out) == "" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the lab partition is still busy after 90s (another test or session using the lab?):\n%s", out)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// waitNoListedJobs waits until slurmctld lists no job of user, finished
// ones included: it forgets a finished job MinJobAge (the lab: 30 s) after
// the end, at its next purge.
func waitNoListedJobs(t *testing.T, e *lab.Env, user string) {
	t.Helper()
	deadline := time.Now().Add(3 * time.Minute)
	for {
		out, err := e.Try("", "squeue", "-h", "-u", user, "-t", "all", "-o", "%i %T")
		if err == nil && strings.TrimSpace(out) == "" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("slurmctld still lists jobs of %s after 3 minutes:\n%s", user, out)
		}
		time.Sleep(time.Second)
	}
}

// TestLab_ServeLightUserFirst is the scenario (a): a heavy user
// floods the queue with 20 jobs, a light user submits 2 later. Slurm alone
// (multifactor: age and fair-share) ranks the heavy user's older jobs first;
// with fair-qssf writing site factors, the light user's jobs start first in
// the real cluster.
func TestLab_ServeLightUserFirst(t *testing.T) {
	e := lab.Get(t)
	ctx := context.Background()
	dbURL, _ := throwawayDB(t, e)
	tag := fmt.Sprintf("serveA%d", time.Now().UnixNano()%1e6)
	heavy, light := "alice", "carol"

	// serve charges the finished jobs slurmctld still lists (MinJobAge) to
	// their users: the light user's jobs from earlier tests must be gone,
	// or that user is not light.
	waitNoListedJobs(t, e, light)
	blocker := fillCluster(t, e, heavy, tag)
	var heavyJobs, lightJobs []int64
	for i := 0; i < 20; i++ {
		heavyJobs = append(heavyJobs, e.Submit(t, heavy, "-J", tag+"-heavy", "-p", e.Partition, "--gres=gpu:4", "-t", "2", "--wrap", "sleep 3"))
	}
	// The light jobs must be younger: Slurm's submit times have whole
	// seconds, so wait for the clock to pass the heavy jobs' second.
	heavyDone := time.Now()
	waitFor(t, 3*time.Second, "the clock to pass the heavy jobs' submit second", func() bool { return time.Now().Unix() > heavyDone.Unix() })
	for i := 0; i < 2; i++ {
		lightJobs = append(lightJobs, e.Submit(t, light, "-J", tag+"-light", "-p", e.Partition, "--gres=gpu:4", "-t", "2", "--wrap", "sleep 3"))
	}

	cfg := serveLabConfig(e, "fair-qssf", false)
	// The lab keeps Slurm's age and fair-share weights (the "before
	// Fairway" setup); a gap above their sum keeps Fairway's order.
	cfg.Runner.Range.Gap = priorityWeightSum(t, e) + 1
	s, err := buildLabServe(ctx, cfg, dbURL, quietLogger())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	// Two cycles: the first sees the heavy user's running blocker, the
	// second charges the time it ran since and ranks with it.
	var res *serve.CycleResult
	for i := 0; i < 2; i++ {
		if res, err = s.Runner.RunCycle(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if !res.Leader {
		t.Fatal("the only serve is not leader")
	}
	all := append(append([]int64{}, heavyJobs...), lightJobs...)
	sf := siteFactors(t, e, all...)
	for _, l := range lightJobs {
		for _, h := range heavyJobs {
			if sf[l] <= sf[h] {
				t.Fatalf("site factor of light job %d (%d) not above heavy job %d (%d)", l, sf[l], h, sf[h])
			}
		}
	}
	// Slurm's final priorities (sprio) order our jobs exactly as Fairway ranked them.
	prio := priorities(t, e, all...)
	var ours []int64
	for _, sc := range res.Ranked {
		if _, ok := prio[sc.JobID]; ok {
			ours = append(ours, sc.JobID)
		}
	}
	if len(ours) != len(all) {
		t.Fatalf("sprio shows %d of our %d jobs", len(ours), len(all))
	}
	for i := 1; i < len(ours); i++ {
		if prio[ours[i-1]] <= prio[ours[i]] {
			t.Errorf("Slurm priority of job %d (Fairway rank before) %d is not above job %d's %d", ours[i-1], prio[ours[i-1]], ours[i], prio[ours[i]])
		}
	}
	// A second cycle with nothing changed writes nothing.
	res, err = s.Runner.RunCycle(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(res.Report.Planned); n != 0 || res.Report.Calls != 0 {
		t.Errorf("unchanged queue: %d values planned, %d Slurm calls; want 0, 0", n, res.Report.Calls)
	}

	// Release the cluster: Slurm starts jobs in priority order.
	e.Run(t, "", "scancel", strconv.FormatInt(blocker, 10))
	for _, l := range lightJobs {
		e.WaitState(t, l, 90*time.Second, "RUNNING", "COMPLETED")
	}
	var lastLight time.Time
	for _, l := range lightJobs {
		if st := startTime(t, e, l); st.After(lastLight) {
			lastLight = st
		}
	}
	for _, h := range heavyJobs {
		st := startTime(t, e, h)
		if !st.IsZero() && st.Before(lastLight) {
			t.Errorf("heavy job %d started at %s, before the light user's last job (%s)", h, st, lastLight)
		}
	}
	// The decisions are in the log.
	if n := decisionCount(t, dbURL, "NOT dry_run"); n < len(all) {
		t.Errorf("decision log has %d rows, want at least %d", n, len(all))
	}
}

// TestLab_ServeDryRunWritesNothing is scenario (d).
func TestLab_ServeDryRunWritesNothing(t *testing.T) {
	e := lab.Get(t)
	ctx := context.Background()
	dbURL, _ := throwawayDB(t, e)
	tag := fmt.Sprintf("serveD%d", time.Now().UnixNano()%1e6)
	fillCluster(t, e, "bob", tag)
	var ids []int64
	for _, u := range []string{"alice", "bob", "carol"} {
		ids = append(ids, e.Submit(t, u, "-J", tag, "-p", e.Partition, "--gres=gpu:1", "-t", "2", "--wrap", "sleep 1"))
	}
	before := siteFactors(t, e, ids...)
	s, err := buildLabServe(ctx, serveLabConfig(e, "fair-qssf", true), dbURL, quietLogger())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	res, err := s.Runner.RunCycle(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// The Planner reports its plan applied; the cycle's row, stamped by
	// it, says nothing was written.
	if len(res.Report.Planned) == 0 || res.Report.Calls != 0 || !res.Record.Planned || res.Record.Written != 0 {
		t.Fatalf("dry run: %d planned, %d calls, row dry_run=%v written=%d; want >0, 0, true, 0",
			len(res.Report.Planned), res.Report.Calls, res.Record.Planned, res.Record.Written)
	}
	after := siteFactors(t, e, ids...)
	for _, id := range ids {
		if before[id] != after[id] {
			t.Errorf("job %d: site factor %d -> %d in dry run", id, before[id], after[id])
		}
	}
	if decisionCount(t, dbURL, "dry_run") == 0 {
		t.Error("dry run recorded no decisions")
	}
}

// serveProc is a `fairway serve` child process.
type serveProc struct {
	cmd    *exec.Cmd
	listen string
	api    string // the job API's address (--http-addr)
	log    *os.File
}

func freePort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

func startServe(t *testing.T, bin string, e *lab.Env, dbURL string, extra ...string) *serveProc {
	t.Helper()
	p := &serveProc{listen: freePort(t), api: freePort(t)}
	var err error
	p.log, err = os.CreateTemp(t.TempDir(), "serve-*.log")
	if err != nil {
		t.Fatal(err)
	}
	args := append([]string{"--log-level", "debug", "serve", "--cluster", e.Cluster, "--slurm-url", e.RESTURL, "--slurm-user", e.RESTUser,
		"--slurm-token-file", e.TokenFile, "--database-url", dbURL, "--interval", "1s", "--max-backoff", "2s",
		"--listen", p.listen, "--http-addr", p.api, "--partitions", e.Partition, "--charge-every=-1s", "--buffer-dir", t.TempDir()}, extra...)
	if !slices.Contains(extra, "--http-user-header") {
		args = append(args, "--http-all-users") // the job API needs an audience
	}
	p.cmd = exec.Command(bin, args...)
	p.cmd.Env = append(os.Environ(), "SLURM_CONF="+e.SlurmConf)
	p.cmd.Stdout, p.cmd.Stderr = p.log, p.log
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if p.cmd.ProcessState == nil {
			_ = p.cmd.Process.Kill()
			_, _ = p.cmd.Process.Wait()
		}
		if t.Failed() {
			b, _ := os.ReadFile(p.log.Name())
			t.Log(failureLog(t, e.Dir, "serve-"+p.listen, b))
		}
	})
	return p
}

// metric reads one sample (no labels) from the process's /metrics; -1 when
// unreachable.
func (p *serveProc) metric(name string) float64 {
	resp, err := http.Get("http://" + p.listen + "/metrics")
	if err != nil {
		return -1
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 2 && f[0] == name {
			v, _ := strconv.ParseFloat(f[1], 64)
			return v
		}
	}
	return -1
}

func (p *serveProc) status(path string) int {
	resp, err := http.Get("http://" + p.listen + path)
	if err != nil {
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}

func waitFor(t *testing.T, timeout time.Duration, what string, ok func() bool) {
	t.Helper()
	if !waitUntil(timeout, ok) {
		t.Fatalf("timed out after %s waiting for %s", timeout, what)
	}
}

// waitUntil polls ok until it holds or timeout passes, and reports
// whether it held: for a caller that explains a timeout itself.
func waitUntil(timeout time.Duration, ok func() bool) bool {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if ok() {
			return true
		}
		time.Sleep(200 * time.Millisecond)
	}
	return false
}

// TestLab_ServeHighAvailability is scenario (b): two serve processes on one
// database; exactly one leads and writes; killing it hands over within two
// cycles.
func TestLab_ServeHighAvailability(t *testing.T) {
	e := lab.Get(t)
	dbURL, _ := throwawayDB(t, e)
	bin := buildFairway(t)
	tag := fmt.Sprintf("serveB%d", time.Now().UnixNano()%1e6)
	fillCluster(t, e, "alice", tag)
	for _, u := range []string{"alice", "bob", "carol", "alice"} {
		e.Submit(t, u, "-J", tag, "-p", e.Partition, "--gres=gpu:1", "-t", "2", "--wrap", "sleep 1")
	}
	a := startServe(t, bin, e, dbURL)
	b := startServe(t, bin, e, dbURL)
	waitFor(t, 30*time.Second, "both processes ready", func() bool { return a.status("/readyz") == 200 && b.status("/readyz") == 200 })
	waitFor(t, 10*time.Second, "exactly one leader", func() bool { return a.metric("fairway_leader")+b.metric("fairway_leader") == 1 })
	leader, follower := a, b
	if b.metric("fairway_leader") == 1 {
		leader, follower = b, a
	}
	waitFor(t, 10*time.Second, "the leader's first writes", func() bool { return leader.metric("fairway_writes_total") > 0 })
	if w := follower.metric("fairway_writes_total"); w != 0 {
		t.Fatalf("the follower wrote %v values", w)
	}
	// Kill the leader hard: its session ends, the lock is freed.
	if err := leader.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_, _ = leader.cmd.Process.Wait()
	killed := time.Now()
	waitFor(t, 2*time.Second+time.Second, "the follower to take over within two 1s cycles", func() bool { return follower.metric("fairway_leader") == 1 })
	t.Logf("takeover after %s", time.Since(killed).Round(10*time.Millisecond))
}

// TestLab_ServeSurvivesOutages is scenario (c): slurmrestd and PostgreSQL
// stopped and restarted during a run: no crash, no lost history, correct
// writes afterwards.
func TestLab_ServeSurvivesOutages(t *testing.T) {
	e := lab.Get(t)
	// The outage is of the lab's own PostgreSQL, so the test database lives
	// there too.
	dbURL, conn := throwawayDB(t, e)
	bin := buildFairway(t)
	tag := fmt.Sprintf("serveC%d", time.Now().UnixNano()%1e6)
	p := startServe(t, bin, e, dbURL, "--no-ha", "--buffer-limit", "1")
	waitFor(t, 30*time.Second, "serve ready", func() bool { return p.status("/readyz") == 200 })
	// Before it was ready, serve read the lab's own weights (scontrol show
	// config) and warned that they reach its --gap, 1: the lab keeps
	// Slurm's age, fair share, partition and GPU weights on.
	if b, _ := os.ReadFile(p.log.Name()); !strings.Contains(string(b), `msg="Slurm's own priority terms can reorder Fairway's ranking: set them to 0, or --gap above their sum`) ||
		!strings.Contains(string(b), "PriorityWeightTRES gres/gpu=4000") {
		t.Errorf("serve's start log has no warning naming the lab's weights:\n%s", failureLog(t, e.Dir, "serve-"+p.listen, b))
	}

	// slurmrestd down: cycles fail, the daemon lives, /readyz says so.
	restPID := readPID(t, e.Dir+"/run/slurmrestd.pid")
	if err := syscallKill(restPID); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { restartLab(t) })
	waitFor(t, 15*time.Second, "readyz to report the outage", func() bool { return p.status("/readyz") == 503 })
	if p.status("/healthz") != 200 {
		t.Fatal("serve died while slurmrestd was down")
	}
	restartLab(t)
	waitFor(t, 30*time.Second, "serve ready again after slurmrestd is back", func() bool { return p.status("/readyz") == 200 })

	// PostgreSQL down while a job finishes: the record is buffered and
	// reaches the database once it is back.
	// The job runs until released, so every wait below is for a state it
	// holds until the test moves it on.
	id, release := heldJob(t, e, "carol", tag, "-p", e.Partition, "--gres=gpu:1", "-t", "5")
	waitJobState(t, e, id, 60*time.Second, "RUNNING")
	waitFor(t, 30*time.Second, "serve to see the job run", func() bool { return p.metric("fairway_jobs_running") >= 1 })
	pgCtl(t, e, "stop")
	release()
	waitJobState(t, e, id, 60*time.Second, "COMPLETED")
	waitFor(t, 30*time.Second, "records to be buffered", func() bool { return p.metric("fairway_buffered_records") > 0 })
	// --buffer-limit 1: the outage's records go to disk.
	waitFor(t, 30*time.Second, "records to be spilled", func() bool { return p.metric("fairway_buffer_spilled_records") > 0 })
	if p.status("/healthz") != 200 {
		t.Fatal("serve died while PostgreSQL was down")
	}
	restartLab(t)
	waitFor(t, 30*time.Second, "the buffer to drain", func() bool {
		return p.metric("fairway_buffered_records") == 0 && p.metric("fairway_buffer_spilled_records") == 0 && p.metric("fairway_database_up") == 1
	})
	ctx := context.Background()
	_ = conn.Close(ctx)
	var n int
	c2, err := pgxConnect(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close(ctx)
	if err := c2.QueryRow(ctx, `SELECT count(*) FROM job WHERE cluster = $1 AND job_id = $2`, e.Cluster, id).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 1 {
		t.Fatalf("job %d finished during the PostgreSQL outage: %d rows in job, want 1", id, n)
	}
	// The node it ran on came through the spill too: the power forecast
	// counts a node shared by jobs once by it.
	var hosts *string
	if err := c2.QueryRow(ctx, `SELECT hosts FROM job WHERE cluster = $1 AND job_id = $2`, e.Cluster, id).Scan(&hosts); err != nil {
		t.Fatal(err)
	}
	if hosts == nil {
		t.Errorf("job %d: no hosts stored, want the node it ran on", id)
	} else if h, err := slurmctl.ExpandHostlist(*hosts); err != nil || len(h) != 1 {
		t.Errorf("job %d: hosts %q (%v), want its one node", id, *hosts, err)
	}
	if p.cmd.ProcessState != nil {
		t.Fatal("serve exited")
	}
}

func readPID(t *testing.T, path string) int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return pid
}

func syscallKill(pid int) error {
	p, err := os.FindProcess(pid)
	if err != nil {
		return err
	}
	return p.Signal(os.Interrupt)
}

// restartLab starts whatever lab daemon is stopped (lab up is idempotent).
func restartLab(t *testing.T) {
	t.Helper()
	if out, err := exec.Command(lab.Script(), "up").CombinedOutput(); err != nil {
		t.Fatalf("lab up: %v\n%s", err, out)
	}
}

// pgCtl runs pg_ctl on the lab's PostgreSQL as its owner.
func pgCtl(t *testing.T, e *lab.Env, action string) {
	t.Helper()
	out, err := exec.Command("setpriv", "--reuid=postgres", "--regid=postgres", "--clear-groups", "--",
		"/usr/lib/postgresql/15/bin/pg_ctl", "-D", e.Dir+"/pg", "-m", "fast", "-w", action).CombinedOutput()
	if err != nil {
		t.Fatalf("pg_ctl %s: %v\n%s", action, err, out)
	}
}

func pgxConnect(ctx context.Context, url string) (*pgx.Conn, error) { return pgx.Connect(ctx, url) }

// decisionCount counts decision-log rows in the database at url.
func decisionCount(t *testing.T, url, where string) int {
	t.Helper()
	ctx := context.Background()
	c, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	var n int
	if err := c.QueryRow(ctx, `SELECT count(*) FROM decision WHERE `+where).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// buildLabServe builds serve against the lab's database.
func buildLabServe(ctx context.Context, cfg serveConfig, dbURL string, log *slog.Logger) (*openedServe, error) {
	cfg.DatabaseURL = dbURL
	return buildServe(ctx, cfg, log)
}
