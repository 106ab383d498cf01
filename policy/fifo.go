package policy

import "fmt"

// FIFOParams configures fifo, which has no parameters.
type FIFOParams struct{}

// fifo ranks by submit time, oldest first: Slurm's priority/basic, the
// baseline every other policy is compared with. Value is the job's age in
// seconds (Snapshot.Now − Submit), its one part "age_s"; equal submit
// times fall to the job id.
type fifo struct{ sc scorer }

// NewFIFO returns the "fifo" policy.
func NewFIFO(FIFOParams) (Policy, error) {
	return &fifo{sc: scorer{names: []string{"age_s"}, weights: []float64{1}}}, nil
}

func (*fifo) Name() string { return "fifo" }

func (p *fifo) Rank(s *Snapshot) ([]Score, error) {
	parts := s.partsBuf(len(s.Pending))
	for i := range s.Pending {
		parts[i] = s.Now.Sub(s.Pending[i].Submit).Seconds()
	}
	scores, err := p.sc.rank(s, parts, nil)
	if err != nil {
		return nil, fmt.Errorf("fifo: %w", err)
	}
	return scores, nil
}

func (*fifo) staticOrder() bool { return true }

// staticKey is 0 for every job, leaving the order to compareRank's
// tie-break, submit time then id: Rank's value, the age
// Now.Sub(Submit).Seconds(), never increases with the submit time
// (Duration.Seconds is monotone: a whole-second part plus a fraction
// below 1, rounded), so two jobs it tells apart are in submit order, and
// two it does not fall to the same tie-break. A zero submit time is the
// oldest for both (the largest age; math.MinInt64 as the tie-break).
func (*fifo) staticKey(*Snapshot, *Job) (float64, error) { return 0, nil }
