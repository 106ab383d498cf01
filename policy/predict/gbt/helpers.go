package gbt

import "runtime"

// helpers bounds the goroutines that data-parallel work (training here,
// the fairway predictor's batch predictions) starts beside its callers,
// across the whole process. A simulation of several policies runs one
// engine per goroutine; if each started GOMAXPROCS more for every large
// batch, the scheduler would juggle many times more runnable goroutines
// than there are cores, and every simulation would slow down. The cores
// are a process-wide resource, so the bound is too.
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
