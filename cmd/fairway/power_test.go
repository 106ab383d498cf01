package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fairway-hpc/fairway/policy"
	"github.com/fairway-hpc/fairway/policy/power"
	"github.com/google/go-cmp/cmp"
	"github.com/urfave/cli/v2"
)

func TestPowerEval_BadFlags(t *testing.T) {
	seq := filepath.Join(t.TempDir(), "s.csv")
	if err := os.WriteFile(seq, []byte("time,active,total\n2017-10-03 00:00:00,1,2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"no sequence", nil, "--sequence: required"},
		{"bad buffer", []string{"--sequence", seq, "--buffer", "10,x"}, `--buffer: "x"`},
		{"bad suspend time", []string{"--sequence", seq, "--suspend-time", "10m,soon"}, `--suspend-time: "soon"`},
		{"bad hybrid idle time", []string{"--sequence", seq, "--hybrid-idle", "5m,0s"}, `--hybrid-idle: "0s"`},
		{"bad day", []string{"--sequence", seq, "--test-from", "12/01/2017"}, `--test-from: "12/01/2017"`},
		{"bad pick criterion", []string{"--sequence", seq, "--pick", "margin,best"}, `--pick: pick criterion "best": want one of margin, halves`},
		{"no resume time", []string{"--sequence", seq, "--resume-time", "0s"}, "--resume-time 0s: want a positive duration"},
		{"step not whole minutes", []string{"--sequence", seq, "--step", "90s"}, "--step 1m30s: want a positive whole number of minutes"},
		{"broken line", []string{"--sequence", writeSeq(t, "time,active,total\n2017-10-03 00:00:00,1,2\n2017-10-03 00:01:00,x,2\n")}, "s.csv:3: active:"},
		{"too short", []string{"--sequence", seq}, "default split: 1 rows: want a sequence of at least 15 whole days; --train-until, --test-from and --test-until choose the split"},
		{"too short for the days given", []string{"--sequence", seq, "--train-until", "2017-11-30", "--test-from", "2017-12-01", "--test-until", "2017-12-14"}, "outside the sequence"},
		{"no validation days", []string{"--sequence", seq, "--validation-days", "0"}, "--validation-days 0: want at least 1"},
		{"total zero", []string{"--sequence", seq, "--total", "0"}, "--total 0: want the cluster's node count, at least 1"},
		{"gpu columns without a total", []string{"--sequence", writeSeq(t, "time,Use 1 GPU,Use 8 GPU\n2020-04-01 00:00:00,3,5\n")}, "give the cluster's node count: --total N"},
		{"total beside a total column", []string{"--sequence", seq, "--total", "5"}, `has a column "total" and a total of 5 nodes was given too`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := runApp(t, append([]string{"power", "eval"}, tc.args...)...)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want it to contain %q", err, tc.want)
			}
		})
	}
}

func writeSeq(t *testing.T, body string) string {
	p := filepath.Join(t.TempDir(), "s.csv")
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// dailyCycle is 50 days of a daily cycle sampled every 5 minutes.
func dailyCycle(t *testing.T) string {
	var b strings.Builder
	b.WriteString("time,active,total\n")
	for m, a := range cycleDemand() {
		fmt.Fprintf(&b, "%s,%d,100\n", cycleTime(m), a)
	}
	return writeSeq(t, b.String())
}

// cycleDemand is dailyCycle's active nodes, one a 5-minute sample.
func cycleDemand() []int {
	var out []int
	for m := 0; m < 50*1440; m += 5 {
		out = append(out, int(50+30*math.Sin(2*math.Pi*float64(m%1440)/1440)))
	}
	return out
}

func cycleTime(i int) string {
	return time.Date(2017, 10, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(5*i) * time.Minute).Format(time.DateTime)
}

// TestPowerEval_HeliosColumns: the same demand as dailyCycle written as
// the Helios artifact's per-cluster files write it (nodes by GPUs in use,
// no total), with --total 100, gives the very table dailyCycle does.
func TestPowerEval_HeliosColumns(t *testing.T) {
	var b strings.Builder
	b.WriteString("time,Use 1 GPU,Use 2 GPU,Use 4 GPU,Use 8 GPU\n")
	for m, a := range cycleDemand() {
		fmt.Fprintf(&b, "%s,%d,%d,%d,%d\n", cycleTime(m), a/4, a/4, a/4, a-3*(a/4))
	}
	args := []string{"power", "eval", "--train-until", "2017-11-10", "--test-from", "2017-11-11", "--test-until", "2017-11-13",
		"--buffer", "0,5", "--suspend-time", "30m", "--hybrid-idle", "20m", "--validation-days", "10", "--brief"}
	want, err := runApp(t, append(args, "--sequence", dailyCycle(t))...)
	if err != nil {
		t.Fatalf("time,active,total: %v\n%s", err, want)
	}
	got, err := runApp(t, append(args, "--sequence", writeSeq(t, b.String()), "--total", "100")...)
	if err != nil {
		t.Fatalf("Use K GPU columns: %v\n%s", err, got)
	}
	if !strings.Contains(got, "verdict (validation picks on the test days)") {
		t.Fatalf("no verdict:\n%s", got)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Use K GPU columns with --total 100 against time,active,total (-want +got)\n%s", diff)
	}
	// The artifact's files carry the cluster's size as "All Node Number":
	// no --total is needed.
	b.Reset()
	b.WriteString("time,All Node Number,Use 1 GPU,Use 8 GPU\n")
	for m, a := range cycleDemand() {
		fmt.Fprintf(&b, "%s,100,%d,%d\n", cycleTime(m), a/2, a-a/2)
	}
	got, err = runApp(t, append(args, "--sequence", writeSeq(t, b.String()))...)
	if err != nil {
		t.Fatalf("All Node Number: %v\n%s", err, got)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Use K GPU columns with All Node Number 100 against time,active,total (-want +got)\n%s", diff)
	}
}

// TestPowerEval_Synthetic runs the command end to end on 50 days of a
// daily cycle: one table with every rule, the verdict line and a pick
// criterion compared with the verdict's.
func TestPowerEval_Synthetic(t *testing.T) {
	out, err := runApp(t, "power", "eval", "--sequence", dailyCycle(t), "--train-until", "2017-11-10",
		"--test-from", "2017-11-11", "--test-until", "2017-11-17", "--buffer", "0,10", "--suspend-time", "10m,1h", "--pick", "margin,halves")
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	for _, want := range []string{"pick criterion halves (compared, not the verdict): ", "test 2017-11-11 00:00:00 to 2017-11-18 00:00:00: 1008 steps", "artifact, buffer 0", "artifact, buffer 10", "chosen on the validation days",
		"idle-time 10m", "idle-time 1h", "same time yesterday", "per idle-time setting, the row that dominated it on the validation days", "verdict (validation picks on the test days)"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

// TestPowerEval_ShortHistory: 30 validation days need 38 days of
// training; a site with less is told so and how to ask for fewer, and runs
// with them.
func TestPowerEval_ShortHistory(t *testing.T) {
	seq := dailyCycle(t)
	args := []string{"power", "eval", "--sequence", seq, "--train-until", "2017-10-20", "--test-from", "2017-10-21",
		"--test-until", "2017-10-23", "--buffer", "0", "--suspend-time", "1h", "--hybrid-idle", "5m", "--brief"}
	_, err := runApp(t, args...)
	if err == nil || !strings.Contains(err.Error(), "want at least 8 days of training before the 30 validation days") ||
		!strings.Contains(err.Error(), "--validation-days") {
		t.Fatalf("20 days of training, 30 validation days: err %v, want one naming --validation-days", err)
	}
	out, err := runApp(t, append(args, "--validation-days", "10")...)
	if err != nil || !strings.Contains(out, "verdict (validation picks on the test days)") {
		t.Fatalf("with --validation-days 10: %v\n%s", err, out)
	}
}

// TestPowerEval_DefaultSplit: the bounds the flags leave open come from
// the sequence (50 days from 2017-10-01, its last whole day 11-19), so a
// site's own sequence needs no dates; those given are kept.
func TestPowerEval_DefaultSplit(t *testing.T) {
	f, err := os.Open(dailyCycle(t))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	samples, err := power.ReadSequence(f, "cycle")
	if err != nil {
		t.Fatal(err)
	}
	day := func(m time.Month, d int) time.Time { return time.Date(2017, m, d, 0, 0, 0, 0, time.UTC) }
	for _, tc := range []struct {
		name                       string
		args                       []string
		train, testFrom, testUntil time.Time
	}{
		{"none given", nil, day(11, 6), day(11, 6), day(11, 20)},
		{"test end given", []string{"--test-until", "2017-11-17"}, day(11, 4), day(11, 4), day(11, 18)},
		{"test start given", []string{"--test-from", "2017-11-11"}, day(11, 11), day(11, 11), day(11, 20)},
		{"training given", []string{"--train-until", "2017-11-01"}, day(11, 2), day(11, 6), day(11, 20)},
		{"all given", []string{"--train-until", "2017-11-01", "--test-from", "2017-11-03", "--test-until", "2017-11-09"}, day(11, 2), day(11, 3), day(11, 10)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got powerEvalConfig
			app := newApp()
			for _, c := range app.Commands {
				if c.Name == "power" {
					c.Subcommands[0].Action = func(c *cli.Context) error {
						cfg, err := powerEvalSettings(c)
						if err != nil {
							return err
						}
						got = cfg
						return got.fillSplit(samples)
					}
				}
			}
			if err := app.Run(append([]string{"fairway", "power", "eval", "--sequence", "unused.csv"}, tc.args...)); err != nil {
				t.Fatal(err)
			}
			if e := got.Eval; !e.TrainUntil.Equal(tc.train) || !e.TestFrom.Equal(tc.testFrom) || !e.TestUntil.Equal(tc.testUntil) {
				t.Errorf("train until %s, test %s to %s; want %s, %s to %s", e.TrainUntil, e.TestFrom, e.TestUntil, tc.train, tc.testFrom, tc.testUntil)
			}
		})
	}
}

// TestPowerEval_IdleTimeActsPerMinute: Slurm's SuspendTime counts each
// node's own idle time, so at SuspendTime 10m a node freed as demand
// falls stays powered for its 10 idle minutes. Replayed on 10-minute
// maxima the idle-time rule powered exactly each step's busiest minute,
// the most any rule can keep off, so no rule could ever dominate it; per
// minute it keeps less off than the minute demand allows.
func TestPowerEval_IdleTimeActsPerMinute(t *testing.T) {
	out, err := runApp(t, "power", "eval", "--sequence", dailyCycle(t), "--train-until", "2017-11-10",
		"--test-from", "2017-11-11", "--test-until", "2017-11-17", "--buffer", "0", "--suspend-time", "10m", "--json")
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	var res struct {
		MaxNodeHoursOff float64
		Rules           []struct {
			Kind         string
			Rule         string
			NodeHoursOff float64
		}
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	found := false
	for _, r := range res.Rules {
		if r.Kind != "idle-time" {
			continue
		}
		found = true
		if r.NodeHoursOff >= res.MaxNodeHoursOff-1 {
			t.Errorf("%s keeps %.1f node-hours off, the most any rule can keep is %.1f: want it below, as a node idles 10 minutes before it goes down",
				r.Rule, r.NodeHoursOff, res.MaxNodeHoursOff)
		}
	}
	if !found {
		t.Errorf("no idle-time row in\n%s", out)
	}
}

// TestWriteNodeSequence: simulate --power-sequence writes the pending
// column, and power eval reads back what was written.
func TestWriteNodeSequence(t *testing.T) {
	t0 := time.Date(1997, 5, 13, 0, 0, 0, 0, time.UTC)
	in := []power.Sample{{Time: t0, Active: 217, Total: 338, Pending: 120}, {Time: t0.Add(time.Minute), Active: 337, Total: 338}}
	p := filepath.Join(t.TempDir(), "seq.csv")
	if err := writeNodeSequence(p, in); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if want := "time,active,total,pending\n1997-05-13 00:00:00,217,338,120\n1997-05-13 00:01:00,337,338,0\n"; string(b) != want {
		t.Errorf("wrote %q, want %q", b, want)
	}
	got, err := power.ReadSequence(strings.NewReader(string(b)), p)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(in, got); diff != "" {
		t.Errorf("read back (-wrote +read)\n%s", diff)
	}
}

// cycleJobs is dailyCycle's demand as a database's finished jobs: node gI
// is busy over each run of samples whose demand exceeds I, held by two
// one-GPU jobs at once (a node jobs share counts once).
func cycleJobs() []policy.Job {
	demand := cycleDemand()
	t0 := time.Date(2017, 10, 1, 0, 0, 0, 0, time.UTC)
	at := func(i int) time.Time { return t0.Add(time.Duration(5*i) * time.Minute) }
	var jobs []policy.Job
	for node := range 100 {
		for i := 0; i < len(demand); i++ {
			if demand[i] <= node {
				continue
			}
			run := i
			for i < len(demand) && demand[i] > node {
				i++
			}
			for range 2 {
				jobs = append(jobs, policy.Job{ID: int64(len(jobs) + 1), Cluster: "alps", User: "u", Submit: at(run), Start: at(run), End: at(i),
					Nodes: 1, GPUs: 1, Hosts: fmt.Sprintf("g%d", node), State: policy.StateCompleted})
			}
		}
	}
	return jobs
}

// TestPowerEval_FromDB: the node use of the database's finished jobs is
// replayed as the sequence file of the same demand is, with --total the
// cluster's size; the output says what it read first.
func TestPowerEval_FromDB(t *testing.T) {
	jobs := cycleJobs()
	asked := fakeHistory(t, jobs)
	args := []string{"power", "eval", "--train-until", "2017-11-10", "--test-from", "2017-11-11", "--test-until", "2017-11-13",
		"--buffer", "0,5", "--suspend-time", "30m", "--hybrid-idle", "20m", "--validation-days", "10", "--brief"}
	want, err := runApp(t, append(args, "--sequence", dailyCycle(t))...)
	if err != nil {
		t.Fatalf("sequence: %v\n%s", err, want)
	}
	got, err := runApp(t, append(args, "--from-db", "--database-url", "postgres://fake", "--cluster", "alps", "--until", "2017-11-20", "--total", "100")...)
	if err != nil {
		t.Fatalf("--from-db: %v\n%s", err, got)
	}
	if !asked[0].IsZero() || !asked[1].Equal(time.Date(2017, 11, 20, 0, 0, 0, 0, time.UTC)) {
		t.Errorf("asked for jobs that ended %v to %v, want up to 2017-11-20", asked[0], asked[1])
	}
	note, table, _ := strings.Cut(got, "\n")
	n := len(jobs)
	for _, w := range []string{fmt.Sprintf("node use of cluster alps: %d jobs that ran before 2017-11-20, %d of them with their nodes named", n, n),
		"from 2017-10-01 00:00:00 to 2017-11-20 00:00:00 UTC", "cluster 100 nodes (--total)"} {
		if !strings.Contains(note, w) {
			t.Errorf("first line %q lacks %q", note, w)
		}
	}
	// The file's rows are 5 minutes apart, which it warns of; the
	// database's node use has every minute.
	var kept []string
	for _, l := range strings.SplitAfter(want, "\n") {
		if !strings.Contains(l, "have no row and hold the minute before") {
			kept = append(kept, l)
		}
	}
	if len(kept) == len(strings.SplitAfter(want, "\n")) {
		t.Errorf("the sequence file's output has no warning of its 5-minute rows:\n%s", want)
	}
	if diff := cmp.Diff(strings.Join(kept, ""), table); diff != "" {
		t.Errorf("--from-db against the same demand as a sequence file (-want +got)\n%s", diff)
	}
}

func TestPowerEval_FromDBFlags(t *testing.T) {
	t0 := time.Date(2017, 10, 1, 8, 0, 0, 0, time.UTC)
	fakeHistory(t, []policy.Job{{ID: 1, Cluster: "alps", Partition: "gpu", Submit: t0, Start: t0, End: t0.Add(time.Hour), Nodes: 1, State: policy.StateCompleted}})
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"both sources", []string{"--from-db", "--sequence", "s.csv"}, "--from-db and --sequence: give one source"},
		{"no database", []string{"--from-db"}, "--from-db: no database"},
		{"empty period", []string{"--from-db", "--database-url", "postgres://fake", "--cluster", "alps", "--since", "2017-11-02", "--until", "2017-11-01"}, "an empty period"},
		{"no job in the partition", []string{"--from-db", "--database-url", "postgres://fake", "--cluster", "alps", "--partition", "debug,cpu"}, "cluster alps: no job in partition debug, cpu ran on a node at any time"},
		{"an empty partition name", []string{"--from-db", "--database-url", "postgres://fake", "--cluster", "alps", "--partition", "gpu,"}, `--partition "gpu,": an empty partition name`},
		{"too short in the partition", []string{"--from-db", "--database-url", "postgres://fake", "--cluster", "alps", "--partition", "debug,gpu"}, "want more than 14 whole days"},
		{"too short", []string{"--from-db", "--database-url", "postgres://fake", "--cluster", "alps"}, "the sequence runs 2017-10-01 08:00:00 to 2017-10-01 09:00:00: want more than 14 whole days"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("FAIRWAY_DATABASE_URL", "") // the lab environment sets it
			_, err := runApp(t, append([]string{"power", "eval"}, tc.args...)...)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want it to contain %q", err, tc.want)
			}
		})
	}
}

// periodHistory answers finishedHistory and ranHistory as the database
// does (Store.FinishedJobs: the jobs that ended in the period;
// Store.JobsThatRan: those that ran during it), not every job whatever the
// period as fakeHistory does.
func periodHistory(t *testing.T, jobs []policy.Job) {
	t.Helper()
	read := func(keep func(j policy.Job, since, until time.Time) bool) func(context.Context, string, string, time.Time, time.Time) ([]policy.Job, string, error) {
		return func(_ context.Context, url, cluster string, since, until time.Time) ([]policy.Job, string, error) {
			var out []policy.Job
			for _, j := range jobs {
				if keep(j, since, until) {
					out = append(out, j)
				}
			}
			return out, "alps", nil
		}
	}
	oldFinished, oldRan := finishedHistory, ranHistory
	finishedHistory = read(func(j policy.Job, since, until time.Time) bool {
		return !j.End.Before(since) && (until.IsZero() || j.End.Before(until))
	})
	ranHistory = read(func(j policy.Job, since, until time.Time) bool {
		return !j.End.Before(since) && (until.IsZero() || j.Start.Before(until))
	})
	t.Cleanup(func() { finishedHistory, ranHistory = oldFinished, oldRan })
}

// TestDBSequence_Period: the node use of a period counts every job that
// held nodes during it (one that started before --since from --since, one
// that ended after --until up to --until), in UTC whatever zone --days
// counted in, and ends no later than now; a --total below the nodes held
// at once is refused naming them, and without --total the cluster is the
// more of the nodes the history names and those it holds at once.
func TestDBSequence_Period(t *testing.T) {
	t0 := time.Date(2026, 10, 1, 0, 0, 0, 0, time.UTC)
	job := func(id int64, start, end time.Duration, hosts string, nodes int) policy.Job {
		return policy.Job{ID: id, Cluster: "alps", Start: t0.Add(start), End: t0.Add(end), Nodes: nodes, Hosts: hosts, State: policy.StateCompleted}
	}
	periodHistory(t, []policy.Job{
		job(1, -2*time.Hour, 2*time.Hour, "g1", 1),           // from before since
		job(2, 20*time.Hour, 30*time.Hour, "g[2-3]", 2),      // past until
		job(3, 5*time.Hour, 6*time.Hour, "g[1-2],g[4-6]", 5), // the most at once: 5 (g1 shared)
		job(4, 40*time.Hour, 41*time.Hour, "g[7-8]", 2),      // after until
	})
	db := func(since, until time.Time) *powerDB {
		return &powerDB{tuneDB: &tuneDB{URL: "postgres://fake", Cluster: "alps", Since: since, Until: until}}
	}
	far := t0.AddDate(1, 0, 0)
	var note strings.Builder
	s, err := dbSequence(context.Background(), db(t0, t0.Add(24*time.Hour)), 10, far, &note)
	if err != nil {
		t.Fatal(err)
	}
	if len(s) != 24*60 || !s[0].Time.Equal(t0) || s[0].Active != 1 || s[5*60].Active != 5 || s[23*60+59].Active != 2 || s[0].Total != 10 {
		t.Fatalf("%d samples from %v: first %+v, 05:00 %+v, last %+v; want 1440 from %v, 1 node at first, 5 at 05:00, 2 (job 2, running past --until) at the last, of 10",
			len(s), s[0].Time, s[0], s[5*60], s[len(s)-1], t0)
	}
	if !strings.Contains(note.String(), "3 jobs that ran between 2026-10-01 and 2026-10-02, 3 of them with their nodes named") {
		t.Errorf("note %q", note.String())
	}

	// --days from a clock in a zone 5:45 ahead of UTC; --until past now.
	nepal := time.FixedZone("NPT", 5*3600+45*60)
	now := t0.Add(22*time.Hour + 30*time.Second)
	s, err = dbSequence(context.Background(), db(t0.Add(3*time.Hour).In(nepal), t0.Add(48*time.Hour)), 10, now, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	first, last := s[0].Time, s[len(s)-1].Time
	if first.Location() != time.UTC || !first.Equal(t0.Add(3*time.Hour)) || !last.Equal(t0.Add(22*time.Hour-time.Minute)) {
		t.Errorf("samples from %v to %v, want from 03:00 UTC to 21:59 UTC (now 22:00:30)", first, last)
	}

	_, err = dbSequence(context.Background(), db(t0, t0.Add(24*time.Hour)), 4, far, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "--total 4: cluster alps's jobs hold 5 nodes at once at 2026-10-01 05:00:00 UTC") {
		t.Errorf("--total below the use: err %v, want it refused naming the 5 nodes at 05:00", err)
	}
	s, err = dbSequence(context.Background(), db(t0, t0.Add(24*time.Hour)), 0, far, io.Discard)
	if err != nil || s[0].Total != 6 {
		t.Errorf("no --total: %v, total %d, want 6 (g1-g6 named, 5 at once)", err, s[0].Total)
	}
}
