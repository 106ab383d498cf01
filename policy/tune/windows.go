package tune

import (
	"fmt"
	"math"
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
	// Sequences, Length and Seed: RLScheduler's sequences (BSLD), drawn
	// from the training part for training and from the validation part
	// for validation.
	Sequences, Length int
	Seed              uint64
	// Backfill, NewPredictor and Predictions as sim.Protocol's.
	Backfill     sim.Backfill
	NewPredictor func() (policy.Predictor, error)
	Predictions  sim.PredictionMode
}

// Windows are a history cut for tuning.
type Windows struct {
	Train, Validate *sim.Evaluator
	// Seen is how many jobs the tuner looked at, the replayable jobs
	// before the held-out part, submitted From to To.
	Seen     int
	From, To time.Time
	// Total is the history's replayable jobs.
	Total int
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
	if !(s.Warm > 0 && s.Warm < 1) {
		return nil, fmt.Errorf("warm-up fraction %g: want one in (0, 1)", s.Warm)
	}
	all := jobs
	if s.Seen < 1 {
		// A split Evaluator admits and orders the jobs as simulate's does.
		e, err := sim.NewEvaluator(jobs, c, sim.Protocol{Kind: sim.Split, Split: s.Seen, Cold: true})
		if err != nil {
			return nil, fmt.Errorf("hold out the last %g: %w", 1-s.Seen, err)
		}
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
		all = make([]policy.Job, e.Jobs())
		for i := range all {
			all[i] = e.Job(i)
		}
	}
	w := &Windows{Seen: len(all), Total: len(jobs)}
	if len(all) > 0 {
		w.From, w.To = all[0].Submit, all[len(all)-1].Submit
	}
	base := sim.Protocol{Backfill: s.Backfill, NewPredictor: s.NewPredictor, Predictions: s.Predictions}
	var err error
	switch s.Objective {
	case BSLD:
		tr, val := base, base
		tr.Kind, tr.Sequences, tr.Length, tr.Seed, tr.From, tr.To = sim.Sequences, s.Sequences, s.Length, s.Seed, 0, 1-s.Validate
		val.Kind, val.Sequences, val.Length, val.Seed, val.From, val.To = sim.Sequences, s.Sequences, s.Length, s.Seed, 1-s.Validate, 1
		if w.Train, err = sim.NewEvaluator(all, c, tr); err != nil {
			return nil, fmt.Errorf("training sequences: %w", err)
		}
		if w.Validate, err = sim.NewEvaluator(all, c, val); err != nil {
			return nil, fmt.Errorf("validation sequences: %w", err)
		}
	default:
		cut := int(math.Floor((1 - s.Validate) * float64(len(all))))
		tr, val := base, base
		tr.Kind, tr.Split = sim.Split, s.Warm
		val.Kind, val.Split = sim.Split, 1-s.Validate
		if w.Train, err = sim.NewEvaluator(all[:cut], c, tr); err != nil {
			return nil, fmt.Errorf("training window: %w", err)
		}
		if w.Validate, err = sim.NewEvaluator(all, c, val); err != nil {
			return nil, fmt.Errorf("validation window: %w", err)
		}
	}
	return w, nil
}
