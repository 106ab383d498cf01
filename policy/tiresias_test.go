package policy

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestTiresias_Rank: jobs 1–3 never ran (Q0, FIFO); job 4 was requeued
// after 4000 GPU-s (4 GPUs × 1000 s: Q1, 3250 <= 4000 < 7200); job 5 after
// 8000 GPU-s (Q2); job 6 after 1500 GPU-s (Q0). All pending at minute 100.
func TestTiresias_Rank(t *testing.T) {
	jobs := []rkJob{
		{id: 1, acct: "a", user: "u", submit: 20},
		{id: 2, acct: "a", user: "v", submit: 10},
		{id: 3, acct: "a", user: "w", submit: 30},
		{id: 4, acct: "a", user: "u", submit: 0, gpus: 4},
		{id: 5, acct: "a", user: "v", submit: 1, gpus: 8},
		{id: 6, acct: "a", user: "w", submit: 15, gpus: 1},
	}
	build := func() *Snapshot {
		s := rkSnap(100, jobs...)
		l := rkLedger(t, LedgerParams{})
		run := func(i int, from, to float64) { l.Charge(&s.Pending[i], rkAt(from), rkAt(to), Service{}) }
		run(3, 5, 5+1000.0/60) // job 4: 4 GPUs, ran 16.7 min, pending since minute 21.7
		run(4, 2, 2+1000.0/60) // job 5: 8 GPUs
		run(5, 16, 41)         // job 6: 1 GPU, 1500 s
		// Samples of finished jobs' service for Gittins.
		for i, gs := range []float64{1000, 2000, 4000, 10000} {
			rkCharge(l, int64(100+i), "a", "old", gs)
		}
		s.Ledger = l
		return s
	}
	tests := []struct {
		name   string
		params TiresiasParams
		want   []int64
		queue  map[int64]float64
	}{
		{"2D-LAS", TiresiasParams{}, []int64{2, 6, 1, 3, 4, 5}, map[int64]float64{1: 0, 2: 0, 3: 0, 4: 1, 5: 2, 6: 0}},
		// Gittins with Δ = 3250 over samples {1000, 2000, 4000, 10000}:
		// G(0) = (2/4)/((1000+2000+2·3250)/4) = 2.105e-4 and
		// G(1500) = (2/3)/((500+2500+3250)/3) = 3.2e-4, so job 6 leads Q0.
		{"2D-Gittins", TiresiasParams{Gittins: true}, []int64{6, 2, 1, 3, 4, 5}, nil},
		// Job 4 has waited 100−21.7 = 78.3 min after running 16.7: with
		// knob 4 (66.7 min) it is back in Q0, arriving in submit order;
		// job 5 has waited 81.3 min after 16.7 too and is promoted with it.
		{"PROMOTE knob 4", TiresiasParams{PromoteKnob: 4}, []int64{4, 5, 2, 6, 1, 3}, map[int64]float64{4: 0, 5: 0}},
		// Knob 5 (83.3 min): neither has waited long enough.
		{"PROMOTE knob 5", TiresiasParams{PromoteKnob: 5}, []int64{2, 6, 1, 3, 4, 5}, map[int64]float64{4: 1, 5: 2}},
		// One threshold, two queues: 4 and 5 share Q1, FIFO.
		{"two queues", TiresiasParams{Thresholds: []float64{3250}}, []int64{2, 6, 1, 3, 4, 5}, map[int64]float64{4: 1, 5: 1}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, by := rkRank(t, "tiresias", tc.params, build())
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("order (-want +got):\n%s", diff)
			}
			for id, q := range tc.queue {
				if by[id].Parts.Get("queue") != q {
					t.Errorf("job %d: queue %v, want %v", id, by[id].Parts.Get("queue"), q)
				}
			}
			if a := by[4].Parts.Get("attained_gpu_s"); !rkClose(a, 4000) {
				t.Errorf("job 4: attained %v, want 4000", a)
			}
		})
	}
}

func TestTiresias_GittinsIndex(t *testing.T) {
	d := newGittinsDist([]float64{1000, 2000, 4000, 10000})
	tests := []struct {
		a, want float64
	}{
		{0, 0.5 / 2375},
		{1500, (2.0 / 3) / (6250.0 / 3)},
		{1000, (2.0 / 3) / ((1000 + 3000 + 3250) / 3.0)}, // a sample equal to a has finished
		{10000, 0},
	}
	for _, tc := range tests {
		if got := d.index(tc.a, 3250); !rkClose(got, tc.want) {
			t.Errorf("G(%v) = %v, want %v", tc.a, got, tc.want)
		}
	}
	if got := newGittinsDist(nil).index(0, 3250); got != 0 {
		t.Errorf("G without samples = %v, want 0", got)
	}
}

// TestTiresias_PromotionRestartsQueueing: after a promotion, only service
// received since counts for the queue, as in the authors' simulator, and a
// job already in Q0 is not "promoted".
func TestTiresias_PromotionRestartsQueueing(t *testing.T) {
	p := &tiresias{thresholds: []float64{3250, 7200}, knob: 1}
	ju := &jobUsage{rate: 4, runs: []runSpan{
		{rkAt(0).UnixNano(), rkAt(20).UnixNano()},  // 1200 s × 4: 4800 GPU-s, Q1
		{rkAt(50).UnixNano(), rkAt(70).UnixNano()}, // waited 30 min >= 20: promoted, then 4800 again
	}}
	tests := []struct {
		now          float64
		want         float64
		wantPromoted bool
	}{
		{75, 4800, false}, // 5 min pending < 20
		{90, 0, true},     // 20 min pending: back to Q0
	}
	for _, tc := range tests {
		got, promoted := p.queuedService(ju, rkAt(tc.now).UnixNano())
		if got != tc.want || promoted != tc.wantPromoted {
			t.Errorf("at minute %v: queued service %v promoted %v, want %v, %v", tc.now, got, promoted, tc.want, tc.wantPromoted)
		}
	}
	q0 := &jobUsage{rate: 1, runs: []runSpan{{rkAt(0).UnixNano(), rkAt(10).UnixNano()}}} // 600 GPU-s: Q0
	if got, promoted := p.queuedService(q0, rkAt(1000).UnixNano()); got != 600 || promoted {
		t.Errorf("Q0 job after a long wait: %v, %v, want 600, false", got, promoted)
	}
}

// TestTiresias_ReadsNoPrediction checks that tiresias, LAS and Gittins,
// ranks a messy snapshot the same with its predictions, with others and
// with none, and so says it reads none: a simulation then runs it without
// training a predictor whose answers it would never read.
func TestTiresias_ReadsNoPrediction(t *testing.T) {
	for _, gittins := range []bool{false, true} {
		p, err := NewTiresias(TiresiasParams{Gittins: gittins})
		if err != nil {
			t.Fatal(err)
		}
		s := rkRandomSnapshot(4, 2000, 80)
		want, err := p.Rank(s)
		if err != nil {
			t.Fatal(err)
		}
		other := map[int64]time.Duration{}
		for id, d := range s.Predicted {
			other[id] = 3*d + time.Minute
		}
		for name, pred := range map[string]map[int64]time.Duration{"other": other, "none": nil} {
			c := *s
			c.Predicted = pred
			got, err := p.Rank(&c)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(want) {
				t.Fatalf("gittins=%v, %s predictions: %d scores, want %d", gittins, name, len(got), len(want))
			}
			for i := range want {
				if got[i].JobID != want[i].JobID || !sameBits(got[i].Value, want[i].Value) {
					t.Fatalf("gittins=%v, %s predictions: rank %d is job %d (%v), want %d (%v)",
						gittins, name, i, got[i].JobID, got[i].Value, want[i].JobID, want[i].Value)
				}
			}
		}
		if len(s.Predicted) == 0 || s.Ledger == nil {
			t.Fatal("the snapshot has no predictions or no ledger: the test checks too little")
		}
		if ReadsPredictions(p) {
			t.Errorf("gittins=%v: ReadsPredictions = true: a simulation trains a predictor tiresias never reads", gittins)
		}
	}
}
