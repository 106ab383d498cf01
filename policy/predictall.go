package policy

import (
	"fmt"
	"runtime"
	"sync"
)

// ConcurrentPredictor is implemented by a Predictor whose Predict only
// reads its state, so that many goroutines may call it at once while no
// Observe runs.
type ConcurrentPredictor interface {
	Predictor
	ConcurrentPredict()
}

// predictAllMinPerWorker is the fewest jobs worth a goroutine of
// PredictAll: below it, starting and joining goroutines costs more than
// the predictions they share out.
const predictAllMinPerWorker = 4096

// PredictAll predicts every job of jobs into out, which must be as long.
// A ConcurrentPredictor's predictions are shared among up to GOMAXPROCS
// goroutines when the batch is large (a full queue after a restart, a
// user's thousand queued jobs after one of theirs finished); the results
// are the same as predicting one job after another.
func PredictAll(p Predictor, jobs []*Job, out []Prediction) {
	if len(out) != len(jobs) {
		panic(fmt.Sprintf("PredictAll: %d jobs, %d predictions", len(jobs), len(out)))
	}
	workers := 1
	if _, ok := p.(ConcurrentPredictor); ok {
		workers = min(runtime.GOMAXPROCS(0), len(jobs)/predictAllMinPerWorker)
	}
	if workers <= 1 {
		for i, j := range jobs {
			out[i] = p.Predict(j)
		}
		return
	}
	var wg sync.WaitGroup
	chunk := (len(jobs) + workers - 1) / workers
	for lo := 0; lo < len(jobs); lo += chunk {
		hi := min(lo+chunk, len(jobs))
		wg.Go(func() {
			for i := lo; i < hi; i++ {
				out[i] = p.Predict(jobs[i])
			}
		})
	}
	wg.Wait()
}
