package serve

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fairway-hpc/fairway/slurmctl"
)

// flakySource fails its first fail reads, then answers, and cancels the
// loop after n reads.
type flakySource struct {
	reads  atomic.Int64
	fail   int64
	n      int64
	cancel context.CancelFunc
}

func (f *flakySource) Read(context.Context) (*slurmctl.Cluster, error) {
	r := f.reads.Add(1)
	if r >= f.n {
		f.cancel()
	}
	if r <= f.fail {
		return nil, errors.New("slurmrestd: unreachable: connection refused")
	}
	return &slurmctl.Cluster{}, nil
}

// TestLoop_SlurmBackIsLogged: a cycle only logs when it changes something,
// so after "cycle skipped: cannot read Slurm" an admin tailing the log
// needs one line saying Slurm is readable again, or the last word stays
// the error while serve works.
func TestLoop_SlurmBackIsLogged(t *testing.T) {
	for _, tc := range []struct {
		name      string
		fail      int64
		wantBack  int
		wantInLog string
	}{
		{"never failed", 0, 0, ""},
		{"two cycles skipped", 2, 1, "failed_cycles=2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := newRig(t, Config{}, false)
			var logs bytes.Buffer
			g.r.log = slog.New(slog.NewTextHandler(&logs, nil))
			ctx, cancel := context.WithCancel(context.Background())
			g.r.slurm = &flakySource{fail: tc.fail, n: tc.fail + 3, cancel: cancel}
			cfg := LoopConfig{Interval: time.Millisecond, MaxBackoff: time.Millisecond}
			var ready atomic.Bool
			if err := g.r.Loop(ctx, cfg, &ready, nil); err != nil {
				t.Fatal(err)
			}
			out := logs.String()
			if got := strings.Count(out, "cycles complete again"); got != tc.wantBack {
				t.Errorf("%d recovery lines, want %d; log:\n%s", got, tc.wantBack, out)
			}
			if !strings.Contains(out, tc.wantInLog) {
				t.Errorf("log lacks %q:\n%s", tc.wantInLog, out)
			}
			if !ready.Load() {
				t.Error("not ready after cycles that completed")
			}
		})
	}
}
