package serve

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fairway-hpc/fairway/slurmctl"
)

// countingSource is a Source that cancels the loop after n reads.
type countingSource struct {
	reads  atomic.Int64
	n      int64
	cancel context.CancelFunc
}

func (c *countingSource) Read(context.Context) (*slurmctl.Cluster, error) {
	if c.reads.Add(1) >= c.n {
		c.cancel()
	}
	return &slurmctl.Cluster{}, nil
}

// TestLoop_RetentionLeaderOnly: the leader applies retention after its
// first cycle and then once per RetainEvery (here: the clock stands
// still, so once in five cycles); a follower never does.
func TestLoop_RetentionLeaderOnly(t *testing.T) {
	for _, leader := range []bool{true, false} {
		g := newRig(t, Config{}, false)
		g.leader.leader = leader
		ctx, cancel := context.WithCancel(context.Background())
		src := &countingSource{n: 5, cancel: cancel}
		g.r.slurm = src
		var retained atomic.Int64
		cfg := LoopConfig{Interval: time.Millisecond, MaxBackoff: time.Millisecond, RetainEvery: time.Hour,
			Retain: func(context.Context) error { retained.Add(1); return nil }}
		var ready atomic.Bool
		if err := g.r.Loop(ctx, cfg, &ready, nil); err != nil {
			t.Fatal(err)
		}
		want := int64(0)
		if leader {
			want = 1
		}
		if got := retained.Load(); got != want || src.reads.Load() < 5 {
			t.Errorf("leader %v: retention ran %d times in %d cycles, want %d", leader, got, src.reads.Load(), want)
		}
	}
}
