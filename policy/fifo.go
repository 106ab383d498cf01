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
	parts := make([]float64, len(s.Pending))
	for i := range s.Pending {
		parts[i] = s.Now.Sub(s.Pending[i].Submit).Seconds()
	}
	scores, err := p.sc.rank(s, parts, nil)
	if err != nil {
		return nil, fmt.Errorf("fifo: %w", err)
	}
	return scores, nil
}
