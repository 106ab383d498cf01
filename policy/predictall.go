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
// A ConcurrentPredictor's predictions are shared among the caller and the
// helpers it can take (TakeHelpers) when the batch is large (a full queue after a restart, a
// user's thousand queued jobs after one of theirs finished); the results
// are the same as predicting one job after another.
func PredictAll(p Predictor, jobs []*Job, out []Prediction) {
	if len(out) != len(jobs) {
		panic(fmt.Sprintf("PredictAll: %d jobs, %d predictions", len(jobs), len(out)))
	}
	workers := 1
	if _, ok := p.(ConcurrentPredictor); ok {
		got, release := TakeHelpers(min(runtime.GOMAXPROCS(0), len(jobs)/predictAllMinPerWorker) - 1)
		defer release()
		workers += got
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

// helpers bounds the goroutines that data-parallel work (PredictAll, GBT
// training) starts beside its callers, across the whole process. A
// simulation of several policies runs one engine per goroutine; if each
// started GOMAXPROCS more for every large batch, the scheduler would juggle
// many times more runnable goroutines than there are cores, and every
// simulation would slow down. The cores are a process-wide resource, so the
// bound is too.
var helpers = make(chan struct{}, max(runtime.GOMAXPROCS(0)-1, 0))

// TakeHelpers reserves up to want helper goroutines, without waiting: it
// returns how many it got (possibly 0, and the caller then does the work
// alone) and the function that gives them back. Work split this way must
// give the same result whatever the number of helpers.
func TakeHelpers(want int) (int, func()) {
	n := 0
	release := func() {
		for range n {
			<-helpers
		}
	}
	for n < want {
		select {
		case helpers <- struct{}{}:
			n++
		default:
			return n, release
		}
	}
	return n, release
}
