package sim

import (
	"context"
	"errors"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fairway-hpc/fairway/policy"
	"github.com/google/go-cmp/cmp"
)

// ptCluster is the protocols' hand-checked cluster: two processors.
var ptCluster = Cluster{Nodes: 1, PerNode: 2, Unit: CPUs}

// ptFactory makes the registered policy name.
func ptFactory(name string) PolicyFactory {
	return func() (policy.Policy, error) { return policy.New(name, nil) }
}

// ptSerial is n jobs of one processor-pair each, submitted 1000 s apart,
// running 100 s: never two at once, so no order can change anything.
func ptSerial(n int) []policy.Job {
	jobs := make([]policy.Job, n)
	for i := range jobs {
		jobs[i] = smJob(int64(i+1), "u", float64(1000*i), 2, 100, 100)
	}
	return jobs
}

func TestDrawStarts_Reproducible(t *testing.T) {
	for _, tc := range []struct {
		name      string
		seed      uint64
		n, lo, hi int
	}{
		{"one start", 1, 1, 5, 5},
		{"ten from a window", 1, 10, 700, 9000},
		{"another seed", 2, 10, 700, 9000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, b := DrawStarts(tc.seed, tc.n, tc.lo, tc.hi), DrawStarts(tc.seed, tc.n, tc.lo, tc.hi)
			if diff := cmp.Diff(a, b); diff != "" {
				t.Errorf("same seed, different starts (-first +second):\n%s", diff)
			}
			if len(a) != tc.n {
				t.Fatalf("%d starts, want %d", len(a), tc.n)
			}
			for _, s := range a {
				if s < tc.lo || s > tc.hi {
					t.Errorf("start %d outside [%d, %d]", s, tc.lo, tc.hi)
				}
			}
		})
	}
	if cmp.Equal(DrawStarts(1, 10, 0, 1e6), DrawStarts(2, 10, 0, 1e6)) {
		t.Error("seeds 1 and 2 drew the same ten starts out of a million")
	}
}

// TestNewEvaluator_Windows checks where each protocol's evaluated part
// lies in a 10-job trace, and that training and evaluation windows split
// at the same index, so they never share a job.
func TestNewEvaluator_Windows(t *testing.T) {
	jobs := ptSerial(10)
	for _, tc := range []struct {
		name   string
		p      Protocol
		lo, hi int
		err    error
	}{
		{"split 0.7", Protocol{Kind: Split, Split: 0.7}, 7, 10, nil},
		{"split 0.75 rounds down", Protocol{Kind: Split, Split: 0.75}, 7, 10, nil},
		{"split leaving nothing before", Protocol{Kind: Split, Split: 0.05}, 0, 0, ErrShortWindow},
		{"training window", Protocol{Kind: Sequences, Sequences: 5, Length: 3, From: 0, To: 0.7}, 0, 7, nil},
		{"evaluation window", Protocol{Kind: Sequences, Sequences: 5, Length: 3, From: 0.7, To: 1}, 7, 10, nil},
		{"whole trace", Protocol{Kind: Sequences, Sequences: 5, Length: 10, From: 0, To: 1}, 0, 10, nil},
		{"window too short", Protocol{Kind: Sequences, Sequences: 1, Length: 4, From: 0.7, To: 1}, 0, 0, ErrShortWindow},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, err := NewEvaluator(jobs, ptCluster, tc.p)
			if !errors.Is(err, tc.err) {
				t.Fatalf("error %v, want %v", err, tc.err)
			}
			if err != nil {
				return
			}
			lo, hi := e.Window()
			if lo != tc.lo || hi != tc.hi {
				t.Errorf("window [%d, %d), want [%d, %d)", lo, hi, tc.lo, tc.hi)
			}
			for _, s := range e.Starts() {
				if s < lo || s+tc.p.Length > hi {
					t.Errorf("sequence [%d, %d) leaves the window [%d, %d)", s, s+tc.p.Length, lo, hi)
				}
			}
		})
	}
}

func TestProtocol_Invalid(t *testing.T) {
	for _, tc := range []struct {
		name string
		p    Protocol
		want string
	}{
		{"no kind", Protocol{}, "unknown protocol"},
		{"split 1", Protocol{Kind: Split, Split: 1}, "want a fraction in (0, 1)"},
		{"split NaN", Protocol{Kind: Split, Split: math.NaN()}, "want a fraction in (0, 1)"},
		{"no sequences", Protocol{Kind: Sequences, Length: 3, To: 1}, "want both >= 1"},
		{"reversed window", Protocol{Kind: Sequences, Sequences: 1, Length: 1, From: 0.7, To: 0.3}, "want 0 <= from < to <= 1"},
		{"bad mode", Protocol{Kind: Split, Split: 0.5, Predictions: "later"}, "unknown prediction mode"},
		{"bad backfill", Protocol{Kind: Split, Split: 0.5, Backfill: "conservative"}, "unknown backfill"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := NewEvaluator(ptSerial(10), ptCluster, tc.p)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one saying %q", err, tc.want)
			}
		})
	}
}

// TestEvaluator_SplitBoundary checks which jobs a split replays and which
// warm it: jobs 1–7 are submitted at 0, 10, ..., 60 and ran 100 s but job
// 2, which ran 3000 s; jobs 8–10 at 2000, 2010, 2020 run 5 s each. Split
// 0.7 replays jobs 8–10 (index 7 on); the history is the jobs that ended
// before 2000: jobs 1 and 3–7 (job 2 ended at 3010, still running at the
// split: neither history nor replayed).
func TestEvaluator_SplitBoundary(t *testing.T) {
	var jobs []policy.Job
	for i := range 7 {
		run := 100.0
		if i == 1 {
			run = 3000 // ends at 3010, after the split instant
		}
		jobs = append(jobs, smJob(int64(i+1), "u", float64(10*i), 1, run, run))
	}
	for i := range 3 {
		jobs = append(jobs, smJob(int64(8+i), "v", float64(2000+10*i), 1, 5, 5))
	}
	e, err := NewEvaluator(jobs, ptCluster, Protocol{Kind: Split, Split: 0.7})
	if err != nil {
		t.Fatal(err)
	}
	if lo, hi := e.Window(); lo != 7 || hi != 10 || e.Job(lo).ID != 8 {
		t.Fatalf("window [%d, %d) starting with job %d, want [7, 10) starting with job 8", lo, hi, e.Job(lo).ID)
	}
	if got := e.History(7); got != 6 {
		t.Errorf("history of the split: %d jobs, want 6 (jobs 1 and 3–7; job 2 ends after it)", got)
	}
	ev, err := e.Evaluate(context.Background(), ptFactory("fifo"))
	if err != nil {
		t.Fatal(err)
	}
	if ev.Jobs != 3 || ev.AvgWait != 0 || ev.AvgBSLD != 1 {
		t.Errorf("evaluated %d jobs, avg wait %g, avg bsld %g; want 3 jobs that never wait (bsld 1)", ev.Jobs, ev.AvgWait, ev.AvgBSLD)
	}
}

// TestEvaluate_HandChecked replays three jobs that each take the whole
// two-processor cluster, submitted together at 0, running 100, 50 and
// 10 s. FIFO runs them in that order: waits 0, 100, 150; bounded
// slowdowns 1, 150/50 = 3, 160/10 = 16, mean 20/3. SJF with true run
// times runs 10, 50, 100: waits 0, 10, 60; slowdowns 1, 60/50, 160/100,
// mean 3.8/3. One sequence of 3 from 3 jobs must be that sequence; the
// split after the first job (1/3) replays the other two.
func TestEvaluate_HandChecked(t *testing.T) {
	jobs := []policy.Job{smJob(1, "a", 0, 2, 100, 100), smJob(2, "b", 0, 2, 50, 50), smJob(3, "c", 0, 2, 10, 10)}
	seq := Protocol{Kind: Sequences, Sequences: 1, Length: 3, Seed: 7, From: 0, To: 1}
	for _, tc := range []struct {
		name     string
		policy   string
		p        Protocol
		wait     float64
		bsld     float64
		sequence bool
	}{
		{"fifo sequence", "fifo", seq, 250.0 / 3, 20.0 / 3, true},
		{"sjf sequence", "sjf-oracle", seq, 70.0 / 3, 3.8 / 3, true},
		// Jobs 2 and 3 from 0: FIFO 2 then 3 (waits 0, 50; bsld 1, 60/10).
		{"fifo split", "fifo", Protocol{Kind: Split, Split: 0.34}, 25, 3.5, false},
		{"sjf split", "sjf-oracle", Protocol{Kind: Split, Split: 0.34}, 5, 1.1, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, err := NewEvaluator(jobs, ptCluster, tc.p)
			if err != nil {
				t.Fatal(err)
			}
			ev, err := e.Evaluate(context.Background(), ptFactory(tc.policy))
			if err != nil {
				t.Fatal(err)
			}
			if math.Abs(ev.AvgWait-tc.wait) > 1e-9 || math.Abs(ev.AvgBSLD-tc.bsld) > 1e-9 {
				t.Errorf("avg wait %g, avg bsld %g; want %g, %g", ev.AvgWait, ev.AvgBSLD, tc.wait, tc.bsld)
			}
			if tc.sequence && (len(ev.Sequences) != 1 || ev.BSLDMin != ev.BSLDMax || ev.BSLDStd != 0) {
				t.Errorf("one sequence: got %d, spread sd %g, [%g, %g]", len(ev.Sequences), ev.BSLDStd, ev.BSLDMin, ev.BSLDMax)
			}
		})
	}
}

// TestEvaluate_SequenceMean checks that a sequence evaluation is the mean
// of its sequences replayed one by one (as splits of the same jobs).
func TestEvaluate_SequenceMean(t *testing.T) {
	jobs := smBusyTrace(200)
	p := Protocol{Kind: Sequences, Sequences: 4, Length: 40, Seed: 3, From: 0.5, To: 1}
	e, err := NewEvaluator(jobs, ptCluster, p)
	if err != nil {
		t.Fatal(err)
	}
	ev, err := e.Evaluate(context.Background(), ptFactory("fairshare"))
	if err != nil {
		t.Fatal(err)
	}
	sum := 0.0
	for i, s := range e.Starts() {
		res, err := Run(e.jobs[s:s+p.Length], Config{Cluster: ptCluster, Policy: smPolicy(t, "fairshare", nil),
			History: e.history[:e.History(s)]})
		if err != nil {
			t.Fatal(err)
		}
		m := Measure(res, MetricsParams{})
		if diff := cmp.Diff(m, ev.Sequences[i]); diff != "" {
			t.Errorf("sequence %d differs from its own replay (-replay +evaluation):\n%s", i, diff)
		}
		sum += m.AvgBSLD
	}
	if math.Abs(ev.AvgBSLD-sum/4) > 1e-9 {
		t.Errorf("mean bsld %g, want %g", ev.AvgBSLD, sum/4)
	}
}

// smBusyTrace is n jobs of 1 or 2 processors from three users, arriving
// faster than the two processors serve them.
func smBusyTrace(n int) []policy.Job {
	jobs := make([]policy.Job, n)
	users := []string{"ann", "bob", "cy"}
	for i := range jobs {
		run := float64(20 + (i*37)%200)
		jobs[i] = smJob(int64(i+1), users[(i*7)%3], float64(i*40), 1+i%2, run, 2*run)
	}
	return jobs
}

// TestEvaluate_WarmLedger shows the history reaching the fair-share
// ledger: ann ran for an hour before the split, bob never did. After it
// both submit, at the same instant, a job that takes the whole cluster.
// Without history fairshare ties them and runs ann's first (job id);
// warmed, bob's usage is lower and his job runs first.
func TestEvaluate_WarmLedger(t *testing.T) {
	jobs := []policy.Job{
		smJob(1, "ann", 0, 2, 3600, 3600),
		smJob(2, "ann", 5000, 2, 100, 100),
		smJob(3, "bob", 5000, 2, 100, 100),
	}
	for _, tc := range []struct {
		name  string
		cold  bool
		first int64
	}{
		{"cold", true, 2},
		{"warm", false, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, err := NewEvaluator(jobs, ptCluster, Protocol{Kind: Split, Split: 0.34, Cold: tc.cold})
			if err != nil {
				t.Fatal(err)
			}
			res, err := e.replay(context.Background(), ptFactory("fairshare"), 1, 3)
			if err != nil {
				t.Fatal(err)
			}
			first := res.Jobs[0].ID
			if res.Jobs[1].Start.Before(res.Jobs[0].Start) {
				first = res.Jobs[1].ID
			}
			if first != tc.first {
				t.Errorf("job %d ran first, want %d", first, tc.first)
			}
		})
	}
}

// TestEvaluate_AtSubmit checks PredictAtSubmit: the predictor sees, before
// predicting a job, exactly the jobs that ended before its submit, and the
// replays look the predictions up without training anything.
func TestEvaluate_AtSubmit(t *testing.T) {
	jobs := ptSerial(10)
	jobs[8].Submit = jobs[7].Submit.Add(50 * time.Second) // while job 8 still runs
	jobs[8].Start, jobs[8].End = jobs[7].End, jobs[7].End.Add(100*time.Second)
	rec := &recordingPredictor{}
	p := Protocol{Kind: Split, Split: 0.7, NewPredictor: func() (policy.Predictor, error) { return rec, nil }, Predictions: PredictAtSubmit}
	e, err := NewEvaluator(jobs, ptCluster, p)
	if err != nil {
		t.Fatal(err)
	}
	want := map[int64]int{8: 7, 9: 7, 10: 9} // job 9 is submitted before job 8 ends
	if diff := cmp.Diff(want, rec.seenAt); diff != "" {
		t.Errorf("jobs observed before each prediction (-want +got):\n%s", diff)
	}
	before := len(rec.observed)
	if _, err := e.Evaluate(context.Background(), ptFactory("fair-sjf")); err != nil {
		t.Fatal(err)
	}
	if len(rec.observed) != before || rec.predictions != 3 {
		t.Errorf("replay observed %d more jobs and the predictor predicted %d times; want 0 more and 3", len(rec.observed)-before, rec.predictions)
	}
}

// recordingPredictor predicts 1 s and records what it learned when.
type recordingPredictor struct {
	observed    []int64
	seenAt      map[int64]int
	predictions int
}

func (r *recordingPredictor) Name() string { return "recording" }

func (r *recordingPredictor) Observe(j *policy.Job) { r.observed = append(r.observed, j.ID) }

func (r *recordingPredictor) Predict(j *policy.Job) policy.Prediction {
	if r.seenAt == nil {
		r.seenAt = map[int64]int{}
	}
	r.seenAt[j.ID] = len(r.observed)
	r.predictions++
	return policy.Prediction{Run: time.Second, Source: "test"}
}

// TestEvaluator_Concurrent evaluates from several goroutines at once (run
// with -race) and checks each gets what a lone call gets.
func TestEvaluator_Concurrent(t *testing.T) {
	jobs := smBusyTrace(300)
	for _, p := range []Protocol{
		{Kind: Split, Split: 0.6},
		{Kind: Sequences, Sequences: 3, Length: 50, Seed: 1, To: 1},
	} {
		t.Run(string(p.Kind), func(t *testing.T) {
			e, err := NewEvaluator(jobs, ptCluster, p)
			if err != nil {
				t.Fatal(err)
			}
			names := []string{"fifo", "fairshare", "fair-sjf", "qssf"}
			want := make([]Evaluation, len(names))
			for i, n := range names {
				if want[i], err = e.Evaluate(context.Background(), ptFactory(n)); err != nil {
					t.Fatal(err)
				}
			}
			got := make([]Evaluation, 2*len(names))
			var wg sync.WaitGroup
			for i := range got {
				wg.Go(func() {
					ev, err := e.Evaluate(context.Background(), ptFactory(names[i%len(names)]))
					if err != nil {
						t.Error(err)
					}
					got[i] = ev
				})
			}
			wg.Wait()
			for i := range got {
				if diff := cmp.Diff(want[i%len(names)], got[i]); diff != "" {
					t.Errorf("%s concurrently (-alone +concurrent):\n%s", names[i%len(names)], diff)
				}
			}
		})
	}
}

func TestMeets(t *testing.T) {
	ref := Metrics{AvgWait: 100, Jain: 0.8, MaxRho: 50}
	for _, tc := range []struct {
		name string
		m    Metrics
		want Constraints
	}{
		{"equal meets all", ref, Constraints{true, true, true}},
		{"better everywhere", Metrics{AvgWait: 90, Jain: 0.9, MaxRho: 40}, Constraints{true, true, true}},
		{"Jain within slack", Metrics{AvgWait: 90, Jain: 0.7901, MaxRho: 40}, Constraints{true, true, true}},
		{"Jain past slack", Metrics{AvgWait: 90, Jain: 0.789, MaxRho: 40}, Constraints{true, false, true}},
		{"longer wait", Metrics{AvgWait: 100.5, Jain: 0.8, MaxRho: 50}, Constraints{false, true, true}},
		{"larger max ρ", Metrics{AvgWait: 100, Jain: 0.8, MaxRho: 50.1}, Constraints{true, true, false}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, Meets(tc.m, ref)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// TestRunProtocol_Constraints judges a contended trace, where policies
// differ, and a serial one, where every order gives the same schedule
// and so every constraint counts as met.
func TestRunProtocol_Constraints(t *testing.T) {
	names := []string{"fifo", "sjf-oracle", "fairshare", "fair-sjf", "qssf"}
	t.Run("contended", func(t *testing.T) {
		tab, err := RunProtocol(context.Background(), smBusyTrace(300), ptCluster,
			ProtocolConfig{Trace: "busy", Policies: names, Protocol: Protocol{Kind: Split, Split: 0.7}, Predictor: "none"})
		if err != nil {
			t.Fatal(err)
		}
		if tab.SameSchedule {
			t.Fatal("a contended trace gave every policy the same schedule")
		}
		ref := tab.Rows[2].Metrics
		for _, r := range tab.Rows {
			if r.Meets == nil {
				t.Fatalf("%s: not judged", r.Name)
			}
			if want := Meets(r.Metrics, ref); *r.Meets != want {
				t.Errorf("%s: meets %+v, want %+v", r.Name, *r.Meets, want)
			}
		}
		if !tab.Rows[2].Meets.All() {
			t.Errorf("fairshare does not meet its own constraints: %+v", *tab.Rows[2].Meets)
		}
	})
	t.Run("same schedule", func(t *testing.T) {
		tab, err := RunProtocol(context.Background(), ptSerial(20), ptCluster,
			ProtocolConfig{Trace: "serial", Policies: names, Protocol: Protocol{Kind: Split, Split: 0.7}, Predictor: "none"})
		if err != nil {
			t.Fatal(err)
		}
		if !tab.SameSchedule {
			t.Fatal("jobs that never overlap: schedules differ")
		}
		for _, r := range tab.Rows {
			if r.Meets == nil || !r.Meets.All() {
				t.Errorf("%s: %+v, want every constraint met", r.Name, r.Meets)
			}
		}
		var out strings.Builder
		if err := tab.WriteText(&out); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(out.String(), "every policy gave the same schedule") {
			t.Errorf("text does not say the schedules are the same:\n%s", out.String())
		}
	})
	t.Run("no reference", func(t *testing.T) {
		tab, err := RunProtocol(context.Background(), smBusyTrace(100), ptCluster,
			ProtocolConfig{Trace: "busy", Policies: []string{"fifo", "qssf"}, Protocol: Protocol{Kind: Split, Split: 0.7}, Predictor: "none"})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range tab.Rows {
			if r.Meets != nil {
				t.Errorf("%s judged without fairshare: %+v", r.Name, *r.Meets)
			}
		}
	})
}

func TestRun_HistoryAfterFirstSubmit(t *testing.T) {
	jobs := []policy.Job{smJob(2, "u", 100, 1, 10, 10)}
	h := []policy.Job{smJob(1, "u", 0, 1, 100, 100)} // ends at 100, the first submit
	_, err := Run(jobs, Config{Cluster: ptCluster, Policy: smPolicy(t, "fifo", nil), History: h})
	if err == nil || !strings.Contains(err.Error(), "did not end before the first submit") {
		t.Errorf("error %v, want one saying the history job did not end before the first submit", err)
	}
}

// TestRunProtocol_Factories checks that a row made by a factory (a tuned
// policy file's) is replayed under its own name, not looked up: the
// learned family at fair-sjf's point gives fair-sjf's schedule.
func TestRunProtocol_Factories(t *testing.T) {
	tab, err := RunProtocol(context.Background(), smBusyTrace(300), ptCluster, ProtocolConfig{Trace: "busy",
		Policies: []string{"fairshare", "fair-sjf", "tuned"}, Protocol: Protocol{Kind: Split, Split: 0.7}, Predictor: "none",
		Factories: map[string]PolicyFactory{"tuned": func() (policy.Policy, error) { return policy.NewLearned(policy.DefaultLearnedParams()) }}})
	if err != nil {
		t.Fatal(err)
	}
	got := tab.Rows[2]
	if got.Name != "tuned" || got.Schedule != tab.Rows[1].Schedule || got.Meets == nil {
		t.Errorf("row %q, schedule %x (fair-sjf's %x), judged %v: want tuned, fair-sjf's schedule, judged", got.Name, got.Schedule, tab.Rows[1].Schedule, got.Meets != nil)
	}
}

// TestProtocolTable_Verdict judges the time split's criterion on
// hand-made tables: the rows from the SDSC-BLUE, synthetic and Philly-MIX1
// evaluations that decide it, trimmed.
// TestProtocolTable_UntestedJain: a split table where no schedule left two
// users backlogged through a Jain window says that its Jain verdicts judged
// nothing; one window under any policy is enough to judge.
func TestProtocolTable_UntestedJain(t *testing.T) {
	all := &Constraints{true, true, true}
	row := func(name string, windows int) ProtocolRow {
		return ProtocolRow{Evaluation: Evaluation{Metrics: Metrics{Name: name, Jain: 1, JainWindows: windows}}, Meets: all}
	}
	const note = "Jain tested nothing here"
	for _, tc := range []struct {
		name string
		tab  ProtocolTable
		want bool
	}{
		{"no window under any policy", ProtocolTable{Kind: Split, Rows: []ProtocolRow{row(Reference, 0), row("fair-sjf", 0), row("tuned", 0)}}, true},
		{"one policy's schedule has a window", ProtocolTable{Kind: Split, Rows: []ProtocolRow{row(Reference, 0), row("fair-sjf", 1), row("tuned", 0)}}, false},
		{"every policy gave the same schedule", ProtocolTable{Kind: Split, SameSchedule: true, Rows: []ProtocolRow{row(Reference, 0), row("tuned", 0)}}, false},
		{"sequences judge no constraint", ProtocolTable{Kind: Sequences, Rows: []ProtocolRow{row(Reference, 0)}}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b strings.Builder
			if err := tc.tab.WriteText(&b); err != nil {
				t.Fatal(err)
			}
			if got := strings.Contains(b.String(), note); got != tc.want {
				t.Errorf("note %q printed %v, want %v:\n%s", note, got, tc.want, b.String())
			}
		})
	}
}

func TestProtocolTable_Verdict(t *testing.T) {
	all, jain, rho := &Constraints{true, true, true}, &Constraints{true, false, true}, &Constraints{true, true, false}
	row := func(name string, bsld float64, c *Constraints) ProtocolRow {
		return ProtocolRow{Evaluation: Evaluation{Metrics: Metrics{Name: name, AvgBSLD: bsld}}, Meets: c}
	}
	for _, tc := range []struct {
		name string
		rows []ProtocolRow
		same bool
		want Verdict
		text string
	}{
		{"lowest of the rows meeting the three, the oracle aside",
			[]ProtocolRow{row(Reference, 314.47, all), row("sjf-limit", 216.41, all), row("sjf-oracle", 191.95, all), row("fair-sjf", 209.03, all), row("tuned", 199.44, all)}, false,
			Verdict{Row: "tuned", Met: true, Meets: *all, Rival: "fair-sjf", RivalBSLD: 209.03},
			"criterion for tuned: met: it meets the three constraints with the lowest avg bsld of the policies meeting them (199.44; next fair-sjf 209.03; sjf-oracle aside)"},
		{"another policy file's row is no rival",
			[]ProtocolRow{row(Reference, 30, all), row("fair-sjf", 25, all), row("sjf-pred", 10, all), row("tuned", 20, all)}, false,
			Verdict{Row: "tuned", Met: true, Meets: *all, Rival: "fair-sjf", RivalBSLD: 25},
			"criterion for tuned: met: it meets the three constraints with the lowest avg bsld of the policies meeting them (20.00; next fair-sjf 25.00; sjf-oracle aside)"},
		{"meets the three, another row is lower",
			[]ProtocolRow{row(Reference, 53.74, all), row("themis", 18.80, jain), row("fair-sjf", 24.86, all), row("tuned", 57.34, all)}, false,
			Verdict{Row: "tuned", Meets: *all, Rival: "fair-sjf", RivalBSLD: 24.86},
			"criterion for tuned: NOT met: it meets the three constraints, but fair-sjf has a lower avg bsld among the policies meeting them (24.86 against 57.34; sjf-oracle aside)"},
		{"misses a constraint",
			[]ProtocolRow{row(Reference, 2.13, all), row("fair-qssf", 1.73, all), row("tuned", 1.51, jain)}, false,
			Verdict{Row: "tuned", Meets: *jain, Rival: "fair-qssf", RivalBSLD: 1.73},
			"criterion for tuned: NOT met: it misses Jain against fairshare"},
		{"an equal avg bsld is not lower",
			[]ProtocolRow{row(Reference, 30, all), row("fair-sjf", 20, all), row("tuned", 20, all)}, false,
			Verdict{Row: "tuned", Meets: *all, Rival: "fair-sjf", RivalBSLD: 20},
			"criterion for tuned: NOT met: it meets the three constraints, but fair-sjf has a lower avg bsld among the policies meeting them (20.00 against 20.00; sjf-oracle aside)"},
		{"no other row meets the three",
			[]ProtocolRow{row(Reference, 30, rho), row("tuned", 25, all)}, false,
			Verdict{Row: "tuned", Met: true, Meets: *all},
			"criterion for tuned: met: it meets the three constraints and no other policy does (sjf-oracle aside)"},
		{"every policy gave the same schedule",
			[]ProtocolRow{row(Reference, 1, all), row("tuned", 1, all)}, true,
			Verdict{Row: "tuned", Met: true, Meets: *all, Rival: Reference, RivalBSLD: 1, SameSchedule: true},
			"criterion for tuned: met: every policy gave the same schedule"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tab := &ProtocolTable{Kind: Split, Rows: tc.rows, SameSchedule: tc.same}
			got, err := tab.Verdict("tuned")
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			tab.Verdicts = []Verdict{got}
			var b strings.Builder
			if err := tab.WriteText(&b); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(b.String(), "\n"+tc.text+"\n") {
				t.Errorf("text lacks the line %q:\n%s", tc.text, b.String())
			}
		})
	}
	for _, tc := range []struct {
		name string
		tab  ProtocolTable
		want string
	}{
		{"no such row", ProtocolTable{Kind: Split, Rows: []ProtocolRow{row(Reference, 1, all)}}, "verdict for tuned: no such row"},
		{"not judged", ProtocolTable{Kind: Split, Rows: []ProtocolRow{row("tuned", 1, nil)}}, "verdict for tuned: constraints not judged (fairshare was not evaluated)"},
		{"sequences", ProtocolTable{Kind: Sequences, Rows: []ProtocolRow{row("tuned", 1, nil)}}, "verdict for tuned: only the time split has one"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := tc.tab.Verdict("tuned"); err == nil || err.Error() != tc.want {
				t.Errorf("error %v, want %q", err, tc.want)
			}
		})
	}
}

// TestProtocolTable_SequenceVerdict checks RLScheduler's criterion: a lower
// mean avg bsld than F1 and SJF by limit, each (the figures are the KTH and
// SDSC-BLUE rows of docs/POLICY.md).
func TestProtocolTable_SequenceVerdict(t *testing.T) {
	row := func(name string, bsld float64) ProtocolRow {
		return ProtocolRow{Evaluation: Evaluation{Metrics: Metrics{Name: name, AvgBSLD: bsld}}}
	}
	for _, tc := range []struct {
		name string
		rows []ProtocolRow
		want string // the verdict's text, or the error's
	}{
		{"lower than both", []ProtocolRow{row("f1", 47.78), row("sjf-limit", 25.14), row("tuned", 20.80)},
			"RLScheduler's criterion for tuned: met: avg bsld 20.80 against f1 47.78, sjf-limit 25.14 (lower than each wanted)"},
		{"lower than one only", []ProtocolRow{row("f1", 13.20), row("sjf-limit", 6.50), row("tuned", 6.56)},
			"RLScheduler's criterion for tuned: NOT met: avg bsld 6.56 against f1 13.20, sjf-limit 6.50 (lower than each wanted)"},
		{"equal is not lower", []ProtocolRow{row("f1", 9), row("sjf-limit", 8), row("tuned", 8)},
			"RLScheduler's criterion for tuned: NOT met: avg bsld 8.00 against f1 9.00, sjf-limit 8.00 (lower than each wanted)"},
		{"a comparator not replayed", []ProtocolRow{row("f1", 9), row("tuned", 8)},
			"sequence verdict for tuned: no sjf-limit row to compare with (replay f1 and sjf-limit)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tab := &ProtocolTable{Kind: Sequences, Rows: tc.rows}
			v, err := tab.SequenceVerdict("tuned")
			got := ""
			if err != nil {
				got = err.Error()
			} else {
				got = v.text()
			}
			if got != tc.want {
				t.Errorf("got  %q\nwant %q", got, tc.want)
			}
		})
	}
	if _, err := (&ProtocolTable{Kind: Split}).SequenceVerdict("tuned"); err == nil {
		t.Errorf("a split table gave a sequence verdict")
	}
}
