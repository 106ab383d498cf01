package predeval

import (
	"errors"
	"fmt"
	"math"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/fairway-hpc/fairway/internal/shareddata"
	"github.com/fairway-hpc/fairway/internal/trace"
	"github.com/fairway-hpc/fairway/policy"
	"github.com/fairway-hpc/fairway/policy/predict"
	"github.com/google/go-cmp/cmp"
)

var t0 = time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)

func job(id int64, submit, wait, run int) policy.Job {
	s := t0.Add(time.Duration(submit) * time.Second)
	return policy.Job{ID: id, User: "u", ArrayTask: -1, State: policy.StateCompleted, TimeLimit: time.Hour,
		Submit: s, Start: s.Add(time.Duration(wait) * time.Second), End: s.Add(time.Duration(wait+run) * time.Second)}
}

// recorder predicts 0 and notes, at each prediction, which jobs it had been
// shown, and whether the job it was asked about still carried outcomes.
type recorder struct {
	seen   []int64
	log    map[int64][]int64
	leaked bool
}

func (r *recorder) Name() string          { return "recorder" }
func (r *recorder) Observe(j *policy.Job) { r.seen = append(r.seen, j.ID) }
func (r *recorder) Predict(j *policy.Job) policy.Prediction {
	r.log[j.ID] = append([]int64(nil), r.seen...)
	r.leaked = r.leaked || !j.Start.IsZero() || !j.End.IsZero() || j.State != policy.StatePending
	return policy.Prediction{Source: "zero"}
}

func TestRun_Protocols(t *testing.T) {
	// Job 1 runs 0-100 s, job 2 is submitted at 10 s and runs 5 s, job 3
	// is submitted at 50 s, job 4 at 200 s; job 5 has not started.
	jobs := []policy.Job{job(3, 50, 0, 10), job(1, 0, 0, 100), job(2, 10, 0, 5), job(4, 200, 0, 1), {ID: 5, Submit: t0}}
	tests := []struct {
		protocol Protocol
		want     map[int64][]int64
	}{
		{SubmitOrder, map[int64][]int64{1: nil, 2: {1}, 3: {1, 2}, 4: {1, 2, 3}}},
		// Online: job 2 ended at 15 s, job 3 at 60 s, job 1 at 100 s.
		{Online, map[int64][]int64{1: nil, 2: nil, 3: {2}, 4: {2, 3, 1}}},
	}
	for _, tt := range tests {
		t.Run(string(tt.protocol), func(t *testing.T) {
			r := &recorder{log: map[int64][]int64{}}
			res, err := Run(jobs, []policy.Predictor{r}, Options{Protocol: tt.protocol})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, r.log); diff != "" {
				t.Errorf("history seen at each prediction (-want +got):\n%s", diff)
			}
			if r.leaked {
				t.Error("a predictor saw a job's start, end or state")
			}
			if diff := cmp.Diff([2]int{4, 1}, [2]int{res.Jobs, res.Skipped}); diff != "" {
				t.Errorf("[jobs, skipped] (-want +got):\n%s", diff)
			}
		})
	}
}

// fixed predicts the same run time for every job.
type fixed struct {
	name  string
	run   time.Duration
	limit bool
}

func (f fixed) Name() string                          { return f.name }
func (f fixed) Observe(*policy.Job)                   {}
func (f fixed) Predict(*policy.Job) policy.Prediction { return policy.Prediction{Run: f.run} }
func (f fixed) NeedsTimeLimit() bool                  { return f.limit }

func TestRun_Metrics(t *testing.T) {
	// Run times 100, 200, 400, 0 s; a prediction of 180 s errs by 80, 20,
	// 220, 180: MAE 125, MedAE (80+180)/2 = 130; relative errors over the
	// three jobs that ran: 0.8, 0.1, 0.55.
	jobs := []policy.Job{job(1, 0, 0, 100), job(2, 1, 0, 200), job(3, 2, 0, 400), job(4, 3, 0, 0)}
	res, err := Run(jobs, []policy.Predictor{fixed{name: "p180", run: 180 * time.Second}}, Options{Protocol: SubmitOrder, Trace: "t"})
	if err != nil {
		t.Fatal(err)
	}
	want := &Result{Trace: "t", Protocol: SubmitOrder, Jobs: 4, Predictors: []Metrics{{
		Name: "p180", MAE: 125, MedAE: 130, MeanRelErr: (0.8 + 0.1 + 0.55) / 3,
		Within10: 1.0 / 3, Within50: 1.0 / 3, Within100: 1, UnderRate: 0.5, N: 4,
	}}}
	if diff := cmp.Diff(want, res, cmp.Comparer(func(a, b float64) bool { return math.Abs(a-b) < 1e-9 })); diff != "" {
		t.Errorf("Run (-want +got):\n%s", diff)
	}
}

func TestRun_NotApplicable(t *testing.T) {
	jobs := []policy.Job{job(1, 0, 0, 100), job(2, 1, 0, 200)}
	for i := range jobs {
		jobs[i].TimeLimit = 0
	}
	res, err := Run(jobs, []policy.Predictor{fixed{name: "needs", limit: true}, fixed{name: "free"}}, Options{Protocol: Online})
	if err != nil {
		t.Fatal(err)
	}
	got := []string{res.Predictors[0].NotApplicable, fmt.Sprint(res.Predictors[0].N), res.Predictors[1].NotApplicable, fmt.Sprint(res.Predictors[1].N)}
	want := []string{"needs requested times; the trace has none", "0", "", "2"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestParseProtocol(t *testing.T) {
	for _, s := range []string{"submit-order", "online"} {
		if p, err := ParseProtocol(s); err != nil || string(p) != s {
			t.Errorf("ParseProtocol(%q) = %q, %v", s, p, err)
		}
	}
	if _, err := ParseProtocol("offline"); err == nil {
		t.Error(`ParseProtocol("offline"): want error`)
	}
	if _, err := Run(nil, nil, Options{Protocol: "x"}); err == nil {
		t.Error(`Run with protocol "x": want error`)
	}
}

func TestRun_NoJobs(t *testing.T) {
	tests := []struct {
		name string
		jobs []policy.Job
	}{
		{"none", nil},
		{"none started", []policy.Job{{ID: 1, Submit: t0}, {ID: 2, Submit: t0.Add(time.Second)}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := RunNamed(tt.jobs, []string{"tsafrir"}, Options{Protocol: SubmitOrder})
			if !errors.Is(err, ErrNoJobs) {
				t.Errorf("err = %v, result %+v; want %v", err, res, ErrNoJobs)
			}
		})
	}
}

// sharedTrace reads one of the shared traces ($FAIRWAY_TRACES, else
// shared/data/traces beside the repository). A fresh clone has none: skip,
// except under CI=true.
func sharedTrace(tb testing.TB, file string, f trace.Format) []policy.Job {
	tb.Helper()
	fh, err := os.Open(shareddata.Trace(tb, file))
	if err != nil {
		tb.Fatal(err)
	}
	defer fh.Close()
	tr, err := trace.ReadAll(fh, f, trace.Options{Name: file})
	if err != nil {
		tb.Fatal(err)
	}
	return tr.Jobs
}

func within(got, want, tol float64) bool { return math.Abs(got-want) <= tol*want }

// TestAlea_Published reproduces the published alea errors under submit-order
// (../shared/data/traces/README.md): CTC MAE 7118 s, MedAE 636 s; KTH
// filtered 3773.8 s, 182.0 s; each within 1%.
func TestAlea_Published(t *testing.T) {
	tests := []struct {
		file       string
		mae, medae float64
	}{
		{"CTC-SP2-1996-3.1-cln.swf.gz", 7118, 636},
		{"KTH-SP2-filtered.swf.gz", 3773.8, 182.0},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			jobs := sharedTrace(t, tt.file, trace.SWF)
			p, err := predict.New("alea", predict.Params{})
			if err != nil {
				t.Fatal(err)
			}
			res, err := Run(jobs, []policy.Predictor{p}, Options{Protocol: SubmitOrder})
			if err != nil {
				t.Fatal(err)
			}
			m := res.Predictors[0]
			if !within(m.MAE, tt.mae, 0.01) || !within(m.MedAE, tt.medae, 0.01) {
				t.Errorf("alea MAE %.1f s, MedAE %.1f s; published %.1f, %.1f (1%% allowed)", m.MAE, m.MedAE, tt.mae, tt.medae)
			}
			t.Logf("alea MAE %.1f s, MedAE %.1f s (published %.1f, %.1f)", m.MAE, m.MedAE, tt.mae, tt.medae)
		})
	}
}

// TestFairway_BeatsBaselines checks the bar: on CTC, KTH and
// Philly-MIX, under both protocols, fairway has a lower MAE and a lower MedAE
// than every applicable baseline (on Philly-MIX, limit and alea are not
// applicable: it has no requested times).
func TestFairway_BeatsBaselines(t *testing.T) {
	traces := []struct {
		file   string
		format trace.Format
	}{
		{"CTC-SP2-1996-3.1-cln.swf.gz", trace.SWF},
		{"KTH-SP2-filtered.swf.gz", trace.SWF},
		{"Philly-MIX1.csv.gz", trace.PhillyMIX},
	}
	for _, tr := range traces {
		jobs := sharedTrace(t, tr.file, tr.format)
		for _, proto := range []Protocol{SubmitOrder, Online} {
			t.Run(tr.file+"/"+string(proto), func(t *testing.T) {
				t.Parallel()
				res, err := RunNamed(jobs, predict.Names(), Options{Protocol: proto})
				if err != nil {
					t.Fatal(err)
				}
				var fw Metrics
				for _, m := range res.Predictors {
					if m.Name == "fairway" {
						fw = m
					}
				}
				applicable := 0
				for _, m := range res.Predictors {
					if m.Name == "fairway" || m.NotApplicable != "" {
						continue
					}
					applicable++
					if fw.MAE >= m.MAE || fw.MedAE >= m.MedAE {
						t.Errorf("fairway MAE %.1f s, MedAE %.1f s; %s %.1f, %.1f", fw.MAE, fw.MedAE, m.Name, m.MAE, m.MedAE)
					}
					t.Logf("%-8s MAE %8.1f  MedAE %7.1f", m.Name, m.MAE, m.MedAE)
				}
				t.Logf("%-8s MAE %8.1f  MedAE %7.1f", "fairway", fw.MAE, fw.MedAE)
				if applicable < 2 {
					t.Errorf("only %d baselines applicable", applicable)
				}
			})
		}
	}
}

// BenchmarkEvalOnline replays 200,000 jobs under the online protocol through
// the fairway predictor: the CTC trace repeated (each copy with its own users
// and its submit times moved after the previous copy's), cut at 200,000.
func BenchmarkEvalOnline(b *testing.B) {
	ctc := sharedTrace(b, "CTC-SP2-1996-3.1-cln.swf.gz", trace.SWF)
	const n = 200000
	var span time.Duration
	for _, j := range ctc {
		span = max(span, j.End.Sub(ctc[0].Submit))
	}
	jobs := make([]policy.Job, 0, n)
	for c := 0; len(jobs) < n; c++ {
		for _, j := range ctc {
			if len(jobs) == n {
				break
			}
			shift := time.Duration(c) * span
			j.ID += int64(c) * 1_000_000
			j.User = fmt.Sprintf("%s-%d", j.User, c)
			j.Submit, j.Start, j.End = j.Submit.Add(shift), j.Start.Add(shift), j.End.Add(shift)
			jobs = append(jobs, j)
		}
	}
	b.Run(fmt.Sprintf("jobs=%d", n), func(b *testing.B) {
		for b.Loop() {
			p, err := predict.New("fairway", predict.Params{})
			if err != nil {
				b.Fatal(err)
			}
			res, err := Run(jobs, []policy.Predictor{p}, Options{Protocol: Online})
			if err != nil {
				b.Fatal(err)
			}
			if m := res.Predictors[0]; m.N != n || m.MAE <= 0 {
				b.Fatalf("evaluation scored nothing: %+v", m)
			}
		}
	})
}

func TestResult_Lowest(t *testing.T) {
	r := &Result{Predictors: []Metrics{
		{Name: "limit", MAE: 9, MedAE: 1},
		{Name: "alea", NotApplicable: "needs limits"},
		{Name: "tsafrir", MAE: 5, MedAE: 3},
		{Name: "fairway", MAE: 5, MedAE: 2},
	}}
	mae, medae := r.Lowest()
	if strings.Join(mae, ",") != "tsafrir,fairway" || strings.Join(medae, ",") != "limit" {
		t.Errorf("Lowest() = %v, %v; want [tsafrir fairway], [limit]", mae, medae)
	}
}
