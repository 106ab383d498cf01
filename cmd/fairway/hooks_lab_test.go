package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/fairway-hpc/fairway/contrib/lab"
	"github.com/jackc/pgx/v5"
)

// The lab tests run the built fairway binary as the lab's real slurmd
// Prolog/Epilog (contrib/lab/lab points both at a wrapper that runs
// $LAB/bin/fairway). NVML is absent in the lab, so they exercise that path:
// the hooks exit 0 and still record the job's GPUs. Each test gives its own
// jobs their own settings (a throwaway database, a spool) through the
// wrapper's per-job config files, so other people's jobs in the shared lab
// are unaffected.

// hookLab is one test's view of the lab's hooks.
type hookLab struct {
	e    *lab.Env
	bin  string // the built binary
	dir  string // this test's spool, state and log, under the lab
	db   string // URL of a throwaway, migrated database
	conn *pgx.Conn
}

func newHookLab(t *testing.T) *hookLab {
	t.Helper()
	return newHookLabTags(t)
}

// newHookLabTags is newHookLab with the binary built with build tags.
func newHookLabTags(t *testing.T, tags ...string) *hookLab {
	t.Helper()
	e := lab.Get(t)
	if os.Geteuid() != 0 {
		t.Fatal("the hook lab tests write root-only config files: run as root")
	}
	h := &hookLab{e: e, bin: buildFairway(t, tags...)}
	installHook(t, e, h.bin)
	h.dir = filepath.Join(e.Dir, "fairway", fmt.Sprintf("test-%d", time.Now().UnixNano()))
	if err := os.MkdirAll(h.dir, 0o700); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(h.dir) })
	h.db, h.conn = throwawayDB(t, e)
	return h
}

// buildFairway builds this package's binary with the given build tags and
// the Makefile's (TAGS), so the hooks tested are the hooks installed.
func buildFairway(t testing.TB, tags ...string) string {
	t.Helper()
	tags = append([]string{"urfave_cli_no_docs"}, tags...)
	out := filepath.Join(t.TempDir(), "fairway")
	// go test puts GOROOT/bin first in PATH.
	cmd := exec.Command("go", "build", "-tags", strings.Join(tags, ","), "-o", out, ".")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=1")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, b)
	}
	return out
}

// installHook puts bin at $LAB/bin/fairway (atomically: slurmd may run it
// any moment) and puts back what was there when the test ends.
func installHook(t *testing.T, e *lab.Env, bin string) {
	t.Helper()
	dst := filepath.Join(e.Dir, "bin", "fairway")
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		t.Fatal(err)
	}
	prev := dst + fmt.Sprintf(".prev-%d", os.Getpid())
	had := os.Rename(dst, prev) == nil
	if had {
		// Keep a working hook in place while the copy below happens.
		if err := copyFile(prev, dst, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	tmp := dst + ".tmp"
	if err := copyFile(bin, tmp, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, dst); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if had {
			os.Rename(prev, dst)
		} else {
			os.Remove(dst)
		}
	})
}

func copyFile(src, dst string, mode os.FileMode) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, mode)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// throwawayDB creates a migrated database for one test.
func throwawayDB(t testing.TB, e *lab.Env) (string, *pgx.Conn) {
	t.Helper()
	ctx := context.Background()
	url := e.Database(t)
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(ctx) })
	return url, conn
}

// config writes a hook config file and returns its path.
func (h *hookLab) config(t *testing.T, name, dbURL string, extra ...string) string {
	t.Helper()
	lines := []string{
		"FAIRWAY_SPOOL_DIR=" + filepath.Join(h.dir, "spool"),
		"FAIRWAY_STATE_DIR=" + filepath.Join(h.dir, "state"),
		"FAIRWAY_LOG_FILE=" + filepath.Join(h.dir, "hooks.log"),
		"FAIRWAY_SHARDS_PER_GPU=4",
		"FAIRWAY_DATABASE_URL=" + dbURL,
		// The lab's scontrol and squeue (a prefix's, not /usr/bin's).
		"FAIRWAY_SCONTROL=" + h.e.Scontrol,
	}
	p := filepath.Join(h.dir, name)
	if err := os.WriteFile(p, []byte(strings.Join(append(lines, extra...), "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// run submits a held job as user, gives its hooks the config file cfg,
// releases it and returns its id and output file.
func (h *hookLab) run(t *testing.T, user, cfg string, sbatchArgs ...string) (int64, string) {
	t.Helper()
	return h.runScript(t, user, cfg, "sleep 1", sbatchArgs...)
}

// runScript is run with the job's script after its first line, which
// prints the node and GPUs for jobSaw.
func (h *hookLab) runScript(t *testing.T, user, cfg, script string, sbatchArgs ...string) (int64, string) {
	t.Helper()
	name := fmt.Sprintf("fw-hooks-%d", time.Now().UnixNano())
	out := filepath.Join(h.e.JobDir, name+".out")
	args := append([]string{"--hold", "-J", name, "-o", out}, sbatchArgs...)
	args = append(args, "--wrap", "echo \"fwtest node=$SLURMD_NODENAME gpus=$SLURM_JOB_GPUS\"\n"+script)
	id := h.e.Submit(t, user, args...)
	t.Cleanup(func() { os.Remove(out) })
	perJob := filepath.Join(filepath.Dir(h.e.SlurmConf), "fairway-hooks.d", strconv.FormatInt(id, 10)+".env")
	if err := copyFile(cfg, perJob, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Remove(perJob) })
	h.e.Run(t, "", "scontrol", "release", strconv.FormatInt(id, 10))
	return id, out
}

var jobOutput = regexp.MustCompile(`fwtest node=(\S+) gpus=(\S*)`)

// jobSaw returns the node and GPUs a finished job printed.
func jobSaw(t *testing.T, out string) (string, []int) {
	t.Helper()
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	m := jobOutput.FindStringSubmatch(string(b))
	if m == nil {
		t.Fatalf("job output %q lacks its node and GPUs", b)
	}
	var gpus []int
	for _, s := range strings.Split(m[2], ",") {
		n, err := strconv.Atoi(s)
		if err != nil {
			t.Fatalf("job output %q: GPU %q", b, s)
		}
		gpus = append(gpus, n)
	}
	return m[1], gpus
}

// usageRow is one job_gpu_usage row as the tests check it.
type usageRow struct {
	Node      string
	GPU       int
	Shards    int
	HasStart  bool
	Measured  bool // any NVML measurement present
	StartedAt time.Time
	EndedAt   time.Time
}

func (h *hookLab) rows(t *testing.T, jobID int64) []usageRow {
	t.Helper()
	rows, err := h.conn.Query(context.Background(), `
SELECT node, gpu_minor, shards, started_at IS NOT NULL, coalesce(started_at, ended_at), ended_at,
	util_avg_pct IS NOT NULL OR mem_peak_mb IS NOT NULL OR energy_joules IS NOT NULL
FROM job_gpu_usage WHERE cluster = $1 AND job_id = $2 ORDER BY gpu_minor`, h.e.Cluster, jobID)
	if err != nil {
		t.Fatal(err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (usageRow, error) {
		var u usageRow
		err := r.Scan(&u.Node, &u.GPU, &u.Shards, &u.HasStart, &u.StartedAt, &u.EndedAt, &u.Measured)
		return u, err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// waitRows waits until job has n usage rows.
func (h *hookLab) waitRows(t *testing.T, jobID int64, n int) []usageRow {
	t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for {
		got := h.rows(t, jobID)
		if len(got) >= n || time.Now().After(deadline) {
			if len(got) != n {
				log, _ := os.ReadFile(filepath.Join(h.dir, "hooks.log"))
				t.Fatalf("job %d has %d usage rows, want %d; hook log:\n%s", jobID, len(got), n, log)
			}
			return got
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// spooled lists the spool's record files.
func (h *hookLab) spooled(t *testing.T) []string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(h.dir, "spool", "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(m)
	return m
}

// checkHealthyLab fails when a hook exited non-zero for one of ids or a
// lab node is drained.
func (h *hookLab) checkHealthyLab(t *testing.T, ids ...int64) {
	t.Helper()
	b, _ := os.ReadFile(filepath.Join(h.e.Dir, "log", "fairway-hooks.log"))
	for _, id := range ids {
		if bytes.Contains(b, []byte(fmt.Sprintf(" job %d node ", id))) {
			t.Errorf("a hook of job %d exited non-zero (see %s/log/fairway-hooks.log)", id, h.e.Dir)
		}
	}
	nodes := h.e.Run(t, "", "sinfo", "-h", "-N", "-o", "%N %t")
	if strings.Contains(nodes, "drain") {
		t.Errorf("lab nodes drained:\n%s", nodes)
	}
}

// TestLab_HooksRecordUsageOfTwoUsers: a whole-GPU job and a shard job from
// users of two accounts run through the real slurmd hooks; each GPU of each
// job has one usage record naming the GPUs the job saw.
func TestLab_HooksRecordUsageOfTwoUsers(t *testing.T) {
	h := newHookLab(t)
	cfg := h.config(t, "hooks.env", h.db)
	whole, wholeOut := h.run(t, "alice", cfg, "--gres=gpu:2")
	shard, shardOut := h.run(t, "carol", cfg, "--gres=shard:3")
	for _, id := range []int64{whole, shard} {
		h.e.WaitState(t, id, 5*time.Minute, "COMPLETED")
	}
	for _, tt := range []struct {
		id     int64
		out    string
		shards int
	}{{whole, wholeOut, 0}, {shard, shardOut, 3}} {
		node, gpus := jobSaw(t, tt.out)
		rows := h.waitRows(t, tt.id, len(gpus))
		for i, r := range rows {
			if r.Node != node || r.GPU != gpus[i] || r.Shards != tt.shards || !r.HasStart || r.Measured || !r.EndedAt.After(r.StartedAt) {
				t.Errorf("job %d row %+v: want node %s GPU %d shards %d, a start before the end, no NVML measurements", tt.id, r, node, gpus[i], tt.shards)
			}
		}
	}
	// The epilog removes its spool files after the database commits: the
	// rows can show before the files go.
	left := h.spooled(t)
	for deadline := time.Now().Add(time.Minute); len(left) != 0 && time.Now().Before(deadline); left = h.spooled(t) {
		time.Sleep(100 * time.Millisecond)
	}
	if len(left) != 0 {
		t.Errorf("spool still holds %v a minute after the jobs' rows were stored", left)
	}
	h.checkHealthyLab(t, whole, shard)
}

// closedPort returns a local port nothing listens on.
func closedPort(t *testing.T) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	return port
}

// flush runs `fairway spool flush` with config cfg and returns what it said.
func (h *hookLab) flush(t *testing.T, cfg string) string {
	t.Helper()
	cmd := exec.Command(h.bin, "spool", "flush", "--config", cfg)
	cmd.Env = []string{"PATH=/usr/bin:/bin"} // as a systemd timer runs it: the settings come from cfg
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("spool flush: %v\n%s", err, out)
	}
	return string(out)
}

// TestLab_HooksDatabaseUnreachableThenFlush: with the database unreachable
// (the job's hooks point at a closed port; the shared PostgreSQL keeps
// running) the record is spooled, and `fairway spool flush` stores it
// once the database is reachable again, exactly once.
func TestLab_HooksDatabaseUnreachableThenFlush(t *testing.T) {
	h := newHookLab(t)
	down := h.config(t, "down.env", fmt.Sprintf("postgres://fairway@127.0.0.1:%d/fairway?sslmode=disable&connect_timeout=2", closedPort(t)))
	up := h.config(t, "up.env", h.db)
	id, out := h.run(t, "bob", down, "--gres=gpu:1")
	h.e.WaitState(t, id, 5*time.Minute, "COMPLETED")
	_, gpus := jobSaw(t, out)
	deadline := time.Now().Add(60 * time.Second)
	for len(h.spooled(t)) < len(gpus) && time.Now().Before(deadline) {
		time.Sleep(250 * time.Millisecond)
	}
	spooled := h.spooled(t)
	if len(spooled) != len(gpus) {
		t.Fatalf("spool holds %v, want %d records", spooled, len(gpus))
	}
	if rows := h.rows(t, id); len(rows) != 0 {
		t.Fatalf("records reached a database the hooks could not reach: %+v", rows)
	}
	log, _ := os.ReadFile(filepath.Join(h.dir, "hooks.log"))
	if !bytes.Contains(log, []byte("database unreachable")) {
		t.Errorf("hook log does not say the database was unreachable:\n%s", log)
	}

	if got := h.flush(t, up); !strings.Contains(got, fmt.Sprintf("stored %d usage records", len(gpus))) {
		t.Errorf("flush said %q", got)
	}
	if rows := h.rows(t, id); len(rows) != len(gpus) {
		t.Errorf("%d rows after the flush, want %d", len(rows), len(gpus))
	}
	if got := h.flush(t, up); !strings.Contains(got, "stored 0 usage records") {
		t.Errorf("second flush said %q", got)
	}
	if rows := h.rows(t, id); len(rows) != len(gpus) {
		t.Errorf("%d rows after a second flush, want %d", len(rows), len(gpus))
	}
	h.checkHealthyLab(t, id)
}

// blackhole is a TCP server that accepts connections and never answers: a
// database write to it hangs.
type blackhole struct {
	l        net.Listener
	mu       sync.Mutex
	conns    []net.Conn
	accepted chan struct{}
}

func newBlackhole(t *testing.T) *blackhole {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	b := &blackhole{l: l, accepted: make(chan struct{}, 16)}
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			b.mu.Lock()
			b.conns = append(b.conns, c)
			b.mu.Unlock()
			b.accepted <- struct{}{}
		}
	}()
	t.Cleanup(func() {
		l.Close()
		b.mu.Lock()
		defer b.mu.Unlock()
		for _, c := range b.conns {
			c.Close()
		}
	})
	return b
}

// epilogPID finds the fairway epilog slurmd runs for job id.
func epilogPID(bin string, id int64) (int, bool) {
	procs, _ := filepath.Glob("/proc/[0-9]*")
	want := []byte("SLURM_JOB_ID=" + strconv.FormatInt(id, 10) + "\x00")
	for _, p := range procs {
		cmdline, err := os.ReadFile(p + "/cmdline")
		if err != nil {
			continue
		}
		args := strings.Split(string(cmdline), "\x00")
		if len(args) < 2 || args[0] != bin || args[1] != "epilog" {
			continue
		}
		env, err := os.ReadFile(p + "/environ")
		if err != nil || !bytes.Contains(append([]byte{0}, env...), append([]byte{0}, want...)) {
			continue
		}
		pid, _ := strconv.Atoi(filepath.Base(p))
		return pid, true
	}
	return 0, false
}

// TestLab_EpilogKilledBetweenSpoolAndDatabase: kill -9 of the epilog after
// it spooled the record but before the database write loses nothing, and a
// crash after the database committed but before the spool file was removed
// duplicates nothing.
func TestLab_EpilogKilledBetweenSpoolAndDatabase(t *testing.T) {
	h := newHookLab(t)
	hole := newBlackhole(t)
	port := hole.l.Addr().(*net.TCPAddr).Port
	hang := h.config(t, "hang.env", fmt.Sprintf("postgres://fairway@127.0.0.1:%d/fairway?sslmode=disable", port),
		"FAIRWAY_EPILOG_TIMEOUT=120s", "FAIRWAY_DATABASE_TIMEOUT=120s")
	up := h.config(t, "up.env", h.db)
	id, out := h.run(t, "alice", hang, "--gres=gpu:1")

	// Wait until the epilog has spooled the record and is inside the
	// database write (the blackhole accepted its connection).
	deadline := time.Now().Add(5 * time.Minute)
	var pid int
	for {
		if time.Now().After(deadline) {
			t.Fatalf("the epilog of job %d never reached the database write", id)
		}
		select {
		case <-hole.accepted:
			if p, ok := epilogPID(filepath.Join(h.e.Dir, "bin", "fairway"), id); ok && len(h.spooled(t)) == 1 {
				pid = p
			}
		case <-time.After(200 * time.Millisecond):
		}
		if pid != 0 {
			break
		}
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatalf("kill -9 %d: %v", pid, err)
	}
	h.e.WaitState(t, id, 2*time.Minute, "COMPLETED")
	_, gpus := jobSaw(t, out)
	spooled := h.spooled(t)
	if len(spooled) != 1 || len(gpus) != 1 {
		t.Fatalf("after the kill: spool %v, job GPUs %v; want one record for one GPU", spooled, gpus)
	}
	saved, err := os.ReadFile(spooled[0])
	if err != nil {
		t.Fatal(err)
	}

	if got := h.flush(t, up); !strings.Contains(got, "stored 1 usage records") {
		t.Errorf("flush said %q", got)
	}
	rows := h.rows(t, id)
	if len(rows) != 1 || rows[0].GPU != gpus[0] {
		t.Fatalf("rows %+v, want one for GPU %d", rows, gpus[0])
	}
	// The other crash window: committed, but the spool file not removed.
	if err := os.WriteFile(spooled[0], saved, 0o600); err != nil {
		t.Fatal(err)
	}
	if got := h.flush(t, up); !strings.Contains(got, "stored 1 usage records") {
		t.Errorf("re-flush said %q", got)
	}
	if rows := h.rows(t, id); len(rows) != 1 {
		t.Errorf("%d rows after storing the same record twice, want 1", len(rows))
	}
	if left := h.spooled(t); len(left) != 0 {
		t.Errorf("spool still holds %v", left)
	}
	// The lab's wrapper saw its fairway epilog die of SIGKILL (128+9), and
	// still exited 0: the node stays up.
	b, _ := os.ReadFile(filepath.Join(h.e.Dir, "log", "fairway-hooks.log"))
	if !bytes.Contains(b, []byte(fmt.Sprintf("epilog job %d node ", id))) || !bytes.Contains(b, []byte(fmt.Sprintf("job %d node %s exited 137", id, rows[0].Node))) {
		t.Errorf("the lab hook log does not show job %d's epilog killed:\n%s", id, b)
	}
	h.checkHealthyLab(t) // not for id: its epilog was killed on purpose
}
