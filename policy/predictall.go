package policy

import "fmt"

// BatchPredictor is implemented by a Predictor that predicts a batch of
// jobs itself, for example sharing a large one among the cores.
// PredictBatch writes the prediction of jobs[i] into out[i] (out is as long
// as jobs), each exactly what Predict would return for that job after the
// same Observe calls.
type BatchPredictor interface {
	Predictor
	PredictBatch(jobs []*Job, out []Prediction)
}

// predictAll predicts every job of jobs into out, which must be as long:
// through PredictBatch when p is a BatchPredictor, else one job after
// another.
func predictAll(p Predictor, jobs []*Job, out []Prediction) {
	if len(out) != len(jobs) {
		panic(fmt.Sprintf("predictAll: %d jobs, %d predictions", len(jobs), len(out)))
	}
	if bp, ok := p.(BatchPredictor); ok {
		bp.PredictBatch(jobs, out)
		return
	}
	for i, j := range jobs {
		out[i] = p.Predict(j)
	}
}
