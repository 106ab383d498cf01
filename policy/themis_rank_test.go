package policy

import (
	"errors"
	"fmt"
	"math"
	"math/rand"
	"slices"
	"testing"
	"time"
)

// themisFromScratch is themis' ranking of s computed the plain way, from
// the formula in themis' doc and nothing the ranking keeps or shares: the
// run from Predicted (else the limit, else UnknownRun), N as the distinct
// users of Pending and Running, T_shared from Now.Sub, the slowdown
// max(1, rate·N/C) (1 when C <= 0), and the order from slices.SortFunc
// by compareRank. want holds the Scores as JobID, Value and Parts.
func themisFromScratch(p *themis, s *Snapshot) (want []Score, err error) {
	users := map[string]bool{}
	for _, js := range [][]Job{s.Pending, s.Running} {
		for i := range js {
			users[js[i].User] = true
		}
	}
	n := float64(len(users))
	type row struct {
		e     rankEntry
		parts [4]float64
	}
	rows := make([]row, len(s.Pending))
	for i := range s.Pending {
		j := &s.Pending[i]
		d, ok := s.Predicted[j.ID]
		run := UnknownRun
		switch {
		case ok:
			run = max(d, 0)
		case j.TimeLimit > 0:
			run = j.TimeLimit
		}
		r := run.Seconds()
		slow := 1.0
		if !(s.GPUs <= 0) {
			slow = max(1, s.Service.Rate(j)*n/s.GPUs)
		}
		tid := max(r*slow, p.minRun)
		tsh := s.Now.Sub(j.Submit).Seconds() + r
		rho := tsh / tid
		if math.IsNaN(rho) {
			return nil, fmt.Errorf("themis: job %d: %w", j.ID, ErrBadScore)
		}
		rows[i] = row{rankEntry{value: rho, submit: unixNanoOrMin(j.Submit), id: j.ID, i: int32(i)}, [4]float64{rho, tsh, tid, n}}
	}
	slices.SortFunc(rows, func(a, b row) int { return compareRank(a.e, b.e) })
	t := &partTable{names: []string{"rho", "t_shared_s", "t_independent_s", "active_users"}}
	for r := range rows {
		t.vals = append(t.vals, rows[r].parts[:]...)
		want = append(want, Score{JobID: rows[r].e.id, Value: rows[r].e.value, Parts: Parts{t: t, row: int32(r)}})
	}
	return want, nil
}

// sameScores reports where two rankings differ: ids, values (bits) or any
// part (bits).
func sameScores(got, want []Score) error {
	if len(got) != len(want) {
		return fmt.Errorf("%d scores, want %d", len(got), len(want))
	}
	for r := range got {
		g, w := got[r], want[r]
		if g.JobID != w.JobID || math.Float64bits(g.Value) != math.Float64bits(w.Value) {
			return fmt.Errorf("rank %d: job %d value %v, want job %d value %v", r, g.JobID, g.Value, w.JobID, w.Value)
		}
		gp, wp := g.Parts.Map(), w.Parts.Map()
		if len(gp) != len(wp) {
			return fmt.Errorf("rank %d: parts %v, want %v", r, gp, wp)
		}
		for name, v := range wp {
			if math.Float64bits(gp[name]) != math.Float64bits(v) {
				return fmt.Errorf("rank %d: part %s %v, want %v", r, name, gp[name], v)
			}
		}
	}
	return nil
}

// TestThemis_EngineRanksAsFromScratch runs themis through an Engine over
// random histories (arrivals, starts, finishes, requeues, predictions
// made, changed and dropped, users coming and going) and checks every
// cycle's ranking, read through the Engine's cache entries and its
// memos, against themisFromScratch of the same Snapshot.
func TestThemis_EngineRanksAsFromScratch(t *testing.T) {
	for _, gpus := range []float64{8, 0} {
		for seed := range int64(3) {
			t.Run(fmt.Sprintf("gpus=%g/seed=%d", gpus, seed), func(t *testing.T) {
				pol, err := NewThemis(ThemisParams{MinRun: time.Duration(seed) * 7 * time.Second})
				if err != nil {
					t.Fatal(err)
				}
				e, err := NewEngine(EngineParams{Policy: pol, Predictor: &enDropping{newEnFake()}, GPUs: gpus,
					ChargeEvery: time.Duration(seed) * 3 * time.Minute})
				if err != nil {
					t.Fatal(err)
				}
				cycles, predicted := 0, 0
				enChurn(t, e, 40+seed, 500, 250, func(c int, s *Snapshot, ranking []Score) {
					want, err := themisFromScratch(pol.(*themis), s)
					if err != nil {
						t.Fatal(err)
					}
					if err := sameScores(ranking, want); err != nil {
						t.Fatalf("cycle %d: %v", c, err)
					}
					cycles++
					predicted += len(s.Predicted)
				})
				if cycles < 400 || predicted == 0 {
					t.Fatalf("%d cycles, %d predictions seen: the test checks too little", cycles, predicted)
				}
			})
		}
	}
}

// TestThemis_RankAsFromScratch ranks random Snapshots made without an
// Engine (predictions from Predicted, else limits, else UnknownRun; half
// with cache entries as an Engine's, some stale), with sub-second submit
// times, eligible times, capacities known, unknown and NaN, and GPU type
// weights, each ranked twice (the second time from
// the memo of the first, the clock moved), against themisFromScratch.
func TestThemis_RankAsFromScratch(t *testing.T) {
	r := rand.New(rand.NewSource(7))
	pol, err := NewThemis(ThemisParams{})
	if err != nil {
		t.Fatal(err)
	}
	p := pol.(*themis)
	base := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	nanErrs := 0
	for round := range 300 {
		n := 1 + r.Intn(700)
		s := &Snapshot{Now: base.Add(time.Duration(r.Int63n(int64(48 * time.Hour)))), Predicted: map[int64]time.Duration{},
			Service: Service{TypeWeight: map[string]float64{"h100": 2.5}}}
		switch round % 3 {
		case 0:
			s.GPUs = float64(1 + r.Intn(64))
		case 1:
			s.GPUs = math.NaN()
		}
		for i := range n {
			j := Job{ID: int64(r.Intn(900) + 1000*i), User: fmt.Sprint("u", r.Intn(1+n/10)), Account: "a",
				GPUs: r.Intn(9), Submit: s.Now.Add(-time.Duration(r.Int63n(int64(30 * time.Hour))))}
			if r.Intn(3) == 0 {
				j.GPUType = "h100"
			}
			if r.Intn(2) == 0 {
				j.TimeLimit = time.Duration(r.Intn(7200)) * time.Second
			}
			if r.Intn(4) == 0 {
				j.Eligible = j.Submit.Add(time.Duration(r.Int63n(int64(time.Hour))))
			}
			if r.Intn(3) > 0 {
				s.Predicted[j.ID] = time.Duration(r.Int63n(int64(5 * time.Hour)))
			}
			if i > 0 && r.Intn(4) == 0 {
				// A twin of the job before but for its id and eligible
				// time: equal values, ordered by the tie-break.
				tw := s.Pending[i-1]
				delete(s.Predicted, j.ID)
				tw.ID, tw.Eligible = j.ID, j.Eligible
				if d, ok := s.Predicted[s.Pending[i-1].ID]; ok {
					s.Predicted[tw.ID] = d
				}
				j = tw
			}
			s.Pending = append(s.Pending, j)
		}
		if round%2 == 0 {
			// Cache entries as an Engine's, the job's prediction, some of
			// them stale: another job's, or deleted from the cache (gone),
			// whose run must not be read.
			s.predOf, s.predCycle = &Engine{cycle: 3}, 3
			s.pendPred = make([]*enginePred, len(s.Pending))
			for i := range s.pendPred {
				d, ok := s.Predicted[s.Pending[i].ID]
				c := &enginePred{id: s.Pending[i].ID, run: d, has: ok}
				switch r.Intn(4) {
				case 0:
					c = nil
				case 1:
					c.id++
					c.run, c.has = time.Duration(r.Int63n(int64(5*time.Hour))), true
				case 2:
					c.gone = true
					c.run, c.has = time.Duration(r.Int63n(int64(5*time.Hour))), true
				}
				s.pendPred[i] = c
			}
		}
		for i := range r.Intn(50) {
			s.Running = append(s.Running, Job{ID: int64(-1 - i), User: fmt.Sprint("u", r.Intn(1+n/5)), Account: "a", GPUs: 1})
		}
		for range 2 {
			got, err := pol.Rank(s)
			want, wantErr := themisFromScratch(p, s)
			if err != nil || wantErr != nil {
				// A NaN capacity makes every ρ NaN: the same error, naming
				// the same job.
				if err == nil || wantErr == nil || err.Error() != wantErr.Error() || !math.IsNaN(s.GPUs) {
					t.Fatalf("round %d: error %v, want %v", round, err, wantErr)
				}
				nanErrs++
				break
			}
			if err := sameScores(got, want); err != nil {
				t.Fatalf("round %d (%d jobs, capacity %v): %v", round, n, s.GPUs, err)
			}
			s.Now = s.Now.Add(time.Duration(r.Int63n(int64(time.Hour))))
		}
	}
	if nanErrs != 100 {
		t.Fatalf("%d rounds of NaN capacity failed as they should, want 100", nanErrs)
	}
}

// TestThemis_NaNNamesJob: a row whose ρ is NaN (a job of no predicted run
// time and an infinite type weight, on a cluster of known capacity) is
// reported as Rank reported it, naming the first such job in queue order.
func TestThemis_NaNNamesJob(t *testing.T) {
	pol, err := NewThemis(ThemisParams{})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	s := &Snapshot{Now: now, GPUs: 8, Predicted: map[int64]time.Duration{7: 0, 9: 0},
		Service: Service{TypeWeight: map[string]float64{"inf": math.Inf(1)}}, Pending: []Job{
			{ID: 5, User: "a", GPUs: 1, Submit: now, TimeLimit: time.Hour},
			{ID: 9, User: "b", GPUs: 1, GPUType: "inf", Submit: now},
			{ID: 7, User: "b", GPUs: 1, GPUType: "inf", Submit: now},
		}}
	_, err = pol.Rank(s)
	_, want := themisFromScratch(pol.(*themis), s)
	if !errors.Is(err, ErrBadScore) || want == nil || err.Error() != want.Error() {
		t.Fatalf("error %v, want %v", err, want)
	}
	if err.Error() != "themis: job 9: score is not a number" {
		t.Fatalf("error %q names the wrong job", err)
	}
}
