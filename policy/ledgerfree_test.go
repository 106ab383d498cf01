package policy

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"testing"
	"time"
)

// TestEngine_LedgerUnreadRanksAsFull feeds the same churning queue to two
// Engines ranking a ledger-free policy (themis), one keeping the Ledger and
// the running jobs' sums as serve does, the other told nothing reads them
// (LedgerUnread, as the simulator runs), and checks at every cycle that
// both give the same ranking, bit for bit, and repredict the same jobs,
// and that the lean one counts the running users the Snapshot has while
// its Ledger stays empty.
func TestEngine_LedgerUnreadRanksAsFull(t *testing.T) {
	for _, every := range []time.Duration{0, -1, 7 * time.Minute} {
		for _, withPred := range []bool{false, true} {
			for _, appended := range []int{0, 300, 600} {
				t.Run(fmt.Sprintf("every=%v/predictor=%v/appended=%d", every, withPred, appended), func(t *testing.T) {
					mk := func(unread bool) *Engine {
						var pred Predictor
						if withPred {
							pred = newEnFake()
						}
						pol, err := New("themis", nil)
						if err != nil {
							t.Fatal(err)
						}
						e, err := NewEngine(EngineParams{Policy: pol, Predictor: pred, GPUs: 8, ChargeEvery: every, LedgerUnread: unread})
						if err != nil {
							t.Fatal(err)
						}
						return e
					}
					full, lean := mk(false), mk(true)
					if full.lean || !lean.lean {
						t.Fatalf("lean: %v without LedgerUnread, %v with it", full.lean, lean.lean)
					}
					compared, charged := 0, 0
					enChurnWith(t, func(o *Observation) (*Snapshot, []Score, error) {
						_, want, err := full.Cycle(o)
						if err != nil {
							return nil, nil, err
						}
						wantRe := slices.Clone(full.Repredicted())
						s, got, err := lean.CycleReusing(o)
						if err != nil {
							return nil, nil, err
						}
						if len(got) != len(want) {
							t.Fatalf("at %s: %d scores, the full Engine's %d", o.Now, len(got), len(want))
						}
						for i := range want {
							a, b := got[i], want[i]
							if a.JobID != b.JobID || math.Float64bits(a.Value) != math.Float64bits(b.Value) ||
								!slices.EqualFunc(a.Parts.values(), b.Parts.values(), sameBits) {
								t.Fatalf("at %s, rank %d: lean %d %v %v, full %d %v %v", o.Now, i, a.JobID, a.Value, a.Parts, b.JobID, b.Value, b.Parts)
							}
						}
						if re := lean.Repredicted(); !slices.Equal(re, wantRe) {
							t.Fatalf("at %s: repredicted %v, the full Engine %v", o.Now, re, wantRe)
						}
						_, _, wantUsers := enCommitted(s)
						if !maps.Equal(lean.running.users, wantUsers) {
							t.Fatalf("at %s: running users %v, want %v", o.Now, lean.running.users, wantUsers)
						}
						for u, c := range lean.running.userRuns {
							if *c != wantUsers[u] {
								t.Fatalf("at %s: user %s's cell %d, want %d", o.Now, u, *c, wantUsers[u])
							}
						}
						if len(lean.running.assocs)+len(lean.running.accounts) > 0 || len(lean.ledger.jobs)+len(lean.ledger.assocs) > 0 || lean.Swept() {
							t.Fatalf("at %s: the lean Engine keeps %d association sums, %d account sums, a Ledger of %d jobs and %d associations (swept %v)",
								o.Now, len(lean.running.assocs), len(lean.running.accounts), len(lean.ledger.jobs), len(lean.ledger.assocs), lean.Swept())
						}
						if len(s.Running) > 0 && len(want) > 0 {
							compared++
						}
						if len(full.ledger.jobs) > 0 {
							charged++
						}
						return s, got, nil
					}, 5, 600, appended, func(int, *Snapshot, []Score) {})
					if compared < 300 || charged == 0 {
						t.Fatalf("%d cycles ranked running and pending jobs, %d had a charged Ledger: the test checks too little", compared, charged)
					}
				})
			}
		}
	}
}

// TestEngine_LedgerUnreadKeepsLedgerOfOthers: LedgerUnread changes nothing
// for a policy that reads the Ledger, and an Engine that keeps none
// refuses such a policy later.
func TestEngine_LedgerUnreadKeepsLedgerOfOthers(t *testing.T) {
	vtc, err := New("vtc", nil)
	if err != nil {
		t.Fatal(err)
	}
	e, err := NewEngine(EngineParams{Policy: vtc, GPUs: 8, LedgerUnread: true})
	if err != nil {
		t.Fatal(err)
	}
	if e.lean || e.running.usersOnly {
		t.Fatal("an Engine ranking vtc keeps no Ledger under LedgerUnread")
	}
	themis, err := New("themis", nil)
	if err != nil {
		t.Fatal(err)
	}
	lean, err := NewEngine(EngineParams{Policy: themis, GPUs: 8, LedgerUnread: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := lean.SetPolicy(vtc); err == nil {
		t.Fatal("an Engine that keeps no Ledger took vtc")
	}
	if lean.Policy() != themis {
		t.Fatal("a refused policy replaced themis")
	}
}
