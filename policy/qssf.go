package policy

import (
	"errors"
	"fmt"
)

// QSSFParams configures qssf, which has no parameters.
type QSSFParams struct{}

// qssf is Quasi-Shortest-Service-First (Hu et al., "Characterization and
// Prediction of Deep Learning Workloads in Large-Scale GPU Datacenters",
// SC'21, the QSSF service of its prediction-based framework): jobs run in ascending order of their
// predicted GPU time, the number of GPUs times the predicted duration (the
// artifact's estimator returns duration·gpu_num and the queue is sorted on
// it). Fairway's adaptation: the prediction comes from Snapshot.Predicted
// (any registered predictor, Helios' own among them) and "GPU" means the
// snapshot's GPU-equivalents (Service), so GPU types can be weighted and
// CPU traces replayed. Value = −predicted GPU-seconds; ties go to the
// older job. Parts: predicted_gpu_s, predicted_run_s.
type qssf struct{ sc scorer }

// NewQSSF returns the "qssf" policy.
func NewQSSF(QSSFParams) (Policy, error) {
	return &qssf{sc: scorer{
		names:   []string{"predicted_gpu_s", "predicted_run_s"},
		weights: []float64{-1, 0},
	}}, nil
}

func (*qssf) Name() string { return "qssf" }

func (p *qssf) Rank(s *Snapshot) ([]Score, error) {
	parts := s.partsBuf(2 * len(s.Pending))
	for i := range s.Pending {
		qssfRow(s, &s.Pending[i], parts[2*i:2*i+2])
	}
	scores, err := p.sc.rank(s, parts, nil)
	if err != nil {
		return nil, fmt.Errorf("qssf: %w", err)
	}
	return scores, nil
}

// qssfRow fills j's parts: predicted GPU-seconds, predicted run seconds.
func qssfRow(s *Snapshot, j *Job, row []float64) {
	run := predictedRun(s, j).Seconds()
	row[0] = s.Service.Rate(j) * run
	row[1] = run
}

// qssf's key is static while the job's prediction stands.
func (*qssf) staticOrder() bool { return true }

func (p *qssf) staticKey(s *Snapshot, j *Job) (float64, error) {
	var row [2]float64
	qssfRow(s, j, row[:])
	return p.sc.value(row[:]), nil
}

// SJFOracleParams configures sjf-oracle.
type SJFOracleParams struct {
	// ByService orders by true GPU time (GPUs × run time) instead of true
	// run time. false (the default) is the SJF of the Helios artifact,
	// which sorts the queue by duration.
	ByService bool
}

// ErrNoTrueRun is returned by sjf-oracle for a pending job whose true run
// time the snapshot does not give.
var ErrNoTrueRun = errors.New("true run time unknown")

// sjfOracle is Shortest-Job-First with perfect knowledge of run times, the
// lower bound of Helios' QSSF evaluation (Hu et al., SC'21; the artifact's
// policies/sjf.py sorts the queue by the real duration). It exists for the
// simulator, which knows each job's future: Snapshot.TrueRun must hold
// every pending job, or Rank fails with ErrNoTrueRun. Value = −true run
// time in seconds (or −true GPU-seconds with ByService). Parts: true_run_s,
// true_gpu_s.
type sjfOracle struct{ sc scorer }

// NewSJFOracle returns the "sjf-oracle" policy.
func NewSJFOracle(p SJFOracleParams) (Policy, error) {
	return &sjfOracle{sc: scorer{
		names:   []string{"true_run_s", "true_gpu_s"},
		weights: sjfWeights(p.ByService),
	}}, nil
}

func sjfWeights(byService bool) []float64 {
	if byService {
		return []float64{0, -1}
	}
	return []float64{-1, 0}
}

func (*sjfOracle) Name() string { return "sjf-oracle" }

func (p *sjfOracle) Rank(s *Snapshot) ([]Score, error) {
	parts := s.partsBuf(2 * len(s.Pending))
	for i := range s.Pending {
		if err := sjfOracleRow(s, &s.Pending[i], parts[2*i:2*i+2]); err != nil {
			return nil, err
		}
	}
	scores, err := p.sc.rank(s, parts, nil)
	if err != nil {
		return nil, fmt.Errorf("sjf-oracle: %w", err)
	}
	return scores, nil
}

// sjfOracleRow fills j's parts: true run seconds, true GPU-seconds.
func sjfOracleRow(s *Snapshot, j *Job, row []float64) error {
	d, ok := s.TrueRun[j.ID]
	if !ok {
		return fmt.Errorf("sjf-oracle: job %d: %w", j.ID, ErrNoTrueRun)
	}
	run := max(d, 0).Seconds()
	row[0] = run
	row[1] = s.Service.Rate(j) * run
	return nil
}

func (*sjfOracle) staticOrder() bool { return true }

func (p *sjfOracle) staticKey(s *Snapshot, j *Job) (float64, error) {
	var row [2]float64
	if err := sjfOracleRow(s, j, row[:]); err != nil {
		return 0, err
	}
	return p.sc.value(row[:]), nil
}
