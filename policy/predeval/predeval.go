package predeval

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"time"

	"github.com/fairway-hpc/fairway/policy"
	"github.com/fairway-hpc/fairway/policy/predict"
)

// Protocol is the order in which history is revealed to predictors.
type Protocol string

// The protocols; see the package doc.
const (
	SubmitOrder Protocol = "submit-order"
	Online      Protocol = "online"
)

// ParseProtocol returns the Protocol spelled s.
func ParseProtocol(s string) (Protocol, error) {
	switch Protocol(s) {
	case SubmitOrder, Online:
		return Protocol(s), nil
	}
	return "", fmt.Errorf("unknown protocol %q: want submit-order or online", s)
}

// Options tune Run.
type Options struct {
	Protocol Protocol
	// Trace names the input in the Result.
	Trace string
	// Progress, when set, is called now and then with the number of jobs
	// replayed so far and the total.
	Progress func(done, total int)
}

// Result is an evaluation: one Metrics per predictor, in the order given.
type Result struct {
	Trace    string   `json:"trace"`
	Protocol Protocol `json:"protocol"`
	Jobs     int      `json:"jobs"`    // jobs replayed (finished, with a run time)
	Skipped  int      `json:"skipped"` // jobs left out: no start or end time
	// LeftOut counts the trace records the reader left out, by reason;
	// the caller that read the trace fills it.
	LeftOut    map[string]int `json:"left_out,omitempty"`
	Predictors []Metrics      `json:"predictors"`
}

// Metrics scores one predictor. Errors are in seconds. Relative figures
// (MeanRelErr, Within*) are over the jobs that ran for more than 0 s; the
// others over all N jobs. Within10 is the fraction of jobs predicted within
// ±10% of their run time (the Helios accuracy buckets, SC'21 Fig. 14), and so
// on; UnderRate the fraction predicted shorter than they ran.
type Metrics struct {
	Name       string  `json:"name"`
	MAE        float64 `json:"mae_s"`
	MedAE      float64 `json:"medae_s"`
	MeanRelErr float64 `json:"mean_rel_err"`
	Within10   float64 `json:"within_10"`
	Within50   float64 `json:"within_50"`
	Within100  float64 `json:"within_100"`
	UnderRate  float64 `json:"under_rate"`
	N          int     `json:"n"`
	// NotApplicable says why the predictor was not run (it needs requested
	// times and the trace has none); empty when it was.
	NotApplicable string `json:"not_applicable,omitempty"`
}

// ErrNoJobs is wrapped by Run when no job has a start and an end: there is
// nothing to score, and a table of zero errors would name a winner.
var ErrNoJobs = errors.New("no job to evaluate")

// Run replays jobs through preds under opt.Protocol and scores them. Only
// finished jobs with a start and an end are replayed; each predictor sees
// the job as it was when submitted (no start, end, state or exit code).
// The predictors are fed in place and keep what they learned.
func Run(jobs []policy.Job, preds []policy.Predictor, opt Options) (*Result, error) {
	if _, err := ParseProtocol(string(opt.Protocol)); err != nil {
		return nil, err
	}
	res := &Result{Trace: opt.Trace, Protocol: opt.Protocol}
	var done []*policy.Job
	hasLimit := false
	for i := range jobs {
		j := &jobs[i]
		if j.Submit.IsZero() || j.Start.IsZero() || j.End.IsZero() || j.End.Before(j.Start) {
			res.Skipped++
			continue
		}
		done = append(done, j)
		hasLimit = hasLimit || j.TimeLimit > 0
	}
	if len(done) == 0 {
		return nil, fmt.Errorf("evaluate %d jobs: %w", len(jobs), ErrNoJobs)
	}
	res.Jobs = len(done)
	bySubmit := slices.Clone(done)
	sort.SliceStable(bySubmit, func(a, b int) bool { return lessBy(bySubmit[a], bySubmit[b], bySubmit[a].Submit, bySubmit[b].Submit) })
	var byEnd []*policy.Job
	if opt.Protocol == Online {
		byEnd = slices.Clone(done)
		sort.SliceStable(byEnd, func(a, b int) bool { return lessBy(byEnd[a], byEnd[b], byEnd[a].End, byEnd[b].End) })
	}

	active := make([]policy.Predictor, 0, len(preds))
	res.Predictors = make([]Metrics, len(preds))
	pred := make([][]float64, len(preds))
	for i, p := range preds {
		res.Predictors[i].Name = p.Name()
		if nl, ok := p.(predict.NeedsTimeLimit); ok && nl.NeedsTimeLimit() && !hasLimit {
			res.Predictors[i].NotApplicable = "needs requested times; the trace has none"
			continue
		}
		pred[i] = make([]float64, 0, len(done))
		active = append(active, p)
	}
	idx := make([]int, 0, len(active)) // active[k] is preds[idx[k]]
	for i := range preds {
		if pred[i] != nil {
			idx = append(idx, i)
		}
	}
	actual := make([]float64, 0, len(done))
	step := max(len(bySubmit)/100, 1)
	next := 0 // into byEnd
	for n, j := range bySubmit {
		if opt.Protocol == Online {
			for next < len(byEnd) && byEnd[next].End.Before(j.Submit) {
				for _, p := range active {
					p.Observe(byEnd[next])
				}
				next++
			}
		}
		pending := asSubmitted(j)
		for k, p := range active {
			pred[idx[k]] = append(pred[idx[k]], p.Predict(&pending).Run.Seconds())
		}
		actual = append(actual, j.RunTime().Seconds())
		if opt.Protocol == SubmitOrder {
			for _, p := range active {
				p.Observe(j)
			}
		}
		if opt.Progress != nil && (n+1)%step == 0 {
			opt.Progress(n+1, len(bySubmit))
		}
	}
	for i := range preds {
		if pred[i] != nil {
			score(&res.Predictors[i], pred[i], actual)
		}
	}
	return res, nil
}

// lessBy orders jobs by t, then submit time, then id.
func lessBy(a, b *policy.Job, ta, tb time.Time) bool {
	if !ta.Equal(tb) {
		return ta.Before(tb)
	}
	if !a.Submit.Equal(b.Submit) {
		return a.Submit.Before(b.Submit)
	}
	return a.ID < b.ID
}

// asSubmitted is j as a predictor may see it at submit time.
func asSubmitted(j *policy.Job) policy.Job {
	p := *j
	p.Start, p.End = time.Time{}, time.Time{}
	p.State, p.ExitCode = policy.StatePending, 0
	return p
}

// score fills m from predictions and actual run times (seconds).
func score(m *Metrics, pred, actual []float64) {
	n := len(actual)
	m.N = n
	if n == 0 {
		return
	}
	abs := make([]float64, n)
	var sum, rel float64
	var nrel, w10, w50, w100, under int
	for i, a := range actual {
		e := math.Abs(pred[i] - a)
		abs[i] = e
		sum += e
		if pred[i] < a {
			under++
		}
		if a > 0 {
			nrel++
			r := e / a
			rel += r
			if r <= 0.1 {
				w10++
			}
			if r <= 0.5 {
				w50++
			}
			if r <= 1 {
				w100++
			}
		}
	}
	m.MAE = sum / float64(n)
	m.MedAE = Median(abs)
	m.UnderRate = float64(under) / float64(n)
	if nrel > 0 {
		m.MeanRelErr = rel / float64(nrel)
		m.Within10 = float64(w10) / float64(nrel)
		m.Within50 = float64(w50) / float64(nrel)
		m.Within100 = float64(w100) / float64(nrel)
	}
}

// Median is the median of xs (the mean of the two middle values for an even
// count, as numpy computes it); xs is reordered.
func Median(xs []float64) float64 {
	n := len(xs)
	if n == 0 {
		return 0
	}
	sort.Float64s(xs)
	if n%2 == 1 {
		return xs[n/2]
	}
	return (xs[n/2-1] + xs[n/2]) / 2
}

// Lowest names the predictors with the lowest MAE and those with the
// lowest MedAE (more than one when they tie), among those that ran.
func (r *Result) Lowest() (mae, medae []string) {
	bestMAE, bestMed := math.Inf(1), math.Inf(1)
	for _, m := range r.Predictors {
		if m.NotApplicable != "" {
			continue
		}
		switch {
		case m.MAE < bestMAE:
			bestMAE, mae = m.MAE, []string{m.Name}
		case m.MAE == bestMAE:
			mae = append(mae, m.Name)
		}
		switch {
		case m.MedAE < bestMed:
			bestMed, medae = m.MedAE, []string{m.Name}
		case m.MedAE == bestMed:
			medae = append(medae, m.Name)
		}
	}
	return mae, medae
}
