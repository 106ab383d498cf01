package main

import (
	"encoding/csv"
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fairway-hpc/fairway/internal/progress"
	"github.com/fairway-hpc/fairway/internal/trace"
	"github.com/fairway-hpc/fairway/policy"
	"github.com/fairway-hpc/fairway/policy/sim"
	"github.com/google/go-cmp/cmp"
	"github.com/urfave/cli/v2"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata from the current output")

// TestSimulate_BundledGolden runs `fairway simulate` on the bundled
// workload (with tsafrir, a published predictor that will not change, so
// that only the simulator and the policies move the file).
func TestSimulate_BundledGolden(t *testing.T) {
	out, err := runApp(t, "simulate", "--predictor", "tsafrir", "--parallel", "1")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join("testdata", "simulate_bundled.golden")
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(out), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if diff := cmp.Diff(string(want), out); diff != "" {
		t.Errorf("output differs from %s (-want +got); if intended, run go test -update:\n%s", path, diff)
	}
}

// TestSimulate_Default checks what a newcomer sees: one row per policy.
func TestSimulate_Default(t *testing.T) {
	out, err := runApp(t, "simulate")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if !strings.HasPrefix(lines[0], "bundled synthetic workload (seed 1) (synthetic): 2000 jobs on 8 × 8 gpus, EASY backfill, predictor fairway") {
		t.Errorf("first line %q", lines[0])
	}
	for _, name := range policy.Compared() {
		found := false
		for _, l := range lines[2:] {
			if f := strings.Fields(l); len(f) == 13 && strings.TrimSuffix(f[0], "*") == name {
				found = true
			}
		}
		if !found {
			t.Errorf("no row for %s in:\n%s", name, out)
		}
	}
}

// TestSimulate_JSON checks the JSON shape the issue specifies, on the KTH
// trace, where FIFO with EASY must reproduce the published bounded slowdown.
func TestSimulate_JSON(t *testing.T) {
	path := kthTrace(t)
	out, err := runApp(t, "simulate", "--trace", path, "--format", "swf", "--policies", "fifo", "--predictor", "none", "--json")
	if err != nil {
		t.Fatal(err)
	}
	var raw struct {
		Trace    string                       `json:"trace"`
		Policies []map[string]json.RawMessage `json:"policies"`
	}
	if err := json.Unmarshal([]byte(out), &raw); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, out)
	}
	if raw.Trace != "KTH-SP2-filtered.swf.gz" || len(raw.Policies) != 1 {
		t.Fatalf("trace %q, %d policies", raw.Trace, len(raw.Policies))
	}
	for _, k := range []string{"name", "avg_jct_s", "avg_wait_s", "avg_bsld", "p95_wait_s", "utilization", "jain", "max_rho", "p95_rho"} {
		if _, ok := raw.Policies[0][k]; !ok {
			t.Errorf("policy entry lacks %q: %s", k, out)
		}
	}
	var rep sim.Report
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	m := rep.Policies[0]
	if m.Name != "fifo" || m.Jobs != 28481 || math.Abs(m.AvgBSLD-92.58)/92.58 > 0.05 {
		t.Errorf("fifo on KTH: %+v; want 28481 jobs and an average bounded slowdown within 5%% of 92.58", m)
	}
	if rep.Cluster != (clusterJSON{Nodes: 1, PerNode: 100, Unit: "cpus"}) {
		t.Errorf("cluster %+v, want one pool of KTH's 100 processors", rep.Cluster)
	}
}

// TestSimulate_Out checks the files --out writes.
func TestSimulate_Out(t *testing.T) {
	dir := t.TempDir()
	if _, err := runApp(t, "simulate", "--policies", "fifo,fair-qssf", "--predictor", "tsafrir", "--out", dir); err != nil {
		t.Fatal(err)
	}
	read := func(name string) [][]string {
		f, err := os.Open(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		rows, err := csv.NewReader(f).ReadAll()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return rows
	}
	pol := read("policies.csv")
	if len(pol) != 3 || pol[0][0] != "policy" || pol[1][0] != "fifo" || pol[2][0] != "fair-qssf" || len(pol[1]) != len(pol[0]) {
		t.Errorf("policies.csv: %v", pol)
	}
	users := read("users.csv")
	if len(users) != 1+2*40 || !cmp.Equal(users[0], []string{"policy", "user", "jobs", "avg_wait_s", "p95_wait_s"}) {
		t.Errorf("users.csv: %d rows, header %v; want 40 users per policy", len(users), users[0])
	}
	for _, name := range []string{"jct_cdf.svg", "user_p95_wait.svg"} {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		s := string(b)
		if !strings.HasPrefix(s, "<?xml") || !strings.Contains(s, "<svg") || !strings.Contains(s, ">fair-qssf</text>") {
			t.Errorf("%s is not an SVG with a fair-qssf legend: %.200s", name, s)
		}
	}
}

// TestSimulate_OutCheckedFirst: an output simulate cannot write is
// refused before the trace is read, not after a replay of every policy
// that may have taken an hour. The trace has no job, so the output's
// error must come first.
func TestSimulate_OutCheckedFirst(t *testing.T) {
	dir := t.TempDir()
	empty := filepath.Join(dir, "header.swf")
	if err := os.WriteFile(empty, []byte("; MaxProcs: 100\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "missing", "seq.csv")
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"--out a file", []string{"--out", empty}, "--out " + empty + ": not a directory (simulate writes policies.csv, users.csv and its plots into it)"},
		{"--out under a file", []string{"--out", filepath.Join(empty, "d")}, "--out " + filepath.Join(empty, "d") + ": not a directory (simulate writes policies.csv, users.csv and its plots into it)"},
		{"--power-sequence in a missing directory", []string{"--power", "--nodes", "10", "--per-node", "10", "--power-sequence", missing},
			"--power-sequence: write " + missing + ": no such file or directory"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := runApp(t, append([]string{"simulate", "--trace", empty, "--progress", "never"}, tc.args...)...)
			if err == nil || err.Error() != tc.want {
				t.Errorf("error %v, want %q", err, tc.want)
			}
		})
	}
}

func TestSimulate_BadSettings(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--policies", "fifo,lottery"}, "--policies"},
		{[]string{"--policies", ","}, "--policies: empty"},
		{[]string{"--backfill", "conservative"}, "--backfill"},
		{[]string{"--predictor", "oracle"}, "--predictor"},
		{[]string{"--format", "swf"}, "--format: only with --trace"},
		{[]string{"--trace", "x.csv", "--format", "helios"}, "--nodes: required"},
		{[]string{"--trace", "x.csv", "--format", "csv"}, "--format"},
		{[]string{"--preempt", "nobody"}, "--preempt"},
		{[]string{"--parallel", "0"}, "--parallel"},
		{[]string{"--trace", "/nonexistent.swf", "--format", "swf"}, "open trace"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			_, err := runApp(t, append([]string{"simulate"}, tc.args...)...)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err %v, want one mentioning %q", err, tc.want)
			}
		})
	}
}

// TestTraceSynth_RoundTrip writes a synthetic trace and reads it back with
// the Helios parser: every field the simulator uses survives.
func TestTraceSynth_RoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "synth.csv.gz")
	if _, err := runApp(t, "trace", "synth", "--jobs", "300", "--users", "12", "--nodes", "4", "--seed", "9", "--out", path); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tr, err := trace.ReadAll(f, trace.Helios, trace.Options{Name: path})
	if err != nil {
		t.Fatal(err)
	}
	want, err := sim.Synth(sim.SynthParams{Jobs: 300, Users: 12, Nodes: 4, GPUsPerNode: 8, Load: 0.9, Seed: 9})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, tr.Jobs); diff != "" {
		t.Errorf("jobs read back (-generated +read):\n%s", diff)
	}
	if _, err := runApp(t, "trace", "synth", "--load", "0"); err == nil || !strings.Contains(err.Error(), "--load") {
		t.Errorf("--load 0: err %v", err)
	}
}

// TestSimulate_ArchiveUnknownRecords replays an SWF log holding records an
// archive could not recover (a whole line of -1 among them): they are left
// out and counted, and the rest is simulated.
func TestSimulate_ArchiveUnknownRecords(t *testing.T) {
	in := "; MaxProcs: 8\n" +
		"1 0 0 100 4 -1 -1 4 200 -1 1 1 1 -1 -1 -1 -1 -1\n" +
		"-1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1\n" +
		"2 10 -1 -1 2 -1 -1 2 200 -1 5 2 1 -1 -1 -1 -1 -1\n" +
		"3 20 0 50 8 -1 -1 8 100 -1 1 2 1 -1 -1 -1 -1 -1\n"
	path := filepath.Join(t.TempDir(), "archive.swf")
	if err := os.WriteFile(path, []byte(in), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := runApp(t, "simulate", "--trace", path, "--format", "swf", "--policies", "fifo", "--predictor", "none")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(out, "\n")
	if !strings.HasPrefix(lines[0], "archive.swf (swf): 2 jobs on 1 × 8 cpus") {
		t.Errorf("first line %q", lines[0])
	}
	// 2 jobs: 4 CPUs × 100 s and 8 × 50 over 8 CPUs × 20 s of submits.
	if want := "offered load 5.00 (the trace's own)"; lines[1] != want {
		t.Errorf("second line %q, want %q", lines[1], want)
	}
	if want := "left out: 1 records with unknown run time; 1 records with unknown submit time"; lines[2] != want {
		t.Errorf("third line %q, want %q", lines[2], want)
	}
}

// TestSimulate_Power runs `simulate --power` on the bundled synthetic
// workload: one row without power saving, one per rule, waits beside.
func TestSimulate_Power(t *testing.T) {
	out, err := runApp(t, "simulate", "--power", "--resume-time", "5m", "--power-buffer", "0,10", "--suspend-time", "10m,1h")
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	for _, want := range []string{"resume time 5m0s", "no power saving", "idle-time 10m", "idle-time 1h", "artifact, buffer 0", "artifact, buffer 10", "avg wait +s"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	// --nowcast adds the hybrid with the trend nowcast beside the hybrid.
	out, err = runApp(t, "simulate", "--power", "--power-buffer", "0", "--suspend-time", "10m", "--hybrid-idle", "5m", "--nowcast", "gain=0.5,window=2m,after=2m,expire=5m")
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	for _, want := range []string{"hybrid 5m, buffer 0 ", "hybrid 5m, buffer 0, ramp 0.5×rise over 2m after 2m lacking, expire 5m "} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--power-buffer", "x"}, `--power-buffer: "x"`},
		{[]string{"--suspend-time", "soon"}, `--suspend-time: "soon"`},
		{[]string{"--resume-time", "-1m"}, "--resume-time -1m0s"},
		{[]string{"--nowcast", "gain=x,window=2m"}, `--nowcast: nowcast "gain=x,window=2m": gain:`},
		{[]string{"--policies", "tiresias"}, "preemptively"},
		{[]string{"--nodes", "1", "--per-node", "64"}, "--power: the cluster is one node of 64 gpus, and power saving turns whole nodes off: give its nodes with --nodes and --per-node"},
	} {
		if _, err := runApp(t, append([]string{"simulate", "--power"}, tc.args...)...); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: err = %v, want it to contain %q", tc.args, err, tc.want)
		}
	}
}

// TestSimulate_Progress: --progress always draws short lines, a few in
// all, on stderr even when it is not a terminal; never draws none. Without
// the flag (it did not exist) the progress was a line listing every
// policy's count, redrawn every 100 jobs and only on a terminal.
func TestSimulate_Progress(t *testing.T) {
	for _, mode := range []string{"always", "never"} {
		t.Run(mode, func(t *testing.T) {
			errOut, err := os.CreateTemp(t.TempDir(), "stderr")
			if err != nil {
				t.Fatal(err)
			}
			defer errOut.Close()
			app := newApp()
			var out strings.Builder
			app.Writer, app.ErrWriter = &out, &out
			for _, c := range app.Commands {
				if c.Name == "simulate" {
					c.Action = func(c *cli.Context) error {
						cfg, err := simulateSettings(c)
						if err != nil {
							return err
						}
						return simulate(c.Context, cfg, c.App.Writer, errOut)
					}
				}
			}
			if err := app.Run([]string{"fairway", "simulate", "--progress", mode, "--parallel", "1"}); err != nil {
				t.Fatal(err)
			}
			b, err := os.ReadFile(errOut.Name())
			if err != nil {
				t.Fatal(err)
			}
			lines := strings.Split(string(b), "\r\033[K")
			if mode == "never" {
				if len(b) != 0 {
					t.Errorf("--progress never wrote %q", b)
				}
				return
			}
			// The bundled run takes about a second: a few redraws, each
			// short enough for an 80-column terminal, then the summary.
			if len(lines) < 3 || len(lines) > 2+int(20*time.Second/progress.Redraw) {
				t.Errorf("%d redraws, want a few", len(lines)-1)
			}
			for _, l := range lines {
				if n := len([]rune(strings.TrimSuffix(l, "\n"))); n > progress.MaxLine {
					t.Errorf("a %d-character line: %q", n, l)
				}
			}
			if last := lines[len(lines)-1]; !strings.HasPrefix(last, fmt.Sprintf("simulated %d policies in ", len(policy.Compared()))) {
				t.Errorf("last line %q", last)
			}
		})
	}
	if _, err := runApp(t, "simulate", "--progress", "sometimes"); err == nil || !strings.Contains(err.Error(), `--progress "sometimes": want auto, always or never`) {
		t.Errorf("--progress sometimes: %v", err)
	}
}

// TestSimulate_Partitions replays an SWF trace whose queues (field 15) are
// partitions on a cluster given by --partitions, as a spec and as a file:
// the header names the partitions, and the jobs of a queue the cluster
// lacks are left out with a warning naming it.
func TestSimulate_Partitions(t *testing.T) {
	dir := t.TempDir()
	tr := filepath.Join(dir, "q.swf")
	var b strings.Builder
	b.WriteString("; MaxProcs: 8\n")
	for i := range 40 {
		queue := 1 + i%2
		if i%10 == 9 {
			queue = 7 // no such partition
		}
		fmt.Fprintf(&b, "%d %d 0 %d 2 -1 -1 2 600 -1 1 %d -1 -1 %d -1 -1 -1\n", i+1, i*30, 100+i*7, 1+i%3, queue)
	}
	if err := os.WriteFile(tr, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	spec := "1:nodes=2,per-node=2;2:nodes=1,per-node=4"
	file := filepath.Join(dir, "parts.txt")
	if err := os.WriteFile(file, []byte("# the cluster\n1:nodes=2,per-node=2\n2:nodes=1,per-node=4\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, arg := range []string{spec, file} {
		out, err := runApp(t, "simulate", "--trace", tr, "--policies", "fifo,fairshare", "--parallel", "1", "--partitions", arg)
		if err != nil {
			t.Fatalf("--partitions %s: %v\n%s", arg, err, out)
		}
		for _, want := range []string{
			"q.swf (swf): 36 jobs on 3 nodes of cpus in partitions 1:nodes=2,per-node=2;2:nodes=1,per-node=4, EASY backfill",
			`warning: 4 jobs left out, no node of the cluster can run them: partition "7" not in the cluster`,
			" fifo ", " fairshare ",
		} {
			if !strings.Contains(out, want) {
				t.Errorf("--partitions %s: output lacks %q:\n%s", arg, want, out)
			}
		}
	}
	// The time split replays on the same layout.
	out, err := runApp(t, "simulate", "--trace", tr, "--policies", "fifo", "--parallel", "1", "--partitions", spec, "--split", "0.5")
	if err != nil {
		t.Fatalf("--split: %v\n%s", err, out)
	}
	if want := "q.swf: 40 jobs on 3 nodes of cpus in partitions " + spec + ", EASY backfill"; !strings.Contains(out, want) {
		t.Errorf("--split: output lacks %q:\n%s", want, out)
	}
	out, err = runApp(t, "simulate", "--trace", tr, "--policies", "fifo", "--parallel", "1", "--partitions", spec, "--json")
	if err != nil {
		t.Fatal(err)
	}
	var rep sim.Report
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Cluster.Partitions != spec || rep.Skipped[`partition "7" not in the cluster`] != 4 || rep.Jobs != 36 {
		t.Errorf("JSON: cluster %+v, skipped %v, %d jobs: want partitions %q, 4 left out, 36 jobs", rep.Cluster, rep.Skipped, rep.Jobs, spec)
	}
}

// TestSimulate_HeliosQSSF: --helios-qssf runs beside the other policies on
// the bundled workload and is refused where it is not modelled.
func TestSimulate_HeliosQSSF(t *testing.T) {
	out, err := runApp(t, "simulate", "--parallel", "1", "--progress", "never", "--policies", "fifo,qssf", "--backfill", "none",
		"--predictor", "helios", "--helios-qssf", "--json")
	if err != nil {
		t.Fatal(err)
	}
	var rep struct {
		Policies []struct {
			Name   string  `json:"name"`
			Jobs   int     `json:"jobs"`
			AvgJCT float64 `json:"avg_jct_s"`
		} `json:"policies"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	if len(rep.Policies) != 2 || rep.Policies[1].Name != "qssf" || rep.Policies[1].Jobs == 0 || !(rep.Policies[1].AvgJCT > 0) {
		t.Errorf("policies %+v: want fifo and qssf, each with jobs and an average JCT", rep.Policies)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--policies", "fifo"}, "--helios-qssf: --policies fifo has no qssf"},
		{[]string{"--policies", "qssf", "--preempt", "qssf"}, "--helios-qssf: qssf is in --preempt"},
		{[]string{"--policies", "qssf", "--split", "0.7"}, "--helios-qssf: not with --split"},
		{[]string{"--policies", "qssf", "--power"}, "--helios-qssf: not with --power"},
		{[]string{"--suite"}, "--helios-qssf: not with --suite"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			_, err := runApp(t, append([]string{"simulate", "--parallel", "1", "--progress", "never", "--helios-qssf"}, tc.args...)...)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err %v, want one mentioning %q", err, tc.want)
			}
		})
	}
}

func TestSimulate_PartitionsBad(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--partitions", "gpu:nodes=x,per-node=8"}, `--partitions: partition entry 1 "gpu:nodes=x,per-node=8": nodes=x`},
		{[]string{"--partitions", "/nonexistent/parts"}, `--partitions "/nonexistent/parts": no such file`},
		{[]string{"--partitions", "gpu:nodes=1,per-node=8", "--nodes", "4"}, "--partitions: not with --nodes"},
		{[]string{"--partitions", "gpu:nodes=1,per-node=8", "--preempt", "tiresias"}, "--partitions: not with --preempt"},
		{[]string{"--partitions", "gpu:nodes=1,per-node=8", "--suite"}, "--partitions: not with --suite"},
		{[]string{"--partitions", "gpu:nodes=1,per-node=8", "--power"}, "--partitions: not with --power"},
		{[]string{"--partitions", "gpu:nodes=1,per-node=8", "--policies", "fifo"}, `no job to simulate (left out: 2000 partition "vc1" not in the cluster)`},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			_, err := runApp(t, append([]string{"simulate", "--parallel", "1", "--progress", "never"}, tc.args...)...)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err %v, want one mentioning %q", err, tc.want)
			}
		})
	}
}
