package tune

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/fairway-hpc/fairway/policy"
	"github.com/fairway-hpc/fairway/policy/sim"
)

// Setup is how a history is cut into the tuner's windows.
type Setup struct {
	Objective Objective
	// Seen is the fraction of the history, in submit order, the tuner may
	// look at (0.7: the first 70%); the rest is held out for the final
	// evaluation (`simulate --split 0.7`), which the tuner never replays.
	Seen float64
	// Validate is the fraction of the seen part, at its end, that only
	// validates (0.3: its last 30%). The search trains on the part before.
	Validate float64
	// Warm is the fraction of the training part that only warms the
	// fair-share ledger and predictor before the replayed training jobs
	// (Fair and Wait; 0.3 by default).
	Warm float64
	// Chunks cuts the replayed training jobs into this many consecutive
	// windows, each replayed on its own, warmed by the history before it
	// (Fair and Wait; 3 by default): a point must meet the constraints on
	// each, which a ranking fitted to one period's extremes (max ρ) does
	// not.
	Chunks int
	// Sequences, Length and Seed: RLScheduler's sequences (BSLD), drawn
	// from the training part for training and from the validation part
	// for validation.
	Sequences, Length int
	Seed              uint64
	// ValidationSequences is how many sequences the validation part draws
	// (BSLD; 0: 3 × Sequences). Ten sequences' mean bounded slowdown has a
	// standard error of a third of its mean or more on the archive traces,
	// enough to choose the wrong candidate; the validation replays only
	// the candidates, so more sequences there cost little.
	ValidationSequences int
	// Loads are the offered loads each training and validation window is
	// also replayed at (Fair and Wait; nil: 1 only, the windows as
	// recorded). The future's load is unknown: a point must meet the
	// constraints at every load, and its value is the mean over them. A
	// window at load x has its replayed jobs' inter-arrival times divided
	// by x about its first replayed submit (sim.ScaleLoadFrom); the
	// history before it, sizes and run times stay. 1 must be one of them.
	Loads []float64
	// ValueLoads, when set, are the loads the value is averaged over
	// instead (1 among them): the constraints are then required at Loads
	// only, and the windows are replayed at both lists' loads. A heavier
	// load that no point can meet the constraints at still ranks the
	// points that meet them at the recorded load.
	ValueLoads []float64
	// Backfill, NewPredictor and Predictions as sim.Protocol's.
	Backfill     sim.Backfill
	NewPredictor func() (policy.Predictor, error)
	Predictions  sim.PredictionMode
}

// Windows are a history cut for tuning.
type Windows struct {
	// Train are the training windows, each at Loads' first load, then
	// each at the next, and so on.
	Train    []*sim.Evaluator
	Validate *sim.Evaluator
	// ValidateLoads is the validation window at the loads of Loads other
	// than 1, in their order (none by default).
	ValidateLoads []*sim.Evaluator
	// Loads are the loads the windows are replayed at: Setup.Loads, then
	// those of Setup.ValueLoads not among them ([1] by default).
	Loads []float64
	// TrainCounts and ValidateLoadsCounts say what each window of Train
	// and ValidateLoads counts towards (tune.Config's): nil unless
	// Setup.ValueLoads is set.
	TrainCounts, ValidateLoadsCounts []Counts
	// Table is the window the caller's validation table replays every
	// compared policy on: Validate, but with BSLD only the first
	// Setup.Sequences of its sequences (the same draws, DrawStarts being
	// sequential), so that the table of a dozen policies costs what it did
	// when validation drew as many sequences as training.
	Table *sim.Evaluator
	// Seen is how many jobs the tuner looked at, the replayable jobs
	// before the held-out part, submitted From to To.
	Seen     int
	From, To time.Time
	// Total is the history's replayable jobs.
	Total int
	// LeftOut counts the history's jobs no replay runs, by reason (the
	// reasons of sim.Result.Skipped); nil when there are none.
	LeftOut map[string]int
}

// NewWindows cuts jobs on cluster c as s says. The seen part is the
// replayable jobs before index ⌊Seen × n⌋ in submit order, exactly the
// jobs before `simulate --split Seen`'s evaluated part, so that the final
// table replays none of them.
func NewWindows(jobs []policy.Job, c sim.Cluster, s Setup) (*Windows, error) {
	if !(s.Seen > 0 && s.Seen <= 1) {
		return nil, fmt.Errorf("train fraction %g: want one in (0, 1]", s.Seen)
	}
	if !(s.Validate > 0 && s.Validate < 1) {
		return nil, fmt.Errorf("validation fraction %g: want one in (0, 1)", s.Validate)
	}
	if s.Warm == 0 {
		s.Warm = 0.3
	}
	if s.Chunks == 0 {
		s.Chunks = 3
	}
	if s.ValidationSequences == 0 {
		s.ValidationSequences = 3 * s.Sequences
	}
	if s.ValidationSequences < 0 {
		return nil, fmt.Errorf("validation sequences %d: want >= 1 (0: 3 × the training's)", s.ValidationSequences)
	}
	if s.Chunks < 0 {
		return nil, fmt.Errorf("training chunks %d: want >= 1", s.Chunks)
	}
	if !(s.Warm > 0 && s.Warm < 1) {
		return nil, fmt.Errorf("warm-up fraction %g: want one in (0, 1)", s.Warm)
	}
	loads := s.Loads
	if len(loads) == 0 {
		loads = []float64{1}
	}
	if err := checkLoads(loads); err != nil {
		return nil, err
	}
	if len(loads) > 1 && s.Objective == BSLD {
		return nil, fmt.Errorf("loads %v: only with the objectives fair and wait (the sequences of bsld start on an empty cluster each)", loads)
	}
	var counts map[float64]Counts
	if s.ValueLoads != nil {
		if err := checkLoads(s.ValueLoads); err != nil {
			return nil, fmt.Errorf("value loads: %w", err)
		}
		if s.Objective == BSLD {
			return nil, fmt.Errorf("value loads %v: only with the objectives fair and wait", s.ValueLoads)
		}
		loads = slices.Clone(loads)
		counts = map[float64]Counts{}
		for _, x := range loads {
			counts[x] = Counts{Constraints: true}
		}
		for _, x := range s.ValueLoads {
			if _, ok := counts[x]; !ok {
				loads = append(loads, x)
			}
			counts[x] = Counts{Constraints: counts[x].Constraints, Value: true}
		}
	}
	all := jobs
	var admitted *sim.Evaluator // over the whole history
	if s.Seen < 1 {
		// A split Evaluator admits and orders the jobs as simulate's does.
		e, err := sim.NewEvaluator(jobs, c, sim.Protocol{Kind: sim.Split, Split: s.Seen, Cold: true})
		if err != nil {
			return nil, fmt.Errorf("hold out the last %.6g: %w", 1-s.Seen, err) // %.6g: 0.3, not 1 − 0.7 = 0.30000000000000004
		}
		admitted = e
		lo, _ := e.Window()
		all = make([]policy.Job, lo)
		for i := range lo {
			all[i] = e.Job(i)
		}
	} else {
		e, err := sim.NewEvaluator(jobs, c, sim.Protocol{Kind: sim.Sequences, Sequences: 1, Length: 1, To: 1, Cold: true})
		if err != nil {
			return nil, err
		}
		admitted = e
		all = make([]policy.Job, e.Jobs())
		for i := range all {
			all[i] = e.Job(i)
		}
	}
	w := &Windows{Seen: len(all), Total: admitted.Jobs(), LeftOut: admitted.Skipped(), Loads: loads}
	if len(all) > 0 {
		w.From, w.To = all[0].Submit, all[len(all)-1].Submit
	}
	base := sim.Protocol{Backfill: s.Backfill, NewPredictor: s.NewPredictor, Predictions: s.Predictions}
	var err error
	switch s.Objective {
	case BSLD:
		tr, val := base, base
		tr.Kind, tr.Sequences, tr.Length, tr.Seed, tr.From, tr.To = sim.Sequences, s.Sequences, s.Length, s.Seed, 0, 1-s.Validate
		val.Kind, val.Sequences, val.Length, val.Seed, val.From, val.To = sim.Sequences, s.ValidationSequences, s.Length, s.Seed, 1-s.Validate, 1
		e, err := sim.NewEvaluator(all, c, tr)
		if err != nil {
			return nil, fmt.Errorf("training sequences: %w", err)
		}
		w.Train = []*sim.Evaluator{e}
		if w.Validate, err = sim.NewEvaluator(all, c, val); err != nil {
			return nil, fmt.Errorf("validation sequences: %w", err)
		}
		w.Table = w.Validate
		if s.ValidationSequences > s.Sequences {
			val.Sequences = s.Sequences
			if w.Table, err = sim.NewEvaluator(all, c, val); err != nil {
				return nil, fmt.Errorf("validation table's sequences: %w", err)
			}
		}
	default:
		cut := int(math.Floor((1 - s.Validate) * float64(len(all))))
		val := base
		val.Kind, val.Split = sim.Split, 1-s.Validate
		// Chunk k replays jobs [a, b) of the training part: a Split of
		// all[:b] at a (the fraction nudged half a job up, so that its
		// floor is a whatever the rounding).
		lo := int(math.Floor(s.Warm * float64(cut)))
		for _, x := range loads {
			for k := range s.Chunks {
				a, b := lo+(cut-lo)*k/s.Chunks, lo+(cut-lo)*(k+1)/s.Chunks
				if a == 0 || a >= b {
					return nil, fmt.Errorf("training window: %d jobs cannot make %d chunks after a warm-up of %d: %w", cut, s.Chunks, lo, sim.ErrShortWindow)
				}
				tr := base
				tr.Kind, tr.Split = sim.Split, (float64(a)+0.5)/float64(b)
				part := all[:b]
				if x != 1 {
					if part, err = sim.ScaleLoadFrom(part, a, x); err != nil {
						return nil, fmt.Errorf("training window %d: %w", k+1, err)
					}
				}
				e, err := sim.NewEvaluator(part, c, tr)
				if err != nil {
					at := ""
					if x != 1 {
						at = fmt.Sprintf(" at load %g", x)
					}
					return nil, fmt.Errorf("training window %d%s: %w", k+1, at, err)
				}
				w.Train = append(w.Train, e)
				if counts != nil {
					w.TrainCounts = append(w.TrainCounts, counts[x])
				}
			}
		}
		if w.Validate, err = sim.NewEvaluator(all, c, val); err != nil {
			return nil, fmt.Errorf("validation window: %w", err)
		}
		w.Table = w.Validate
		for _, x := range loads {
			if x == 1 {
				continue
			}
			part, err := sim.ScaleLoadFrom(all, cut, x)
			if err != nil {
				return nil, fmt.Errorf("validation window: %w", err)
			}
			e, err := sim.NewEvaluator(part, c, val)
			if err != nil {
				return nil, fmt.Errorf("validation window at load %g: %w", x, err)
			}
			w.ValidateLoads = append(w.ValidateLoads, e)
			if counts != nil {
				w.ValidateLoadsCounts = append(w.ValidateLoadsCounts, counts[x])
			}
		}
	}
	return w, nil
}

// ParseLoads reads a comma-separated list of loads ("1,1.5") and checks it
// as NewWindows does.
func ParseLoads(list string) ([]float64, error) {
	var out []float64
	for _, f := range strings.Split(list, ",") {
		x, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
		if err != nil {
			return nil, fmt.Errorf("load %q: want a number like 1.5", strings.TrimSpace(f))
		}
		out = append(out, x)
	}
	return out, checkLoads(out)
}

// checkLoads refuses a load list the tuner cannot use, naming the load.
func checkLoads(loads []float64) error {
	has1 := false
	for i, x := range loads {
		if !(x > 0) || x > sim.MaxLoad {
			return fmt.Errorf("load %g: want a factor > 0 and at most %d, as simulate --load", x, sim.MaxLoad)
		}
		if slices.Contains(loads[:i], x) {
			return fmt.Errorf("load %g: given twice", x)
		}
		has1 = has1 || x == 1
	}
	if !has1 {
		return fmt.Errorf("loads %v: want 1 (the windows as recorded) among them", loads)
	}
	return nil
}

// AutoLoad is the load `--loads auto` adds when the recorded load cannot
// judge fairness between users (JainUntested): twice the recorded one.
const AutoLoad = 2

// JainUntested reports whether w's validation window, replayed under the
// Reference at the recorded load, has no Jain window (no hour with two
// users backlogged throughout) although two or more users submitted in
// it, and how many users did. Such a history cannot tell a ranking that
// is fair between users from one that is not: every point meets the Jain
// constraint, and on a quiet history every point ties. A heavier replay of
// the same jobs is where users compete, as they will once the load rises.
func JainUntested(ctx context.Context, w *Windows) (bool, int, error) {
	lo, hi := w.Validate.Window()
	users := map[string]bool{}
	for i := lo; i < hi; i++ {
		users[w.Validate.Job(i).User] = true
	}
	if len(users) < 2 {
		return false, len(users), nil
	}
	ref, err := w.Validate.Evaluate(ctx, func() (policy.Policy, error) { return policy.New(sim.Reference, nil) })
	if err != nil {
		return false, len(users), fmt.Errorf("replay %s on the validation window: %w", sim.Reference, err)
	}
	return ref.JainWindows == 0, len(users), nil
}
