package policy

import (
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// TestServiceOrder_SameAsRank plays random histories of a preemptive
// scheduler through a ServiceOrder of tiresias' 2D-LAS: jobs arrive (many
// at the same instant, so that submit ties are common), start, are charged
// by sweeps and when they stop, are requeued and end, and the clock moves
// by seconds to hours. After every step the kept order must be the order
// Rank gives the same jobs from scratch, and Select the jobs a walk down
// that order picks; the thresholds are low enough that running jobs cross
// them between sweeps, the queues hold a few hundred jobs (blocks split
// and merge), more jobs run than fit (the history starts jobs at random),
// and a few need no capacity at all.
func TestServiceOrder_SameAsRank(t *testing.T) {
	tests := []struct {
		thresholds []float64
		capacity   int64
		maxNeed    int
		seed       uint64
	}{
		{[]float64{3250, 7200}, 64, 8, 1},
		{[]float64{600, 1800, 3600, 36000}, 128, 16, 2},
		{[]float64{50}, 32, 4, 3},
		{nil, 512, 64, 4},
		{[]float64{100, 200, 300}, 16, 3, 5},
	}
	for _, tc := range tests {
		name := fmt.Sprint(tc.thresholds)
		if tc.thresholds == nil {
			name = "default"
		}
		t.Run(fmt.Sprintf("thresholds=%s/capacity=%d/seed=%d", name, tc.capacity, tc.seed), func(t *testing.T) {
			p, err := NewTiresias(TiresiasParams{Thresholds: tc.thresholds})
			if err != nil {
				t.Fatal(err)
			}
			o, ok := NewServiceOrder(p)
			if !ok {
				t.Fatal("2D-LAS: no ServiceOrder")
			}
			h := newSoHistory(t, p, o, tc.capacity, tc.maxNeed, tc.seed)
			for step := range 2000 {
				h.step()
				if err := h.check(); err != nil {
					t.Fatalf("step %d (%s): %v", step, h.last, err)
				}
			}
			if h.crossed < 50 || h.counts["sweep"] < 100 || h.counts["requeue"] < 100 || h.maxHeld < 3*soBlockLen {
				t.Fatalf("%d keys changed at sweeps, ops %v, at most %d jobs held: the test checks too little",
					h.crossed, h.counts, h.maxHeld)
			}
			t.Logf("%d keys changed at sweeps, ops %v, at most %d jobs held", h.crossed, h.counts, h.maxHeld)
		})
	}
}

// soHistory drives a ServiceOrder as the simulator does, keeping the jobs
// and the Ledger it charges, as the Engine does, on the side.
type soHistory struct {
	t        *testing.T
	p        Policy
	o        *ServiceOrder
	l        *Ledger
	r        *rand.Rand
	now      time.Time
	capacity int64
	maxNeed  int
	jobs     map[int64]*Job
	charged  map[int64]time.Time // running: charged up to
	need     map[int64]int32
	nextID   int64
	last     string
	counts   map[string]int
	crossed  int
	maxHeld  int
}

func newSoHistory(t *testing.T, p Policy, o *ServiceOrder, capacity int64, maxNeed int, seed uint64) *soHistory {
	return &soHistory{t: t, p: p, o: o, l: rkLedger(t, LedgerParams{}), r: rand.New(rand.NewPCG(seed, 7)), now: rkT0,
		capacity: capacity, maxNeed: maxNeed, jobs: map[int64]*Job{}, charged: map[int64]time.Time{},
		need: map[int64]int32{}, counts: map[string]int{}}
}

func (h *soHistory) snap() *Snapshot {
	s := &Snapshot{Now: h.now, Ledger: h.l}
	for _, id := range slices.Sorted(maps.Keys(h.jobs)) {
		s.Pending = append(s.Pending, *h.jobs[id])
	}
	return s
}

// pick is a random held job that runs (or not), 0 when there is none.
func (h *soHistory) pick(running bool) int64 {
	var ids []int64
	for id, j := range h.jobs {
		if !j.Start.IsZero() == running {
			ids = append(ids, id)
		}
	}
	if len(ids) == 0 {
		return 0
	}
	slices.Sort(ids)
	return ids[h.r.IntN(len(ids))]
}

// charge charges running job id up to now, as the Engine does.
func (h *soHistory) charge(id int64) {
	j := h.jobs[id]
	from := j.Start
	if c, ok := h.charged[id]; ok && c.After(from) {
		from = c
	}
	h.l.Charge(j, from, h.now, Service{})
	h.charged[id] = h.now
}

func (h *soHistory) step() {
	must := func(err error) {
		if err != nil {
			h.t.Fatal(err)
		}
	}
	op := []string{"arrive", "arrive", "start", "start", "requeue", "end", "sweep", "tick", "tick"}[h.r.IntN(9)]
	if op == "arrive" && h.o.Len() > 300 {
		op = "end" // a few hundred jobs: blocks split and merge
	}
	h.last = op
	switch op {
	case "arrive":
		for range 1 + h.r.IntN(8) {
			h.nextID++
			id := h.nextID
			g := 1 + h.r.IntN(h.maxNeed)
			if h.r.IntN(64) == 0 {
				g = 0 // fits anywhere: a block holding one is never skipped as none fits
			}
			// Submit times repeat: ties go to the job id.
			j := &Job{ID: id, User: "u", Account: "a", GPUs: g, State: StatePending, ArrayTask: -1,
				Submit: h.now.Add(-time.Duration(h.r.IntN(3)) * time.Hour)}
			h.jobs[id], h.need[id] = j, int32(g)
			must(h.o.Add(h.snap(), j, int32(id), int32(g)))
		}
	case "start":
		for range 1 + h.r.IntN(6) {
			if id := h.pick(false); id != 0 {
				h.jobs[id].Start, h.jobs[id].State = h.now, StateRunning
				h.o.Started(h.snap(), h.jobs[id], int32(id))
			}
		}
	case "requeue":
		if id := h.pick(true); id != 0 {
			h.charge(id)
			h.o.Requeued(int32(id))
			j := h.jobs[id]
			j.Start, j.State = time.Time{}, StatePending
			delete(h.charged, id)
			must(h.o.Add(h.snap(), j, int32(id), h.need[id]))
		}
	case "end":
		if id := h.pick(h.r.IntN(4) > 0); id != 0 {
			if !h.jobs[id].Start.IsZero() {
				h.charge(id)
			}
			h.o.Remove(int32(id))
			delete(h.jobs, id)
			delete(h.charged, id)
		}
	case "sweep":
		before := h.o.Tags()
		before = slices.Clone(before)
		for _, id := range slices.Sorted(maps.Keys(h.jobs)) {
			if !h.jobs[id].Start.IsZero() {
				h.charge(id)
			}
		}
		must(h.o.Swept(h.snap(), func(tag int32) *Job { return h.jobs[int64(tag)] }))
		if !slices.Equal(before, h.o.Tags()) {
			h.crossed++
		}
	case "tick":
		// Seconds to hours: sweeps land before, on and after crossings.
		d := []time.Duration{time.Second, time.Minute, 5 * time.Minute, time.Hour}[h.r.IntN(4)]
		h.now = h.now.Add(time.Duration(1+h.r.IntN(300)) * d / 10)
	}
	h.counts[op]++
	h.maxHeld = max(h.maxHeld, h.o.Len())
}

// check compares the order and Select with a ranking from scratch.
func (h *soHistory) check() error {
	s := h.snap()
	scores, err := h.p.Rank(s)
	if err != nil {
		return err
	}
	var want []int32
	for _, sc := range scores {
		want = append(want, int32(sc.JobID))
	}
	if got := h.o.Tags(); !slices.Equal(got, want) {
		return fmt.Errorf("order %v, want %v", got, want)
	}
	if h.o.Len() != len(want) {
		return fmt.Errorf("Len %d, want %d", h.o.Len(), len(want))
	}
	// The walk decidePreemptive makes.
	var wantStart, wantStop []int32
	left := h.capacity
	for _, tag := range want {
		j := h.jobs[int64(tag)]
		switch need := int64(h.need[j.ID]); {
		case need <= left:
			left -= need
			if j.Start.IsZero() {
				wantStart = append(wantStart, tag)
			}
		case !j.Start.IsZero():
			wantStop = append(wantStop, tag)
		}
	}
	start, stop := h.o.Select(h.capacity)
	if !slices.Equal(start, wantStart) || !slices.Equal(stop, wantStop) {
		return fmt.Errorf("Select: start %v, stop %v; want %v, %v", start, stop, wantStart, wantStop)
	}
	return nil
}

// TestTiresias_KeyFixedUntil checks the bound a ServiceOrder keys running
// jobs again by: charged on contiguously to just before it, a running
// job's key is the same; charged a little past it (twice the margin) the
// key has changed, so that a sweep keys a job again only about when it
// crosses a threshold; in the last queue, or with no rate, never.
func TestTiresias_KeyFixedUntil(t *testing.T) {
	p, err := NewTiresias(TiresiasParams{})
	if err != nil {
		t.Fatal(err)
	}
	tp := p.(*tiresias)
	tests := []struct {
		name  string
		gpus  int
		spans [][2]float64 // earlier runs, in seconds from rkT0
		start float64      // current run
		// charged: the current run charged up to here (0: not yet)
		charged float64
		never   bool // key fixed for good
	}{
		{name: "fresh, 1 GPU", gpus: 1, start: 100},
		{name: "fresh, 8 GPUs, charged", gpus: 8, start: 100, charged: 300},
		{name: "requeued in Q0", gpus: 2, spans: [][2]float64{{0, 600}, {700, 1000}}, start: 5000, charged: 5100},
		{name: "requeued in Q1", gpus: 4, spans: [][2]float64{{0, 1000}}, start: 2000, charged: 2500},
		{name: "odd rate", gpus: 3, spans: [][2]float64{{0.123456789, 17.5}}, start: 33.3, charged: 1000.987654321},
		{name: "last queue", gpus: 8, spans: [][2]float64{{0, 1000}}, start: 2000, charged: 2100, never: true},
		{name: "no rate", gpus: 0, start: 10, charged: 20000, never: true},
	}
	at := func(sec float64) time.Time { return rkT0.Add(time.Duration(sec * 1e9)) }
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			build := func() (*Snapshot, *Job) {
				j := &Job{ID: 1, User: "u", Account: "a", GPUs: tc.gpus, ArrayTask: -1, Start: at(tc.start)}
				l := rkLedger(t, LedgerParams{})
				for _, sp := range tc.spans {
					l.Charge(j, at(sp[0]), at(sp[1]), Service{})
				}
				if tc.charged > 0 {
					l.Charge(j, at(tc.start), at(tc.charged), Service{})
				}
				return &Snapshot{Now: at(max(tc.start, tc.charged)), Ledger: l}, j
			}
			s, j := build()
			key0, _ := tp.staticKey(s, j)
			until := tp.keyFixedUntil(s, j)
			if tc.never {
				if until != math.MaxInt64 {
					t.Fatalf("key fixed until %d, want for good", until)
				}
				return
			}
			// keyAt is the key once the current run is charged up to t
			// (Unix ns), contiguously from its last charge.
			keyAt := func(t2 int64) float64 {
				s, j := build()
				from := at(max(tc.start, tc.charged))
				s.Ledger.Charge(j, from, time.Unix(0, t2), Service{})
				s.Now = time.Unix(0, t2)
				k, _ := tp.staticKey(s, j)
				return k
			}
			if k := keyAt(until - 1); k != key0 {
				t.Errorf("charged to 1 ns before %d, key %v, want %v", until, k, key0)
			}
			total := tp.thresholds[int(-key0)] / float64(tc.gpus)
			margin := int64(2 * (1e6 + total*1e3))
			if k := keyAt(until + margin); k == key0 {
				t.Errorf("charged to %d ns past %d, key still %v: the bound is too early", margin, until, key0)
			}
		})
	}
}
