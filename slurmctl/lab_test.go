package slurmctl

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/fairway-hpc/fairway/contrib/lab"
	"github.com/fairway-hpc/fairway/policy"
)

// Integration tests against the lab's real slurmctld and slurmrestd. The
// lab is shared: every test submits its own uniquely named jobs, acts only
// on their ids, and cancels them at the end (lab.Env.Submit).

// TestLab_WriteSiteFactorOrder is the main check: on a full
// cluster, pending jobs of three users are read, get one site factor each
// in an order Fairway chose (the reverse of submission), and sprio, squeue
// and slurmrestd all show that order. A second write of the same values runs
// no Slurm command, a restarted Writer primed from sprio neither, and a
// dry run changes nothing.
func TestLab_WriteSiteFactorOrder(t *testing.T) {
	env := lab.Get(t)
	ctx := t.Context()
	name := tag(t)

	// Full cluster: one exclusive job per node.
	var blockers []int64
	for _, node := range []string{"gpu1", "gpu2"} {
		blockers = append(blockers, env.Submit(t, "alice", "-J", name+"-block", "-w", node, "--exclusive", "-t", "10", "--wrap", "sleep 600"))
	}
	waitRunning(t, env, blockers, 90*time.Second)

	users := []lab.User{{Name: "alice", Account: "physics"}, {Name: "bob", Account: "physics"}, {Name: "carol", Account: "chem"}}
	var ids []int64
	for i := range 6 {
		u := users[i%3]
		ids = append(ids, env.Submit(t, u.Name, "-J", fmt.Sprintf("%s-p%d", name, i), "--gres=gpu:1", "-t", "5", "--wrap", "sleep 60"))
	}
	// sprio lists a job once multifactor has computed its priority: it is
	// then truly pending (Resources or Priority), not just submitted.
	if !waitFor(30*time.Second, func() bool { return len(sprioSite(t, env, ids)) == len(ids) }) {
		t.Fatalf("sprio does not list all of %v: %v", ids, sprioSite(t, env, ids))
	}

	c := labClient(t, env, nil)
	cl, err := c.Read(ctx)
	if err != nil {
		t.Fatal(err)
	}
	byID := map[int64]*Job{}
	for i := range cl.Jobs {
		byID[cl.Jobs[i].ID] = &cl.Jobs[i]
	}
	for i, id := range ids {
		j := byID[id]
		if j == nil {
			t.Fatalf("job %d not in ListJobs", id)
		}
		u := users[i%3]
		if !j.Pending() || j.User != u.Name || j.Account != u.Account || j.GPUs != 1 || j.Partition != env.Partition ||
			(j.Reason != "Resources" && j.Reason != "Priority") {
			t.Errorf("job %d read as %+v (reason %s), want a pending %s/%s job for 1 GPU", id, j.Job, j.Reason, u.Name, u.Account)
		}
	}
	for _, id := range blockers {
		if j := byID[id]; j == nil || j.State != policy.StateRunning {
			t.Errorf("blocker %d not read as running", id)
		}
	}
	if g := cl.GPUs(env.Partition); g != 8 {
		t.Errorf("cluster GPUs = %d, want 8", g)
	}

	// Fairway's order: last submitted first. A gap of 20000 exceeds the
	// lab's other weights (age 1000 + fair-share 10000 + partition 2000 +
	// GPU TRES 4000), so the site factor decides.
	order := slices.Clone(ids)
	slices.Reverse(order)
	scores := make([]policy.Score, len(order))
	for i, id := range order {
		scores[i] = policy.Score{JobID: id, Value: float64(len(order) - i)}
	}
	vals, err := policy.Assign(scores, nil, policy.SlurmRange{Min: 1, Max: policy.SiteFactorRange().Max, Gap: 20000})
	if err != nil {
		t.Fatal(err)
	}
	want := map[int64]int64{}
	for i, id := range order {
		want[id] = vals[i]
	}
	for _, id := range blockers {
		want[id] = 42 // running: must be skipped
	}
	// The write.
	run := &countingRunner{Runner: ExecRunner{SlurmConf: env.SlurmConf}}
	w, err := NewWriter(WriterConfig{Mode: ModeScontrolSiteFactor, Range: policy.SiteFactorRange(), Runner: run}, c, nil)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	rep, err := w.Write(ctx, cl.Jobs, want)
	if err != nil {
		t.Fatalf("Write: %v (%+v)", err, rep)
	}
	t.Logf("wrote %d site factors in %s with %d scontrol run(s)", len(rep.Applied), time.Since(start), run.calls)
	if len(rep.Applied) != len(ids) || run.calls != 1 {
		t.Errorf("applied %d with %d commands, want %d with 1", len(rep.Applied), run.calls, len(ids))
	}
	for _, s := range rep.Skipped {
		if !slices.Contains(blockers, s.JobID) || s.Reason != "not pending" {
			t.Errorf("unexpected skip %+v", s)
		}
	}
	for _, id := range blockers {
		// "jobid=5 " is not in "jobid=55 ": a fresh lab's ids are short.
		if strings.Contains(string(run.stdin[0]), fmt.Sprintf("jobid=%d ", id)) {
			t.Errorf("running blocker %d was sent to scontrol:\n%s", id, run.stdin[0])
		}
	}

	// sprio shows the values, squeue and slurmrestd the order.
	site := sprioSite(t, env, ids)
	for _, id := range ids {
		if site[id] != want[id] {
			t.Errorf("sprio SITE of %d = %d, want %d", id, site[id], want[id])
		}
	}
	sq := strings.Fields(env.Run(t, "", "squeue", "-h", "-t", "PD", "-j", idList(ids), "-o", "%A", "--sort=-p,i"))
	if got := strings.Join(sq, ","); got != idList(order) {
		t.Errorf("squeue by priority: %s, want %s", got, idList(order))
	}
	cl2, err := c.Read(ctx)
	if err != nil {
		t.Fatal(err)
	}
	prio := map[int64]int64{}
	for i := range cl2.Jobs {
		prio[cl2.Jobs[i].ID] = cl2.Jobs[i].Priority
	}
	for i := 1; i < len(order); i++ {
		if prio[order[i-1]] <= prio[order[i]] {
			t.Errorf("slurmrestd priority of %d (%d) not above %d (%d)", order[i-1], prio[order[i-1]], order[i], prio[order[i]])
		}
	}
	mine := map[int64]int64{}
	for _, id := range ids {
		mine[id] = prio[id]
	}
	t.Logf("order %v, site factors %v, priorities %v", order, site, mine)

	// Same values again, from a fresh read: no Slurm command.
	rep, err = w.Write(ctx, cl2.Jobs, want)
	if err != nil || rep.Calls != 0 || run.calls != 1 || len(rep.Planned) != 0 {
		t.Errorf("second write: %v, %d calls, %d commands in all, %d planned; want no call", err, rep.Calls, run.calls, len(rep.Planned))
	}

	// A restarted Fairway primes from sprio and does not rewrite either.
	run2 := &countingRunner{Runner: ExecRunner{SlurmConf: env.SlurmConf}}
	w2, err := NewWriter(WriterConfig{Mode: ModeScontrolSiteFactor, Range: policy.SiteFactorRange(), Runner: run2}, c, nil)
	if err != nil {
		t.Fatal(err)
	}
	if n, err := w2.Prime(ctx); err != nil || n < len(ids) {
		t.Fatalf("Prime: %d, %v", n, err)
	}
	rep, err = w2.Write(ctx, cl2.Jobs, want)
	if err != nil || rep.Calls != 0 || run2.calls != 1 { // the one call is sprio
		t.Errorf("write after Prime: %v, %d calls (%d commands incl. sprio)", err, rep.Calls, run2.calls)
	}
}

// stopRestd stops the lab's slurmrestd (by the pid the lab recorded) and
// returns a function that starts it again with `lab up`; the test's cleanup
// calls that too, so slurmrestd runs again whatever happens.
func stopRestd(t *testing.T, env *lab.Env, c *Client) (restart func()) {
	t.Helper()
	pidFile := filepath.Join(env.Dir, "run", "slurmrestd.pid")
	b, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatalf("slurmrestd pid: %v", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatalf("slurmrestd pid %q", b)
	}
	cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if !strings.Contains(string(cmdline), "slurmrestd") {
		t.Fatalf("pid %d is not slurmrestd (%q)", pid, cmdline)
	}
	up := func() {
		if _, err := os.Stat(fmt.Sprintf("/proc/%d", pid)); err == nil {
			return
		}
		if out, err := env.Try("", lab.Script(), "up"); err != nil {
			t.Errorf("restart slurmrestd: %v\n%s", err, out)
			return
		}
		if !waitFor(30*time.Second, func() bool { return c.Ping(context.Background()) == nil }) {
			t.Error("slurmrestd not answering 30s after lab up")
		}
		pid = -1
	}
	t.Cleanup(up)
	if err := syscall.Kill(pid, syscall.SIGTERM); err != nil {
		t.Fatalf("stop slurmrestd: %v", err)
	}
	if !waitFor(10*time.Second, func() bool { _, err := os.Stat(fmt.Sprintf("/proc/%d", pid)); return err != nil }) {
		t.Fatalf("slurmrestd (pid %d) still running 10s after SIGTERM", pid)
	}
	return up
}

func squeuePriority(t *testing.T, env *lab.Env, ids []int64) string {
	t.Helper()
	return strings.TrimSpace(env.Run(t, "", "squeue", "-h", "-j", idList(ids), "-o", "%A=%Q", "--sort=i"))
}

// assertNotWritten fails if any job now has the priority a failed write
// tried to give it. Comparing with the priority before would be flaky:
// multifactor recomputes age and fair-share while the test runs.
func assertNotWritten(t *testing.T, env *lab.Env, tried map[int64]int64) {
	t.Helper()
	var ids []int64
	for id := range tried {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	out := squeuePriority(t, env, ids)
	for _, f := range strings.Fields(out) {
		id, prio, _ := strings.Cut(f, "=")
		n, _ := strconv.ParseInt(id, 10, 64)
		if p, _ := strconv.ParseInt(prio, 10, 64); p == tried[n] {
			t.Errorf("job %d has priority %d: the failed write happened (%s)", n, p, out)
		}
	}
}

// TestLab_SlurmrestdStoppedMidCycle: the cycle read the cluster, then
// slurmrestd stops. The next read fails as a whole, the write fails on its
// first request, both say slurmrestd is unreachable, and no job changed.
func TestLab_SlurmrestdStoppedMidCycle(t *testing.T) {
	env := lab.Get(t)
	ctx := t.Context()
	name := tag(t)
	ids := []int64{
		env.Submit(t, "alice", "-J", name, "--begin=now+1hour", "-t", "5", "--wrap", "sleep 1"),
		env.Submit(t, "carol", "-J", name, "--begin=now+1hour", "-t", "5", "--wrap", "sleep 1"),
	}
	c := labClient(t, env, func(cfg *Config) {
		cfg.ReadAttempts, cfg.RetryBase, cfg.RetryMax, cfg.RequestTimeout = 3, 100*time.Millisecond, 200*time.Millisecond, 5*time.Second
	})
	cl, err := c.Read(ctx)
	if err != nil {
		t.Fatal(err)
	}
	w, err := NewWriter(WriterConfig{Mode: ModeRESTPriority, Range: policy.PriorityRange()}, c, nil)
	if err != nil {
		t.Fatal(err)
	}
	tried := map[int64]int64{ids[0]: 777777, ids[1]: 777776}

	restart := stopRestd(t, env, c)
	cl2, rerr := c.Read(ctx)
	rep, werr := w.Write(ctx, cl.Jobs, tried)
	restart()

	if cl2 != nil || !errors.Is(rerr, ErrUnreachable) {
		t.Errorf("Read with slurmrestd stopped: %v, %v; want nil and ErrUnreachable (did another test restart slurmrestd meanwhile?)", cl2 != nil, rerr)
	}
	if !errors.Is(werr, ErrUnreachable) || len(rep.Applied) != 0 || len(rep.Failed) != 2 || rep.Calls != 1 {
		t.Errorf("Write with slurmrestd stopped: %v; applied %d, failed %d, calls %d", werr, len(rep.Applied), len(rep.Failed), rep.Calls)
	}
	t.Logf("read error: %v", rerr)
	t.Logf("write error: %v", werr)
	assertNotWritten(t, env, tried)
	if _, err := c.Read(ctx); err != nil {
		t.Errorf("read after restart: %v", err)
	}
}

// TestLab_BadToken: a token slurmctld rejects, an expired one and a
// malformed one each give their own clear error, on reads and on writes,
// none shows the token, and no job changes.
func TestLab_BadToken(t *testing.T) {
	env := lab.Get(t)
	ctx := t.Context()
	id := env.Submit(t, "bob", "-J", tag(t), "--begin=now+1hour", "-t", "5", "--wrap", "sleep 1")
	good := labClient(t, env, nil)
	cl, err := good.Read(ctx)
	if err != nil {
		t.Fatal(err)
	}
	out := env.Run(t, "", "scontrol", "token", "username="+env.RESTUser, "lifespan=1")
	expired := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(out), "SLURM_JWT="))
	time.Sleep(2 * time.Second)

	for _, tc := range []struct {
		name string
		tok  string
		want error
	}{
		{"signature slurmctld rejects", corrupt(env.Token), ErrTokenRejected},
		{"expired", expired, ErrToken},
		{"not a JWT", "not-a-token", ErrToken},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// The version is pinned: 22.05 serves /openapi/v3 without
			// checking the token, so negotiation would not exercise it.
			c, err := New(ctx, Config{URL: env.RESTURL, User: env.RESTUser, Token: StaticToken(tc.tok), Version: good.Version(),
				RetryBase: 50 * time.Millisecond, RetryMax: 100 * time.Millisecond}, nil)
			if err != nil {
				t.Fatal(err)
			}
			want := tc.want
			if want == ErrTokenRejected && strings.HasPrefix(good.Release(), "23.11.") {
				// 23.11 answers a token slurmdbd refuses as it answers
				// slurmdbd being down (TestClient_Slurm2311DBConnect).
				want = ErrServer
			}
			_, err = c.Read(ctx)
			if !errors.Is(err, want) {
				t.Fatalf("read: %v, want %v", err, want)
			}
			if strings.Contains(err.Error(), tc.tok) {
				t.Errorf("read error shows the token: %v", err)
			}
			t.Logf("read: %v", err)
			w, err := NewWriter(WriterConfig{Mode: ModeRESTPriority, Range: policy.PriorityRange()}, c, nil)
			if err != nil {
				t.Fatal(err)
			}
			rep, err := w.Write(ctx, cl.Jobs, map[int64]int64{id: 555555})
			if !errors.Is(err, want) || len(rep.Applied) != 0 {
				t.Errorf("write: %v, applied %d; want %v and nothing applied", err, len(rep.Applied), want)
			}
		})
	}
	assertNotWritten(t, env, map[int64]int64{id: 555555})
}

// TestLab_RefusedJobFailsAlone: between the read and the write the first
// job is cancelled. Slurm refuses its update; the Writer reports that job
// alone as failed, writes the other two, and reading them back finds the
// priorities it wrote.
func TestLab_RefusedJobFailsAlone(t *testing.T) {
	env := lab.Get(t)
	ctx := t.Context()
	name := tag(t)
	var ids []int64
	for _, u := range []string{"alice", "bob", "carol"} {
		ids = append(ids, env.Submit(t, u, "-J", name, "--begin=now+1hour", "-t", "5", "--wrap", "sleep 1"))
	}
	c := labClient(t, env, nil)
	cl, err := c.Read(ctx)
	if err != nil {
		t.Fatal(err)
	}
	env.Run(t, "", "scancel", strconv.FormatInt(ids[0], 10))
	if !waitFor(20*time.Second, func() bool { return squeue(t, env, ids[:1])[ids[0]][0] != "PENDING" }) {
		t.Fatalf("job %d still pending after scancel", ids[0])
	}
	w, err := NewWriter(WriterConfig{Mode: ModeRESTPriority, Range: policy.PriorityRange()}, c, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := map[int64]int64{ids[0]: 900003, ids[1]: 900002, ids[2]: 900001}
	rep, err := w.Write(ctx, cl.Jobs, want)
	t.Logf("write: %v", err)
	if !errors.Is(err, ErrSlurm) {
		t.Fatalf("Write: %v, want an error carrying Slurm's refusal", err)
	}
	if len(rep.Applied) != 2 || len(rep.Failed) != 1 || rep.Failed[0].JobID != ids[0] {
		t.Errorf("applied %v, failed %v; want the cancelled job alone failed", rep.Applied, rep.Failed)
	}
	if rep.ReadBack.Checked != 2 || len(rep.ReadBack.Mismatches) != 0 || w.Stopped() != nil {
		t.Errorf("read back %+v, stopped %v; want both written jobs checked and holding what was written", rep.ReadBack, w.Stopped())
	}
	out := env.Run(t, "", "squeue", "-h", "-j", idList(ids[1:]), "-o", "%i=%Q")
	for _, f := range strings.Fields(out) {
		id, prio, _ := strings.Cut(f, "=")
		n, _ := strconv.ParseInt(id, 10, 64)
		if p, _ := strconv.ParseInt(prio, 10, 64); p != want[n] {
			t.Errorf("job %d has priority %d, want %d", n, p, want[n])
		}
	}
	env.Run(t, "", "scancel", idList(ids[1:]))
}

// TestLab_AdminPriorityHandBack checks what ModeRESTPriority's doc claims:
// an admin priority freezes the job (a site factor no longer moves it)
// until scontrol hold + release, after which multifactor manages it again.
// The hold here is the test's, on its own job; the Writer never holds.
func TestLab_AdminPriorityHandBack(t *testing.T) {
	env := lab.Get(t)
	ctx := t.Context()
	id := env.Submit(t, "carol", "-J", tag(t), "--begin=now+1hour", "-t", "5", "--wrap", "sleep 1")
	c := labClient(t, env, nil)
	cl, err := c.Read(ctx)
	if err != nil {
		t.Fatal(err)
	}
	w, err := NewWriter(WriterConfig{Mode: ModeRESTPriority, Range: policy.PriorityRange()}, c, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(ctx, cl.Jobs, map[int64]int64{id: 99999}); err != nil {
		t.Fatal(err)
	}
	prio := func() string { return squeuePriority(t, env, []int64{id}) }
	sid := strconv.FormatInt(id, 10)
	if got := prio(); got != sid+"=99999" {
		t.Fatalf("after the admin priority: %s", got)
	}
	env.Run(t, "", "scontrol", "update", "jobid="+sid, "sitefactor=777")
	if got := prio(); got != sid+"=99999" {
		t.Errorf("a site factor moved a frozen priority: %s", got)
	}
	env.Run(t, "", "scontrol", "hold", sid)
	env.Run(t, "", "scontrol", "release", sid)
	released := prio()
	env.Run(t, "", "scontrol", "update", "jobid="+sid, "sitefactor=778")
	moved := prio()
	if released == sid+"=99999" || moved == released {
		t.Errorf("after hold+release: %s, then site factor +1: %s; want multifactor back in charge", released, moved)
	}
	t.Logf("admin 99999 -> released %s -> site factor +1 %s", released, moved)
}

// TestLab_ReadsDeadline: a job submitted with sbatch --deadline is read
// with that deadline; a job without one has none.
func TestLab_ReadsDeadline(t *testing.T) {
	env := lab.Get(t)
	name := tag(t)
	before := time.Now()
	with := env.Submit(t, "alice", "-J", name, "--begin=now+1hour", "--deadline=now+3hours", "-t", "5", "--wrap", "sleep 1")
	without := env.Submit(t, "carol", "-J", name, "--begin=now+1hour", "-t", "5", "--wrap", "sleep 1")
	after := time.Now()
	cl, err := labClient(t, env, nil).Read(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	got := map[int64]time.Time{}
	for _, j := range cl.Jobs {
		if j.ID == with || j.ID == without {
			got[j.ID] = j.Deadline
		}
	}
	// sbatch rounds now+3hours to the second, so the deadline is within
	// the submit window, three hours later.
	lo, hi := before.Add(3*time.Hour-time.Second), after.Add(3*time.Hour+time.Second)
	if d, ok := got[with]; !ok || d.Before(lo) || d.After(hi) {
		t.Errorf("job %d deadline %v (read: %v), want between %v and %v", with, d, ok, lo, hi)
	}
	if d, ok := got[without]; !ok || !d.IsZero() {
		t.Errorf("job %d without --deadline: deadline %v (read: %v), want none", without, d, ok)
	}
}

// TestLab_HandBackRestoresNice: what Slurm does to an admin priority and
// how Fairway undoes it. A job submitted with --nice=100 gets a
// rest-priority value: Slurm freezes the priority and resets the nice to
// 0, and a nice sent now is dropped without an error. The Writer kept the
// nice read before; HandBack (scontrol release + nice on 22.05, one REST
// update on v0.0.40+) gives the job back to multifactor with nice 100,
// after which a site factor moves its priority again.
func TestLab_HandBackRestoresNice(t *testing.T) {
	env := lab.Get(t)
	ctx := t.Context()
	id := env.Submit(t, "bob", "-J", tag(t), "--nice=100", "--begin=now+1hour", "-t", "5", "--wrap", "sleep 1")
	sid := strconv.FormatInt(id, 10)
	c := labClient(t, env, nil)
	read := func() ([]Job, *Job) {
		t.Helper()
		cl, err := c.Read(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for i := range cl.Jobs {
			if cl.Jobs[i].ID == id {
				return cl.Jobs, &cl.Jobs[i]
			}
		}
		t.Fatalf("job %d not read", id)
		return nil, nil
	}
	jobs, j := read()
	if j.Nice != 100 {
		t.Fatalf("job %d read with nice %d, want 100", id, j.Nice)
	}
	pw, err := NewWriter(WriterConfig{Mode: ModeRESTPriority, Range: policy.PriorityRange()}, c, nil)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := pw.Write(ctx, jobs, map[int64]int64{id: 99999})
	if err != nil || len(rep.Applied) != 1 || rep.Applied[0].Nice != 100 {
		t.Fatalf("rest-priority write: %v, applied %+v; want job %d with nice 100 kept", err, rep.Applied, id)
	}
	// Slurm's side: frozen at 99999, nice reset, a nice update ignored.
	env.Run(t, "", "scontrol", "update", "jobid="+sid, "nice=100")
	jobs, j = read()
	if j.Priority != 99999 || j.Nice != 0 {
		t.Fatalf("after the admin priority and a nice update: priority %d nice %d, want 99999 and 0 (Slurm's reset)", j.Priority, j.Nice)
	}
	frozen := pw.Frozen()
	if frozen[id] != (Frozen{Priority: 99999, Nice: 100}) {
		t.Fatalf("Frozen()[%d] = %+v, want priority 99999 nice 100", id, frozen[id])
	}

	// A site-factor serve takes over and hands the job back.
	sw, err := NewWriter(WriterConfig{Mode: ModeScontrolSiteFactor, Range: policy.SiteFactorRange(), Runner: ExecRunner{SlurmConf: env.SlurmConf}}, c, nil)
	if err != nil {
		t.Fatal(err)
	}
	hb, err := sw.HandBack(ctx, jobs, frozen)
	if err != nil || len(hb.Applied) != 1 {
		t.Fatalf("HandBack: %v, %+v", err, hb)
	}
	_, j = read()
	if j.Nice != 100 || j.Priority == 99999 {
		t.Fatalf("after the hand-back: priority %d nice %d, want multifactor's priority and nice 100", j.Priority, j.Nice)
	}
	released := j.Priority
	env.Run(t, "", "scontrol", "update", "jobid="+sid, "sitefactor=777")
	if _, j = read(); j.Priority == released {
		t.Errorf("a site factor did not move the handed-back priority %d", released)
	}
	t.Logf("nice 100 -> admin 99999 (nice 0) -> handed back at %d (nice %d) -> site factor 777: %d", released, 100, j.Priority)
	// A second hand-back finds nothing of Fairway's left.
	hb, err = sw.HandBack(ctx, jobs, frozen)
	if err != nil || len(hb.Applied) != 0 {
		t.Errorf("second HandBack: %v, %+v; want nothing handed back", err, hb)
	}
}

// TestLab_CancelledWhilePendingNeverStarted: a job cancelled while it waited
// for resources is listed by slurmctld (MinJobAge) with start = end and no
// nodes. Read must give it no start: serve stores finished jobs it reads
// into the history, and a start would make it a 0 s run the predictors
// learn from.
func TestLab_CancelledWhilePendingNeverStarted(t *testing.T) {
	env := lab.Get(t)
	name := tag(t)
	blocker := env.Submit(t, "bob", "-J", name, "-p", env.Partition, "-w", "gpu1", "--gres=gpu:4", "-t", "2", "--wrap", "sleep 120")
	env.WaitState(t, blocker, time.Minute, "RUNNING")
	id := env.Submit(t, "bob", "-J", name, "-p", env.Partition, "-w", "gpu1", "--gres=gpu:1", "-t", "1", "--wrap", "true")
	env.Run(t, "", "scancel", strconv.FormatInt(id, 10))
	env.WaitState(t, id, time.Minute, "CANCELLED")
	env.Run(t, "", "scancel", strconv.FormatInt(blocker, 10))
	cl, err := labClient(t, env, nil).Read(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	var found bool
	for _, j := range cl.Jobs {
		if j.ID != id {
			continue
		}
		found = true
		if j.State != policy.StateCancelled || !j.Start.IsZero() || j.End.IsZero() {
			t.Errorf("job %d: %s, start %v, end %v; want CANCELLED with an end and no start", id, j.State, j.Start, j.End)
		}
	}
	if !found {
		t.Fatalf("job %d is not in slurmctld's list", id)
	}
}
