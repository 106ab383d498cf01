package serve

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fairway-hpc/fairway/policy/rewrite"
)

// capturedRequests reads a testdata/job_desc file (contrib/lab/lab
// capture-job-desc): the sbatch arguments of each request and a Lua
// expression for the job_desc the release handed job_submit.lua.
func capturedRequests(t *testing.T, file string) (args []string, descs []string) {
	t.Helper()
	path, err := filepath.Abs(filepath.Join("testdata", "job_desc", file))
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range regexp.MustCompile(`(?m)^\t\{ args = "([^"]*)", desc = `).FindAllStringSubmatch(string(b), -1) {
		args = append(args, m[1])
		descs = append(descs, fmt.Sprintf("dofile(%q)[%d].desc", path, len(descs)+1))
	}
	if len(args) == 0 {
		t.Fatalf("%s: no captured requests", path)
	}
	return args, descs
}

// TestJobSubmitLua_CapturedRequests runs the script on the job_desc records
// that Slurm 22.05.8 and 26.05.3 really passed it (captured on the lab, in
// testdata/job_desc), with a table that shares every one of them. Each
// one-GPU request is turned into shards in the form that release's parser
// reads (26.05 rejected "gres:shard:N" with "Invalid Trackable RESource
// (TRES) specification", 22.05 wants it); 26.05's `-c N`, which it passes as
// tres_per_task=cpu=N, no longer keeps a job from being shared; requests
// that name GPUs elsewhere (CPUs or memory per GPU, GPUs per task) and
// elastic jobs are left as they came. Every job is accepted, and the user is
// told about each rewrite.
func TestJobSubmitLua_CapturedRequests(t *testing.T) {
	// The requests of contrib/lab/lab's CAPTURE_REQUESTS and what becomes of
	// them; "P" is the release's GRES prefix, "=" means left as submitted.
	want := map[string]struct{ node, job string }{
		"--gres=gpu:1":                               {"Pshard:2", "="},
		"--gpus=1":                                   {"Pshard:2", ""},
		"--gres=gpu:h100:1":                          {"Pshard:h100:2", "="},
		"--gpus=h100:1":                              {"Pshard:h100:2", ""},
		"--gres=gpu:1 -c 2":                          {"Pshard:2", "="},
		"--gpus=1 -c 4":                              {"Pshard:2", ""},
		"--gpus-per-node=1":                          {"Pshard:2", "="},
		"--gres=gpu:1 -N 1":                          {"Pshard:2", "="},
		"--gres=gpu:2":                               {"=", "="},
		"--gpus-per-task=1 -n 1":                     {"=", "="},
		"--gres=gpu:1 -n 2":                          {"Pshard:2", "="},
		"--gres=gpu:1 --cpus-per-gpu=2":              {"=", "="},
		"--gres=gpu:1 --mem-per-gpu=1000":            {"=", "="},
		"--gres=gpu:1 --mem=2000":                    {"Pshard:2", "="},
		"--gres=gpu:1 --comment=fairway:elastic=1-4": {"=", "="},
	}
	for _, rel := range []struct{ file, prefix string }{{"slurm-22.05.8.lua", "gres:"}, {"slurm-26.05.3.lua", "gres/"}} {
		t.Run(rel.file, func(t *testing.T) {
			args, descs := capturedRequests(t, rel.file)
			var rules []rewrite.ShareRule
			for i := range args {
				rules = append(rules, rewrite.ShareRule{User: "alice", Name: fmt.Sprintf("capture%d", i+1), Shards: 2, Reason: "test"})
			}
			table := filepath.Join(t.TempDir(), "fairway-rewrite.table")
			if err := writeTable(table, time.Now(), 15*time.Minute, []string{"gpu"}, rules); err != nil {
				t.Fatal(err)
			}
			// The fields as captured, to tell "left as submitted".
			before := runJobSubmitEnv(t, []string{"FAIRWAY_REWRITE_TABLE=" + filepath.Join(t.TempDir(), "none")}, casesOf(descs))
			r := runJobSubmitEnv(t, []string{"FAIRWAY_REWRITE_TABLE=" + table}, casesOf(descs))
			if len(r.lines) != len(args) || len(before.lines) != len(args) {
				t.Fatalf("lua printed %d and %d lines for %d requests: %q", len(before.lines), len(r.lines), len(args), r.lines)
			}
			if r.errLog != "" {
				t.Errorf("the script logged errors: %s", r.errLog)
			}
			rewritten := 0
			for i, a := range args {
				w, ok := want[a]
				if !ok {
					t.Fatalf("request %q has no expectation: add it to the test", a)
				}
				f0 := strings.Split(before.lines[i], "|")
				node, job := f0[1], f0[2]
				if w.node != "=" {
					node = strings.Replace(w.node, "P", rel.prefix, 1)
					rewritten++
				}
				if w.job != "=" {
					job = w.job
				}
				// tres_per_task (26.05's cpu=N) is kept as it came.
				if wantLine := "0|" + node + "|" + job + "|" + f0[3]; r.lines[i] != wantLine {
					t.Errorf("%s: got %q, want %q", a, r.lines[i], wantLine)
				}
			}
			if n := strings.Count(r.user, "GPU shard(s) instead of a whole GPU"); n != rewritten {
				t.Errorf("%d messages to the user for %d rewritten jobs:\n%s", n, rewritten, r.user)
			}
		})
	}
}

func casesOf(descs []string) []luaCase {
	cs := make([]luaCase, len(descs))
	for i, d := range descs {
		cs[i] = luaCase{desc: d}
	}
	return cs
}

// TestJobSubmitLua_NewestTable: without FAIRWAY_REWRITE_TABLE the script
// uses the newest of the tables in its two places. It used to take the
// first it found, so a stale table left in /var/lib/fairway hid the one
// serve kept writing beside slurm.conf (the lab's), and no job was shared.
// Which table is in use, and why none is, is logged at info, once per
// change.
func TestJobSubmitLua_NewestTable(t *testing.T) {
	state, conf := t.TempDir(), t.TempDir()
	env := []string{"FAIRWAY_REWRITE_TABLE=", "FAIRWAY_TEST_STATE_DIR=" + state, "SLURM_CONF=" + filepath.Join(conf, "slurm.conf")}
	job := []luaCase{{user: "alice", jobName: "train", partition: "gpu", tresPerNode: "gres:gpu:1"}}
	job = append(job, job[0]) // a second submission: nothing new to log
	rule := func(n int) []rewrite.ShareRule {
		return []rewrite.ShareRule{{User: "alice", Name: "train", Shards: n, Reason: "test"}}
	}
	stale := filepath.Join(state, "fairway-rewrite.table")
	if err := writeTable(stale, time.Now().Add(-2*time.Hour), 15*time.Minute, []string{"gpu"}, rule(3)); err != nil {
		t.Fatal(err)
	}
	fresh := filepath.Join(conf, "fairway-rewrite.table")
	if err := writeTable(fresh, time.Now(), 15*time.Minute, []string{"gpu"}, rule(1)); err != nil {
		t.Fatal(err)
	}
	r := runJobSubmitEnv(t, env, job)
	if want := "0|gres:shard:1|nil|nil"; len(r.lines) != 2 || r.lines[0] != want || r.lines[1] != want {
		t.Errorf("stale table in the state directory, fresh one beside slurm.conf: got %q, want %q twice", r.lines, want)
	}
	if want := "fairway: rewrite table " + fresh + " in use\n"; !strings.HasPrefix(r.info, want) || strings.Count(r.info, "rewrite table") != 1 {
		t.Errorf("info log %q, want %q once", r.info, want)
	}

	// Only the stale one: it is used, and said to be stale.
	if err := os.Remove(fresh); err != nil {
		t.Fatal(err)
	}
	r = runJobSubmitEnv(t, env, job)
	if r.lines[0] != "0|gres:gpu:1|nil|nil" || !strings.Contains(r.info, stale+" is older than its max_age") || strings.Count(r.info, "\n") != 1 {
		t.Errorf("only a stale table: got %q, info %q", r.lines, r.info)
	}

	// None, and a malformed one: said at info.
	if err := os.Remove(stale); err != nil {
		t.Fatal(err)
	}
	r = runJobSubmitEnv(t, env, job)
	if !strings.Contains(r.info, "no rewrite table in use") || !strings.Contains(r.info, "no table at "+stale+" or "+fresh) {
		t.Errorf("no table: info %q", r.info)
	}
	if err := os.WriteFile(fresh, []byte("fairway-rewrite\t1\nshard\talice\tmany\ttrain\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r = runJobSubmitEnv(t, env, job)
	if !strings.Contains(r.info, "table "+fresh+" ignored: line 2: bad shard record") || r.lines[0] != "0|gres:gpu:1|nil|nil" {
		t.Errorf("malformed table: got %q, info %q", r.lines, r.info)
	}
}

// TestJobSubmitLua_HostileRequests runs the script on the requests Slurm
// 22.05.8 and 26.05.3 really passed it (testdata/job_desc), changed the way
// a user can change them (sbatch flags, a raw RPC or slurmrestd), with a
// table that shares every captured job. A rewrite must never give a job
// more than the one GPU it asked for, nor turn a request Slurm reads
// differently (or refuses) into shards, nor make Slurm reject a job it
// would have taken; "=" is the job as submitted, "P" the release's GRES
// prefix. In the changes, P is that prefix and d the job_desc.
func TestJobSubmitLua_HostileRequests(t *testing.T) {
	long := strings.Repeat("0", 2000) // Slurm keeps tres_per_* of at most 1024 bytes
	cases := []struct {
		name, base, change string
		node, job          string
	}{
		// --ntasks-per-gpu: without a gpu request Slurm adds tasks/N whole
		// GPUs to the shards (gres_job_state_validate), or rejects the job.
		{"--ntasks-per-gpu", "--gres=gpu:1", `d.ntasks_per_tres = 2; d.num_tasks = 4`, "=", "="},
		{"--ntasks-per-gpu unset (NO_VAL16)", "--gres=gpu:1", `d.ntasks_per_tres = 65534`, "Pshard:2", "="},
		// --gpu-freq: Slurm rejects shards with a GPU frequency.
		{"--gpu-freq", "--gres=gpu:1", `d.tres_freq = "gpu:high"`, "=", "="},
		// --gpus=1 is one GPU for the whole job; shards are per node.
		{"--gpus=1 -n 8 --ntasks-per-node=1", "--gpus=1", `d.num_tasks = 8; d.ntasks_per_node = 1`, "=", "="},
		{"--gpus=1 -n 200", "--gpus=1", `d.num_tasks = 200`, "=", "="},
		{"--gpus=1 -w gpu1,gpu2", "--gpus=1", `d.req_nodes = "gpu1,gpu2"`, "=", "="},
		{"--gpus=1 -w gpu[1-2]", "--gpus=1", `d.req_nodes = "gpu[1-2]"`, "=", "="},
		{"--gpus=1 -w gpu1", "--gpus=1", `d.req_nodes = "gpu1"`, "Pshard:2", ""},
		{"--gpus=1 -n 1", "--gpus=1", `d.num_tasks = 1`, "Pshard:2", ""},
		// minimum_cpus (slurmrestd, a raw RPC) sizes the job as -n does,
		// without a task count: more CPUs than one task's spread it too.
		{"--gpus=1 minimum_cpus=256", "--gpus=1", `d.min_cpus = 256`, "=", "="},
		{"--gpus=1 -c 4 minimum_cpus=8", "--gpus=1 -c 4", `d.min_cpus = 8`, "=", "="},
		{"--gpus=1 -c 4 minimum_cpus=4", "--gpus=1 -c 4", `d.min_cpus = 4`, "Pshard:2", ""},
		{"--gpus=1 minimum_cpus unset (NO_VAL)", "--gpus=1", `d.min_cpus = 4294967294`, "Pshard:2", ""},
		{"--gres=gpu:1 -n 8 --ntasks-per-node=1 (per node already)", "--gres=gpu:1", `d.num_tasks = 8; d.ntasks_per_node = 1`, "Pshard:2", "="},
		// Counts Slurm reads otherwise than tonumber (strtoull, base 10,
		// then a size suffix), or refuses.
		{"hex count", "--gres=gpu:h100:1", `d.tres_per_node = P .. "gpu:h100:0x1"`, "=", "="},
		{"hex count past 2^64 (1 to Lua 5.3)", "--gres=gpu:h100:1", `d.tres_per_node = P .. "gpu:h100:0x10000000000000001"`, "=", "="},
		{"exponent count", "--gres=gpu:h100:1", `d.tres_per_node = P .. "gpu:h100:1e0"`, "=", "="},
		{"decimal count", "--gres=gpu:h100:1", `d.tres_per_node = P .. "gpu:h100:1.0"`, "=", "="},
		{"count with blanks", "--gres=gpu:h100:1", `d.tres_per_node = P .. "gpu:h100:\t1 "`, "=", "="},
		{"1k is 1024 GPUs, not a type", "--gres=gpu:1", `d.tres_per_node = P .. "gpu:1k"`, "=", "="},
		{"1KiB", "--gres=gpu:1", `d.tres_per_node = P .. "gpu:1KiB"`, "=", "="},
		{"empty type", "--gres=gpu:h100:1", `d.tres_per_node = P .. "gpu::1"`, "=", "="},
		{"empty count", "--gres=gpu:1", `d.tres_per_node = P .. "gpu:"`, "=", "="},
		{"leading zeros", "--gres=gpu:h100:1", `d.tres_per_node = P .. "gpu:h100:01"`, "Pshard:h100:2", "="},
		{"a type that starts with digits", "--gres=gpu:h100:1", `d.tres_per_node = P .. "gpu:2080ti"`, "Pshard:2080ti:2", "="},
		{"over Slurm's 1024 bytes", "--gres=gpu:h100:1", `d.tres_per_node = P .. "gpu:h100:` + long + `1"`, "=", "="},
		{"--gpus over Slurm's 1024 bytes", "--gpus=1", `d.tres_per_job = P .. "gpu:` + long + `1"`, "=", "="},
		// Checked and safe before: left as submitted.
		{"two gpu requests", "--gres=gpu:1", `d.tres_per_node = P .. "gpu:h100:1," .. P .. "gpu:h100:99"`, "=", "="},
		{"trailing blank", "--gres=gpu:1", `d.tres_per_node = P .. "gpu:1 "`, "=", "="},
		{"socket binding", "--gres=gpu:1", `d.tres_per_node = P .. "gpu:h100:1(S:0-1)"`, "=", "="},
		{"arabic-indic digit one", "--gres=gpu:1", `d.tres_per_node = P .. "gpu:\217\161"`, "=", "="},
		{"fullwidth digit one", "--gres=gpu:h100:1", `d.tres_per_node = P .. "gpu:h100:\239\188\145"`, "=", "="},
		{"negative", "--gres=gpu:h100:1", `d.tres_per_node = P .. "gpu:h100:-1"`, "=", "="},
		{"past 2^53", "--gres=gpu:h100:1", `d.tres_per_node = P .. "gpu:h100:9007199254740993"`, "=", "="},
		{"past 2^64", "--gres=gpu:1", `d.tres_per_node = P .. "gpu:18446744073709551617"`, "=", "="},
		{"no prefix", "--gres=gpu:1", `d.tres_per_node = "gpu:1"`, "=", "="},
		{"100 KB of colons", "--gres=gpu:1", `d.tres_per_node = P .. "gpu" .. string.rep(":", 100000)`, "=", "="},
		{"100 KB comment holding the opt-out", "--gres=gpu:1", `d.comment = string.rep("x", 100000) .. "fairway:no-rewrite"`, "=", "="},
		{"max_nodes INFINITE", "--gres=gpu:1", `d.max_nodes = 4294967295`, "=", "="},
		{"GPUs per task", "--gres=gpu:1", `d.tres_per_task = P .. "gpu=1"`, "=", "="},
		{"another user's name", "--gres=gpu:1", `d.user_name = "mallory"`, "=", "="},
		{"empty user", "--gres=gpu:1", `d.user_name = nil`, "=", "="},
	}
	for _, rel := range []struct{ file, prefix string }{{"slurm-22.05.8.lua", "gres:"}, {"slurm-26.05.3.lua", "gres/"}} {
		t.Run(rel.file, func(t *testing.T) {
			args, descs := capturedRequests(t, rel.file)
			byArgs := map[string]string{}
			var rules []rewrite.ShareRule
			for i, a := range args {
				byArgs[a] = descs[i]
				rules = append(rules, rewrite.ShareRule{User: "alice", Name: fmt.Sprintf("capture%d", i+1), Shards: 2, Reason: "test"})
			}
			table := filepath.Join(t.TempDir(), "fairway-rewrite.table")
			if err := writeTable(table, time.Now(), 15*time.Minute, []string{"gpu"}, rules); err != nil {
				t.Fatal(err)
			}
			var jobs []luaCase
			for _, c := range cases {
				base, ok := byArgs[c.base]
				if !ok {
					t.Fatalf("%s: no captured request %q", c.name, c.base)
				}
				jobs = append(jobs, luaCase{desc: fmt.Sprintf("(function() local P, d = %q, %s; %s; return d end)()", rel.prefix, base, c.change)})
			}
			before := runJobSubmitEnv(t, []string{"FAIRWAY_REWRITE_TABLE=" + filepath.Join(t.TempDir(), "none")}, jobs)
			r := runJobSubmitEnv(t, []string{"FAIRWAY_REWRITE_TABLE=" + table}, jobs)
			if len(r.lines) != len(cases) || len(before.lines) != len(cases) {
				t.Fatalf("lua printed %d and %d lines for %d requests: %q", len(before.lines), len(r.lines), len(cases), r.lines)
			}
			if r.errLog != "" {
				t.Errorf("the script logged errors: %s", r.errLog)
			}
			for i, c := range cases {
				f0 := strings.Split(before.lines[i], "|")
				node, job := f0[1], f0[2]
				if c.node != "=" {
					node = strings.Replace(c.node, "P", rel.prefix, 1)
				}
				if c.job != "=" {
					job = c.job
				}
				if want := "0|" + node + "|" + job + "|" + f0[3]; r.lines[i] != want {
					t.Errorf("%s: got %q, want %q", c.name, r.lines[i], want)
				}
			}
		})
	}
}

// TestJobSubmitLua_UntrustedTables: tables the script must not use, each in
// the state directory (with or without a good table beside slurm.conf).
// A job is left as submitted, or takes the good table's rule, and why is
// logged at info once. A table generated in the future never went stale
// and, as the newest, hid the live table; a table cut short inside its
// last record gave that record's job name cut short to another job.
func TestJobSubmitLua_UntrustedTables(t *testing.T) {
	now := time.Now()
	rules := []rewrite.ShareRule{{User: "alice", Name: "train", Shards: 3, Reason: "test"}, {User: "alice", Name: "my sweep 3", Shards: 3, Reason: "test"}}
	good := rewrite.RenderTable(now, 15*time.Minute, []string{"gpu"}, rules)
	cut := good[:len(good)-len(" 3\n")] // ends "shard\talice\t3\tmy sweep"
	if !strings.HasSuffix(string(cut), "\tmy sweep") {
		t.Fatalf("cut table ends %q", cut[len(cut)-20:])
	}
	for _, c := range []struct {
		name     string
		state    []byte // the table in the state directory
		fresh    bool   // a good table (1 shard) beside slurm.conf
		jobName  string
		wantNode string
		wantInfo string
	}{
		{"cut inside its last name", cut, false, "my sweep", "gres:gpu:1", "ignored: cut short (no newline at its end)"},
		{"cut, the other job", cut, false, "train", "gres:gpu:1", "ignored: cut short"},
		{"cut, beside a good one", cut, true, "train", "gres:shard:1", "CONF/fairway-rewrite.table in use"},
		{"generated a year ahead", rewrite.RenderTable(now.AddDate(1, 0, 0), 15*time.Minute, []string{"gpu"}, rules), false, "train", "gres:gpu:1", "s in the future (max_age 900)"},
		{"a year ahead, beside a good one", rewrite.RenderTable(now.AddDate(1, 0, 0), 15*time.Minute, []string{"gpu"}, rules), true, "train", "gres:shard:1", "CONF/fairway-rewrite.table in use"},
		{"ahead by less than max_age", rewrite.RenderTable(now.Add(5*time.Minute), 15*time.Minute, []string{"gpu"}, rules), false, "train", "gres:shard:3", "STATE/fairway-rewrite.table in use"},
	} {
		t.Run(c.name, func(t *testing.T) {
			state, conf := t.TempDir(), t.TempDir()
			if err := os.WriteFile(filepath.Join(state, "fairway-rewrite.table"), c.state, 0o640); err != nil {
				t.Fatal(err)
			}
			if c.fresh {
				if err := writeTable(filepath.Join(conf, "fairway-rewrite.table"), now, 15*time.Minute, []string{"gpu"},
					[]rewrite.ShareRule{{User: "alice", Name: "train", Shards: 1, Reason: "test"}}); err != nil {
					t.Fatal(err)
				}
			}
			env := []string{"FAIRWAY_REWRITE_TABLE=", "FAIRWAY_TEST_STATE_DIR=" + state, "SLURM_CONF=" + filepath.Join(conf, "slurm.conf")}
			job := luaCase{user: "alice", jobName: c.jobName, partition: "gpu", tresPerNode: "gres:gpu:1"}
			r := runJobSubmitEnv(t, env, []luaCase{job, job})
			want := "0|" + c.wantNode + "|nil|nil"
			if len(r.lines) != 2 || r.lines[0] != want || r.lines[1] != want || r.errLog != "" {
				t.Errorf("got %q (errors %q), want %q twice", r.lines, r.errLog, want)
			}
			wantInfo := strings.NewReplacer("CONF", conf, "STATE", state).Replace(c.wantInfo)
			if !strings.Contains(r.info, wantInfo) || strings.Count(r.info, "\n") != 1+strings.Count(r.info, "fairway: job ") {
				t.Errorf("info log %q, want %q once", r.info, wantInfo)
			}
		})
	}
}

// TestJobSubmitLua_TableAtServesCap: a table as large as serve may write
// (MaxTableBytes, the most --rewrite-table-max-bytes takes) is read, one
// byte more is not: serve's cap and the script's MAX_TABLE_BYTES agree.
// serve once took any cap, and above the script's every table was ignored
// once it grew past it.
func TestJobSubmitLua_TableAtServesCap(t *testing.T) {
	good := rewrite.RenderTable(time.Now(), 15*time.Minute, []string{"gpu"}, []rewrite.ShareRule{{User: "alice", Name: "train", Shards: 2, Reason: "test"}})
	for _, tc := range []struct {
		size int
		want string
	}{
		{MaxTableBytes, "0|gres:shard:2|nil"},
		{MaxTableBytes + 1, "0|gres:gpu:1|nil"},
	} {
		pad := "#" + strings.Repeat(" ", tc.size-len(good)-2) + "\n"
		path := filepath.Join(t.TempDir(), "fairway-rewrite.table")
		if err := os.WriteFile(path, append(slices.Clone(good), pad...), 0o640); err != nil {
			t.Fatal(err)
		}
		got, errLog := runJobSubmit(t, path, []luaCase{{user: "alice", jobName: "train", partition: "gpu", tresPerNode: "gres:gpu:1"}})
		if len(got) != 1 || got[0] != tc.want || errLog != "" {
			t.Errorf("table of %d bytes: got %q (errors %q), want %q", tc.size, got, errLog, tc.want)
		}
	}
}
