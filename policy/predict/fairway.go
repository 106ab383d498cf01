package predict

import (
	"fmt"
	"math"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/fairway-hpc/fairway/policy"
	"github.com/fairway-hpc/fairway/policy/predict/gbt"
)

// FairwayParams configures the fairway predictor. Zero fields take the
// defaults in parentheses; none is tuned to a particular trace.
type FairwayParams struct {
	// History is how many of a user's most recent finished jobs are kept
	// for features (128).
	History int
	// Window is how many of the most recent finished jobs the model is
	// trained on (30000).
	Window int
	// MinTrain is how many finished jobs are needed before the first model
	// is trained; until then a rule chain predicts (300).
	MinTrain int
	// RetrainEvery caps the number of finished jobs between two trainings
	// (10000). Early on the model is retrained whenever history has grown
	// by half since the last training.
	RetrainEvery int
	// Trees, Depth and Rate size the boosted trees (40, 5, 0.2).
	Trees int
	Depth int
	Rate  float64
	// ExpertRate is the weight of the newest job in the running error of
	// each expert (0.1).
	ExpertRate float64
	// ExpertMargin: another expert replaces the snapped model for a user
	// only when its running error is below this fraction of the model's
	// (0.8).
	ExpertMargin float64
}

func (p *FairwayParams) defaults() error {
	for _, f := range []struct {
		name string
		v    *int
		def  int
	}{
		{"history", &p.History, 128}, {"window", &p.Window, 30000}, {"min-train", &p.MinTrain, 300},
		{"retrain-every", &p.RetrainEvery, 10000}, {"trees", &p.Trees, 40}, {"depth", &p.Depth, 5},
	} {
		if *f.v < 0 {
			return fmt.Errorf("fairway: %s %d: want >= 0", f.name, *f.v)
		}
		if *f.v == 0 {
			*f.v = f.def
		}
	}
	if p.Rate < 0 || p.Rate > 1 {
		return fmt.Errorf("fairway: rate %g: want within (0, 1]", p.Rate)
	}
	if p.Rate == 0 {
		p.Rate = 0.2
	}
	if p.ExpertRate < 0 || p.ExpertRate > 1 {
		return fmt.Errorf("fairway: expert rate %g: want within (0, 1]", p.ExpertRate)
	}
	if p.ExpertRate == 0 {
		p.ExpertRate = 0.1
	}
	if p.ExpertMargin == 0 {
		p.ExpertMargin = 0.8
	}
	if p.Depth > 12 {
		return fmt.Errorf("fairway: depth %d: want <= 12", p.Depth)
	}
	return nil
}

// fairwayPredictor is Fairway's run-time predictor. It combines the ideas of
// the baselines instead of betting on one, in three steps:
//
//  1. A model learned online: gradient-boosted trees with least-absolute-
//     deviation loss on log(1+run time) (package gbt), retrained as history
//     grows on a sliding window of recent jobs. Its features are the job's
//     request (limit, CPUs, GPUs, submit hour and weekday, the time to its
//     deadline when it has one) and the user's
//     history: recent run times and their mean of two (Tsafrir et al., TPDS
//     2007), run/request ratios (Alea), the last runs of the same name, size,
//     limit and of the identical job (Helios, SC'21 §5.1), and recent
//     outcomes (failures, jobs that ran to their limit). A median in log space
//     is a median in seconds: the estimate that minimises the mean absolute
//     error.
//  2. Snapping: the model's smooth estimate moves onto the nearest concrete
//     candidate (the limit, or a run time the user actually had) when one lies
//     within the model's typical error. Jobs repeat, and jobs killed at their
//     limit run exactly the limit, so a near miss becomes a hit; the move is
//     within the typical error, so the mean error barely changes.
//  3. Per-user expert choice (follow the leader with a margin, as in
//     prediction with expert advice, Cesa-Bianchi and Lugosi 2006, ch. 2): for
//     each user, the running mean absolute error of the snapped model and of
//     each history rule (the last run, the mean of the last two, the identical
//     job's last run, the Alea ratio rule, the median of the last five, the
//     limit) is kept over the user's finished jobs; a rule replaces the model
//     for that user only while its error is below ExpertMargin × the model's.
//
// Each job's training features and expert errors are computed when it is
// observed, from the history Predict saw when the job was submitted: jobs
// submitted later are left out, and so, when observations arrive in end order
// (a live system, the online protocol), are jobs that ended after the submit.
//
// Until MinTrain jobs have finished, a rule chain predicts: the last run of
// the user's identical job (same name, size and limit), else the mean of the
// user's last two runs, else the limit, else the mean of everything seen.
// A request is a bound, not an estimate: users ask for several
// times what their jobs use.
//
// Upper is the 0.9 quantile: the model's estimate shifted by the 0.9 quantile
// of its log-space residuals on its training window (in-sample, so somewhat
// optimistic). Predictions never exceed the job's time limit. The defaults
// were chosen on the three shared traces together (CTC, KTH, Philly-MIX) and
// are the same for all.
type fairwayPredictor struct {
	p     FairwayParams
	users map[string]*fwUser
	// names interns the names of the kept items (fwItem.name). A name
	// leaves once no kept item has it, and its id is given to the next
	// new name: names are often unique to a job, and a serve observes
	// jobs for months. An id no kept item has matches nothing, as -1
	// (nameID's unknown name) does, so reusing it changes no prediction.
	names     map[string]int32
	nameOf    []string // by id; "" while free
	nameRefs  []int32  // kept items by name id
	freeNames []int32
	// matches summarise the users' kept jobs by key for features.
	matches fwMatches
	// recent is an exponentially weighted mean of log(1+run) over all jobs.
	recent    float64
	observed  int
	sumRun    float64
	x         []float32 // Window × fwFeatures ring, row-major
	y         []float32
	next      int
	filled    int
	trainedAt int
	model     *gbt.Model
	upperLog  float32
	snapLog   float32
	// endOrder and submitOrder are running rates of observations arriving
	// in end and in submit order; lastEnd, lastSubmit the previous one's.
	endOrder, submitOrder float64
	lastEnd, lastSubmit   int64
	trainer               gbt.Trainer
}

// intern returns the id of a job name, adding it when new.
func (f *fairwayPredictor) intern(name string) int32 {
	id, ok := f.names[name]
	if ok {
		return id
	}
	if n := len(f.freeNames); n > 0 {
		id, f.freeNames = f.freeNames[n-1], f.freeNames[:n-1]
	} else {
		id = int32(len(f.nameOf))
		f.nameOf, f.nameRefs = append(f.nameOf, ""), append(f.nameRefs, 0)
	}
	name = strings.Clone(name)
	f.names[name], f.nameOf[id] = id, name
	return id
}

// release drops a kept item's hold on name id, and the name with the
// last.
func (f *fairwayPredictor) release(id int32) {
	if f.nameRefs[id]--; f.nameRefs[id] > 0 {
		return
	}
	delete(f.names, f.nameOf[id])
	f.nameOf[id] = ""
	f.freeNames = append(f.freeNames, id)
}

// nameID is the id of a known name, -1 for a name never observed.
func (f *fairwayPredictor) nameID(name string) int32 {
	if id, ok := f.names[name]; ok {
		return id
	}
	return -1
}

// NewFairwayPredictor returns Fairway's own predictor.
func NewFairwayPredictor(p FairwayParams) (policy.Predictor, error) {
	if err := p.defaults(); err != nil {
		return nil, err
	}
	return &fairwayPredictor{
		p:       p,
		users:   map[string]*fwUser{},
		names:   map[string]int32{},
		matches: newFwMatches(),
		x:       make([]float32, 0, p.Window*fwFeatures),
		y:       make([]float32, 0, p.Window),
		trainer: gbt.Trainer{Config: gbt.Config{
			Trees: p.Trees, Depth: p.Depth, Rate: p.Rate, MinLeaf: 20, Subsample: 0.5,
		}},
	}, nil
}

func (f *fairwayPredictor) Name() string { return "fairway" }

// predictBatchMinPerWorker is the fewest jobs worth a goroutine of
// PredictBatch: below it, starting and joining goroutines costs more than
// the predictions they share out.
const predictBatchMinPerWorker = 4096

// PredictBatch predicts every job of jobs into out. Predict only reads (the
// users, names, matches and model), so a large batch (a full queue after a
// restart, a user's thousand queued jobs after one of theirs finished) is
// shared among the caller and the helpers it can take (gbt.TakeHelpers);
// the results are the same as predicting one job after another.
func (f *fairwayPredictor) PredictBatch(jobs []*policy.Job, out []policy.Prediction) {
	got, release := gbt.TakeHelpers(min(runtime.GOMAXPROCS(0), len(jobs)/predictBatchMinPerWorker) - 1)
	defer release()
	workers := 1 + got
	if workers <= 1 {
		for i, j := range jobs {
			out[i] = f.Predict(j)
		}
		return
	}
	var wg sync.WaitGroup
	chunk := (len(jobs) + workers - 1) / workers
	for lo := 0; lo < len(jobs); lo += chunk {
		hi := min(lo+chunk, len(jobs))
		wg.Go(func() {
			for i := lo; i < hi; i++ {
				out[i] = f.Predict(jobs[i])
			}
		})
	}
	wg.Wait()
}

// Observe learns j's features and outcome, then adds it to the history.
func (f *fairwayPredictor) Observe(j *policy.Job) {
	// Reconstruct the history Predict saw when j was submitted. Jobs
	// observed in end order (a live system, the online protocol) that ended
	// after j's submit were not known then; jobs observed in submit order
	// were, whether or not they had ended.
	end, sub := j.End.Unix(), j.Submit.Unix()
	if f.observed > 0 {
		f.endOrder += 0.01 * (b2f(end >= f.lastEnd) - f.endOrder)
		f.submitOrder += 0.01 * (b2f(sub >= f.lastSubmit) - f.submitOrder)
	}
	f.lastEnd, f.lastSubmit = end, sub
	endBefore := int64(math.MaxInt64)
	if f.endOrder > f.submitOrder {
		endBefore = sub
	}
	u := f.users[j.User]
	var x [fwFeatures]float32
	// The name is interned now rather than when j is added: for a name
	// never observed, its new id matches no kept job, as -1 (nameID's
	// unknown name) does, and one lookup is saved.
	name := f.intern(j.Name)
	f.features(j, u, name, endBefore, &x)
	run := j.RunTime().Seconds()
	y := float32(math.Log1p(run))
	if f.filled < f.p.Window {
		f.x = append(f.x, x[:]...)
		f.y = append(f.y, y)
		f.filled++
	} else {
		copy(f.x[f.next*fwFeatures:], x[:])
		f.y[f.next] = y
	}
	f.next = (f.next + 1) % f.p.Window

	if u == nil {
		u = &fwUser{id: int32(len(f.users)), items: make([]fwItem, 0, 4)}
		f.users[strings.Clone(j.User)] = u
	}
	if f.model != nil {
		f.score(u, j, &x, run)
	}
	var ratio float32
	if j.TimeLimit > 0 {
		ratio = float32(run / j.TimeLimit.Seconds())
	}
	evicted := int32(-1) // the name of the item add drops from the ring
	if len(u.items) == f.p.History {
		evicted = u.at(f.p.History - 1).name
	}
	f.nameRefs[name]++
	u.add(fwItem{
		submit: j.Submit.Unix(), end: j.End.Unix(), run: float32(run), lrun: y,
		limit: float32(j.TimeLimit.Seconds()), ratio: ratio, name: name, cpus: int32(j.CPUs), gpus: int32(j.GPUs),
		failed: j.State != policy.StateCompleted && j.State != policy.StateUnknown && j.State != policy.StateTimeout,
	}, f.p.History, &f.matches)
	if evicted >= 0 {
		f.release(evicted)
	}
	if f.observed == 0 {
		f.recent = float64(y)
	} else {
		f.recent += (float64(y) - f.recent) / 256
	}
	f.observed++
	f.sumRun += run

	since := f.observed - f.trainedAt
	if f.observed >= f.p.MinTrain && (f.model == nil || since >= min(f.p.RetrainEvery, max(f.trainedAt/2, f.p.MinTrain))) {
		f.train()
	}
}

func (f *fairwayPredictor) train() {
	f.model = f.trainer.Train(f.x, f.y, fwFeatures)
	f.trainedAt = f.observed
	res := make([]float32, len(f.y))
	if fitted := f.trainer.Fitted(); fitted != nil {
		// The model's predictions for its training rows, as training
		// reached them.
		for i, y := range f.y {
			res[i] = y - fitted[i]
		}
	} else {
		gbt.Parallel(len(f.y), len(f.y)*f.model.Depth()*f.model.Trees()/gbt.Lanes, func(lo, hi int) {
			for i := lo; i < hi; i++ {
				res[i] = f.y[i] - f.modelPredict(f.row(i))
			}
		})
	}
	f.upperLog = gbt.Quantile32(res, 0.9)
	for i, r := range res {
		if r < 0 {
			res[i] = -r
		}
	}
	f.snapLog = gbt.Quantile32(res, 0.5)
}

// fwEffectiveRuns is how many of the user's newest matching runs the
// effective run time weighs beside the prediction.
const fwEffectiveRuns = 10

// Effective is the job's effective run time (policy.EffectiveRun) over
// its predicted run time run and the user's newest runs of the same job:
// the identical job (same name, CPUs, GPUs and limit) where the user has
// two or more kept, else the same name where three or more, each cut at
// the job's limit, up to fwEffectiveRuns of them, equally likely with the
// prediction. 0 where the user has no such runs: the prediction is then
// all there is.
func (f *fairwayPredictor) Effective(j *policy.Job, run time.Duration) time.Duration {
	u := f.users[j.User]
	if u == nil {
		return 0
	}
	name := f.nameID(j.Name)
	if name < 0 {
		return 0
	}
	limit := float32(j.TimeLimit.Seconds())
	var ident, same [fwEffectiveRuns + 1]float64
	ni, ns, sameAll := 1, 1, 0
	for k := range u.items {
		it := u.at(k)
		if it.name != name {
			continue
		}
		sameAll++
		r := float64(it.run)
		if j.TimeLimit > 0 {
			r = min(r, j.TimeLimit.Seconds())
		}
		if ns <= fwEffectiveRuns {
			same[ns] = r
			ns++
		}
		if ni <= fwEffectiveRuns && it.cpus == int32(j.CPUs) && it.gpus == int32(j.GPUs) && it.limit == limit {
			ident[ni] = r
			ni++
		}
	}
	var runs []float64
	switch {
	case ni-1 >= 2:
		runs = ident[:ni]
	case sameAll >= 3:
		runs = same[:ns]
	default:
		return 0
	}
	runs[0] = run.Seconds()
	return policy.EffectiveRun(runs)
}

func (f *fairwayPredictor) Predict(j *policy.Job) policy.Prediction {
	if f.model == nil {
		return f.rules(j)
	}
	u := f.users[j.User]
	var x [fwFeatures]float32
	f.features(j, u, f.nameID(j.Name), math.MaxInt64, &x)
	var ex [fwExperts]float32
	f.experts(&x, &ex)
	// The user's most accurate expert, once enough of their jobs are
	// scored, replaces the snapped model when it is clearly better.
	best := exSnapped
	if u != nil && u.scored >= fwMinScored {
		bar := float32(f.p.ExpertMargin) * u.errs[exSnapped]
		for i, e := range u.errs {
			if e < u.errs[best] && e < bar {
				best = i
			}
		}
	}
	run := clampRun(j, secs(math.Expm1(float64(ex[best]))))
	up := clampRun(j, secs(math.Expm1(float64(ex[exModel]+f.upperLog))))
	return policy.Prediction{Run: run, Upper: max(up, run), Quantile: 0.9, Source: fwExpertNames[best]}
}

// The experts whose recent accuracy, per user, picks the prediction.
const (
	exSnapped   = iota // the model, snapped to a concrete candidate
	exModel            // the model as is
	exLastMean2        // mean of the user's last two runs (Tsafrir)
	exLast1            // the user's last run
	exSameJob          // the last run of the user's identical job
	exAlea             // limit × max run/limit of the last 5 (Alea)
	exMedian5          // median of the user's last 5 runs
	exLimit            // the time limit
	fwExperts
)

var fwExpertNames = [fwExperts]string{"model-snapped", "model", "user-last-mean", "user-last", "user-same-job", "user-max-ratio", "user-median-5", "limit"}

// fwMinScored is how many of a user's jobs must have been scored before the
// user's most accurate expert replaces the snapped model.
const fwMinScored = 3

// experts fills ex with every expert's value in log(1+seconds); an expert
// without data (no limit, no identical job) gives the snapped model's. The
// model must be trained.
func (f *fairwayPredictor) experts(x *[fwFeatures]float32, ex *[fwExperts]float32) {
	f.modelExperts(x, ex)
	for _, e := range []struct {
		i int
		v float32
	}{{exLastMean2, x[ftLastMean2]}, {exLast1, x[ftLast1]}, {exSameJob, x[ftSameJobLast]}, {exAlea, x[ftAleaMax]}, {exMedian5, x[ftMedian5]}, {exLimit, x[ftLimit]}} {
		ex[e.i] = e.v
		if e.v < 0 {
			ex[e.i] = ex[exSnapped]
		}
	}
}

// modelExperts fills the model's experts: as is and snapped.
func (f *fairwayPredictor) modelExperts(x *[fwFeatures]float32, ex *[fwExperts]float32) {
	l := f.modelPredict(x)
	ex[exModel] = l
	ex[exSnapped] = l
	if c, ok := f.snap(x, l); ok {
		ex[exSnapped] = c
	}
}

// score updates u's running error of every expert with j's outcome.
func (f *fairwayPredictor) score(u *fwUser, j *policy.Job, x *[fwFeatures]float32, run float64) {
	var ex [fwExperts]float32
	f.experts(x, &ex)
	var e [fwExperts]float32
next:
	for i, l := range ex {
		// Experts often agree (an expert without data gives the snapped
		// model's value): an error is a function of the value, so one
		// computed for the same bits is reused.
		for k := range i {
			if math.Float32bits(ex[k]) == math.Float32bits(l) {
				e[i] = e[k]
				continue next
			}
		}
		p := clampRun(j, secs(math.Expm1(float64(l))))
		e[i] = float32(math.Abs(p.Seconds() - run))
	}
	track(&u.errs, &e, u.scored, float32(f.p.ExpertRate))
	u.scored++
}

// track moves the running errors errs, over n scored jobs, towards e by
// rate (the first job's errors are taken as they are).
func track(errs, e *[fwExperts]float32, n int, rate float32) {
	for i := range errs {
		switch {
		case n == 0:
			errs[i] = e[i]
		default:
			errs[i] += rate * (e[i] - errs[i])
		}
	}
}

// row is training row i's features.
func (f *fairwayPredictor) row(i int) *[fwFeatures]float32 {
	return (*[fwFeatures]float32)(f.x[i*fwFeatures : (i+1)*fwFeatures])
}

// modelPredict is the model's estimate of log(1+run) for features x.
func (f *fairwayPredictor) modelPredict(x *[fwFeatures]float32) float32 {
	return f.model.Predict(x[:])
}

// snap moves the model's value l onto the nearest concrete candidate (the
// limit, or a run time the user actually had) when one lies within the
// model's typical error, the median absolute residual on its training
// window. Jobs repeat: a user's identical job usually runs exactly as long
// again, and jobs killed at their limit run exactly the limit. The model's
// median is a smooth estimate that is near such a value but rarely on it;
// snapping keeps the mean absolute error (the move is within the typical
// error) and turns near misses into hits.
func (f *fairwayPredictor) snap(x *[fwFeatures]float32, l float32) (float32, bool) {
	best, bestD := float32(0), f.snapLog
	found := false
	for _, c := range [...]float32{x[ftLimit], x[ftSameJobLast], x[ftLast1], x[ftSameLimitLast], x[ftSameNameLast], x[ftSameSizeLast], x[ftLastMean2], x[ftMedian5]} {
		if c < 0 {
			continue
		}
		d := c - l
		if d < 0 {
			d = -d
		}
		if d < bestD {
			best, bestD, found = c, d, true
		}
	}
	return best, found
}

// rules is the cold-start chain.
func (f *fairwayPredictor) rules(j *policy.Job) policy.Prediction {
	u := f.users[j.User]
	if u != nil {
		for k := range u.items {
			it := u.at(k)
			if it.name == f.nameID(j.Name) && it.cpus == int32(j.CPUs) && it.gpus == int32(j.GPUs) && it.limit == float32(j.TimeLimit.Seconds()) {
				return policy.Prediction{Run: clampRun(j, secs(float64(it.run))), Source: "user-same-job"}
			}
		}
		if len(u.items) >= 2 {
			return policy.Prediction{Run: clampRun(j, secs(float64(u.at(0).run+u.at(1).run)/2)), Source: "user-last-mean"}
		}
	}
	if j.TimeLimit > 0 {
		return policy.Prediction{Run: j.TimeLimit, Source: "limit"}
	}
	if f.observed > 0 {
		return policy.Prediction{Run: secs(f.sumRun / float64(f.observed)), Source: "global-mean"}
	}
	return policy.Prediction{Source: "none"}
}

// The features, all known when a job is submitted. "-1" marks a missing
// value (every present value is >= 0).
const (
	ftLimit         = iota // log(1+time limit)
	ftCPUs                 // log(1+CPUs)
	ftGPUs                 // log(1+GPUs)
	ftUserJobs             // log(1+jobs the user has finished)
	ftLast1                // log(1+run) of the user's last job
	ftLast2                // ... and the one before
	ftLastMean2            // log(1+mean of the last two runs) (Tsafrir)
	ftMedian5              // median log run of the last 5
	ftMeanAll              // mean log run over the kept history
	ftStdAll               // its standard deviation
	ftDecayed              // recency-weighted mean log run (weights 0.7^k)
	ftSameLimitLast        // last log run with the same time limit
	ftSameLimitMed         // median log run of the last 5 with the same limit
	ftSameLimitN           // log(1+count) with the same limit
	ftSameNameLast         // last log run with the same name
	ftSameNameMed          // median log run of the last 5 with the same name
	ftSameNameN            // log(1+count) with the same name
	ftSameSizeLast         // last log run with the same CPUs and GPUs
	ftSameJobLast          // last log run of the identical job (name, size, limit)
	ftSameJobN             // log(1+count) of identical jobs
	ftAleaMax              // log(1+limit × max run/limit of the last 5) (Alea)
	ftRatioMed             // log(1+limit × median run/limit of the last 5)
	ftLastRatio            // run/limit of the last job with a limit
	ftHitLimit             // fraction of the history that ran to >= 98% of its limit
	ftFailed               // fraction of the history that did not complete
	ftLastFailed           // 1 when the last job did not complete
	ftThink                // log(1+seconds since the user's last submit)
	ftSinceEnd             // log(1+seconds since the user's last job ended), 0 if it had not
	ftHour                 // hour of day of the submit (UTC)
	ftWeekday              // day of week of the submit
	ftRecent               // global recency-weighted mean log run
	ftDeadline             // log(1+seconds from submit to the job's deadline)
	fwFeatures
)

// features fills x for job j from u's history (u is nil for a new user):
// only jobs submitted no later than j and ended before endBefore count, so
// that the features computed at Observe match those Predict saw. name is
// the id of j's name (nameID, or intern).
func (f *fairwayPredictor) features(j *policy.Job, u *fwUser, name int32, endBefore int64, x *[fwFeatures]float32) {
	for i := range x {
		x[i] = -1
	}
	limit := float32(j.TimeLimit.Seconds())
	if limit > 0 {
		x[ftLimit] = log1p32(limit)
	}
	x[ftCPUs] = log1pInt(j.CPUs)
	x[ftGPUs] = log1pInt(j.GPUs)
	sub := j.Submit.Unix()
	x[ftHour], x[ftWeekday] = hourWeekday(sub)
	if !j.Deadline.IsZero() {
		x[ftDeadline] = log1p32(float32(max(j.Deadline.Unix()-sub, 0)))
	}
	x[ftRecent] = float32(f.recent)
	x[ftUserJobs] = 0
	if u == nil {
		return
	}
	x[ftUserJobs] = u.logTotal
	keys := fwKeysOf(u.id, name, int32(j.CPUs), int32(j.GPUs), limit)
	var (
		st *fwStats
		m  [fwKinds]fwMatch
	)
	if u.summarized(sub, endBefore) {
		st, m = &u.stats, f.matches.lookup(&keys)
	} else {
		s := u.scanStats(sub, endBefore)
		st, m = &s, u.scanMatches(&keys, sub, endBefore)
	}
	if st.n == 0 {
		return
	}
	x[ftLast1], x[ftLastFailed] = st.last1, st.lastFailed
	x[ftLast2], x[ftLastMean2] = st.last2, st.lastMean2
	x[ftMedian5], x[ftMeanAll], x[ftStdAll], x[ftDecayed] = st.median5, st.mean, st.std, st.decayed
	x[ftLastRatio], x[ftHitLimit], x[ftFailed] = st.lastRatio, st.hitLimit, st.failed
	if st.nRatio > 0 && limit > 0 {
		// The limit scaled by 1 (a job that ran to its limit), or twice by
		// the same ratio, reuses the log already computed: log1p is about a
		// tenth of Predict's time.
		x[ftAleaMax] = x[ftLimit]
		if st.ratioMax != 1 {
			x[ftAleaMax] = log1p32(limit * st.ratioMax)
		}
		x[ftRatioMed] = x[ftAleaMax]
		if st.ratioMed != st.ratioMax {
			x[ftRatioMed] = log1p32(limit * st.ratioMed)
		}
	}
	if st.lastSub >= 0 {
		x[ftThink] = log1p32(float32(max(sub-st.lastSub, 0)))
	}
	if st.lastEnd >= 0 {
		x[ftSinceEnd] = log1p32(float32(max(sub-st.lastEnd, 0)))
	}
	if ml := &m[fwByLimit]; ml.kept > 0 {
		x[ftSameLimitLast] = ml.last[0]
		x[ftSameLimitMed] = ml.med
	}
	x[ftSameLimitN] = log1pInt(int(m[fwByLimit].recent))
	if mn := &m[fwByName]; mn.kept > 0 {
		x[ftSameNameLast] = mn.last[0]
		x[ftSameNameMed] = mn.med
	}
	x[ftSameNameN] = log1pInt(int(m[fwByName].recent))
	if m[fwBySize].kept > 0 {
		x[ftSameSizeLast] = m[fwBySize].last[0]
	}
	if m[fwByJob].kept > 0 {
		x[ftSameJobLast] = m[fwByJob].last[0]
	}
	x[ftSameJobN] = log1pInt(int(m[fwByJob].recent))
}

// fwRecent is how many of a user's newest jobs the aggregate features
// (means, rates, counts) cover; older kept jobs are searched only for the
// last job like the one predicted.
const fwRecent = 32

// hourWeekday is the UTC hour of day and day of week (Sunday 0) of Unix
// time sec, as time.Time's Hour and Weekday give them, by integer
// arithmetic: the conversion through time.Time was a tenth of Predict.
func hourWeekday(sec int64) (hour, weekday float32) {
	day, s := sec/86400, sec%86400
	if s < 0 {
		day, s = day-1, s+86400
	}
	// 1970-01-01 was a Thursday (4).
	wd := (day + 4) % 7
	if wd < 0 {
		wd += 7
	}
	return float32(s / 3600), float32(wd)
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

func log1p32(v float32) float32 { return float32(math.Log1p(float64(max(v, 0)))) }

// log1pInt is log1p32(float32(n)), from a table for the small counts and
// sizes that most features are.
func log1pInt(n int) float32 {
	if n >= 0 && n < len(log1pSmall) {
		return log1pSmall[n]
	}
	return log1p32(float32(n))
}

var log1pSmall = func() (t [256]float32) {
	for n := range t {
		t[n] = log1p32(float32(n))
	}
	return t
}()

// median5 is the median of up to 5 values (the lower middle for an even
// count), without allocating.
func median5(v []float32) float32 {
	var s [5]float32
	n := copy(s[:], v)
	for i := 1; i < n; i++ {
		for k := i; k > 0 && s[k] < s[k-1]; k-- {
			s[k], s[k-1] = s[k-1], s[k]
		}
	}
	return s[(n-1)/2]
}
