package sim

import (
	"time"

	"github.com/fairway-hpc/fairway/policy"
)

// serviceCharge stands in for the engine in a preemptive simulation of a
// policy whose keys read only what the Ledger charged each job
// (policy.NewServiceOrder: tiresias' 2D-LAS), when it reads no
// prediction and no history warms the engine: the only state such keys
// read is each job's spans in the Ledger, which it charges as the engine
// would. The engine's cycle also lifted VTC counters over the whole
// queue, indexed the running jobs and charged every one of them at every
// sweep (thousands on a big machine), for state these keys never read.
//
// A running job is charged only when the ServiceOrder keys it again (it
// asks for the job, Swept) and when it stops, where the engine charged it
// at every sweep as well. Its spans are the same: charges that meet are
// merged into one span (Ledger), so a job that ran from a to b without a
// break has the span [a, b] either way, and [a, t] when keyed at a sweep
// at t; a job's key reads its spans alone. Only the Ledger's sums over
// associations, which these keys do not read, are added up in another
// order.
type serviceCharge struct {
	l     *policy.Ledger
	svc   policy.Service
	every time.Duration // the engine's ChargeEvery
	// swept and last: whether and when the engine would have swept.
	swept bool
	last  time.Time
	// charged is each running job's last charge (zero: none since it
	// started), the engine's charged cell.
	charged []time.Time
	snap    policy.Snapshot
}

func newServiceCharge(s *simulator, every time.Duration) (*serviceCharge, error) {
	l, err := policy.NewLedger(s.cfg.Ledger)
	if err != nil {
		return nil, err
	}
	if every == 0 {
		every = policy.DefaultChargeEvery
	}
	return &serviceCharge{l: l, svc: s.cfg.service(), every: every, charged: make([]time.Time, len(s.jobs))}, nil
}

// update is the engine's Update for such a policy at now: the stopped
// jobs charged up to their end and the finished ones finished, in the
// engine's order. It returns the cycle's Snapshot and whether the engine
// would have swept, charging every running job up to now: the caller
// then keys them again (ServiceOrder.Swept) through running, which
// charges each job it is asked for.
func (c *serviceCharge) update(s *simulator, now time.Time) (*policy.Snapshot, bool) {
	for i := range s.stopped {
		j := &s.stopped[i]
		k, ok := s.jobIndex(j.ID)
		if !ok || k < 0 {
			continue
		}
		if !j.Start.IsZero() && !j.End.IsZero() {
			from := j.Start
			if t := c.charged[k]; t.After(from) {
				from = t
			}
			c.l.Charge(j, from, j.End, c.svc)
		}
		c.charged[k] = time.Time{}
	}
	sweep := !c.swept || c.every < 0 || now.Sub(c.last) >= c.every
	if sweep {
		c.swept, c.last = true, now
	}
	for i := range s.stopped {
		if j := &s.stopped[i]; j.State.Finished() {
			c.l.Finish(j)
		}
	}
	c.snap = policy.Snapshot{Now: now, Pending: s.pending, Running: s.running, TrueRun: s.trueRun, Shares: s.cfg.Shares,
		Ledger: c.l, Service: c.svc, GPUs: float64(s.cfg.Cluster.Capacity())}
	return &c.snap, sweep
}

// running is running job k, charged up to now as the engine's sweep at
// now would have charged it.
func (c *serviceCharge) running(s *simulator, k int32, now time.Time) *policy.Job {
	j := &s.running[s.jobs[k].rpos] // loose: rpos is its place
	from := j.Start
	if t := c.charged[k]; t.After(from) {
		from = t
	}
	if now.After(from) {
		c.l.Charge(j, from, now, c.svc)
		c.charged[k] = now
	}
	return j
}
