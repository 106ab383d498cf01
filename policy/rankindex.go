package policy

// rankIndex is what some policies read besides a Snapshot's own fields:
// sums over the running jobs, the Ledger and the share tree. An Engine keeps
// one up to date from cycle to cycle, so that a cycle costs what changed
// rather than a pass over every running job and association, and passes it
// to its policy's rankIndexed. A policy's Rank, given a Snapshot no Engine
// keeps (the simulator's forecast, tests, a snapshot copied for later),
// builds the parts it reads from the Snapshot alone with the same code
// (indexRunning, shareSums) and ranks through the same rankIndexed: a
// policy ranks one way whoever calls it.
type rankIndex struct {
	// running indexes the Snapshot's running jobs: their committed
	// service per association and per account, their users.
	running *runningIndex
	// shares are the sums of shares fair share divides among.
	shares shareTotals
}

// indexedPolicy is a Policy that reads a rankIndex. rankIndexed ranks s
// with x, which must be s's: built from s (Rank does that) or kept by the
// Engine that built s. It reads x.running, and x.shares only when
// readsShares: an Engine leaves the shares zero otherwise.
type indexedPolicy interface {
	Policy
	readsShares() bool
	rankIndexed(s *Snapshot, x *rankIndex) ([]Score, error)
}

// indexRunning builds from s alone the runningIndex an Engine keeps: the
// Engine's own update, applied to an empty index. A job ID that Running
// lists twice counts once, at its first listing.
func indexRunning(s *Snapshot) *runningIndex {
	x := newRunningIndex()
	x.match(&Observation{Running: s.Running}, s.Ledger, s.Shares)
	x.settle(true, s.Predicted, s.Ledger, s.Service)
	return x
}
