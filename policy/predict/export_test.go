package predict

import (
	"math"

	"github.com/fairway-hpc/fairway/policy"
)

// FairwayFeatures computes j's fairway features twice, the way features
// does (from the per-user summaries when they hold) and by scanning the
// history ring, for tests in package policy_test. summarized reports
// whether the first used the summaries.
func FairwayFeatures(p policy.Predictor, j *policy.Job, endBefore int64) (fast, scan []float32, summarized bool) {
	f := p.(*fairwayPredictor)
	u := f.users[j.User]
	var a, b [fwFeatures]float32
	f.features(j, u, f.nameID(j.Name), endBefore, &a)
	if u != nil {
		summarized = u.summarized(j.Submit.Unix(), endBefore)
		saved := u.maxSubmit
		u.maxSubmit = math.MaxInt64 // the summaries do not hold: scan
		f.features(j, u, f.nameID(j.Name), endBefore, &b)
		u.maxSubmit = saved
	} else {
		b = a
	}
	return a[:], b[:], summarized
}

// RetrainFairway trains a fairway predictor's model again on its current
// window, as Observe does every RetrainEvery jobs, and returns the number
// of trees, for benchmarks in package policy_test.
func RetrainFairway(p policy.Predictor) int {
	f := p.(*fairwayPredictor)
	f.train()
	return f.model.Trees()
}
