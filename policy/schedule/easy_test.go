package schedule

import (
	"fmt"
	"iter"
	"math/rand"
	"reflect"
	"slices"
	"testing"
)

// easyRun is a running job of an EASY test: its allocation and the end of
// its time limit.
type easyRun struct {
	end   int64
	alloc []Use
}

// easyCase is a machine with running jobs and a queue, built at random.
type easyCase struct {
	nodes, perNode int
	running        []easyRun
	need           []int32
	limit          []int64
	// fill builds the queue with Queue.Fill, from arrays indexed by job
	// in reverse, over the storage of an older queue, rather than Add.
	fill bool
}

func newEasyCase(r *rand.Rand) easyCase {
	c := easyCase{nodes: 1 + r.Intn(40), perNode: 1 + r.Intn(8)}
	p := NewPool(c.nodes, c.perNode)
	for range r.Intn(3 * c.nodes) {
		n := 1 + r.Intn(2*c.perNode)
		if !p.Fits(n) {
			continue
		}
		a := slices.Clone(p.Place(n, nil))
		p.Take(a)
		c.running = append(c.running, easyRun{end: int64(1 + r.Intn(100)), alloc: a})
	}
	slices.SortStableFunc(c.running, func(a, b easyRun) int { return int(a.end - b.end) })
	for range r.Intn(60) {
		c.need = append(c.need, int32(1+r.Intn(3*c.perNode)))
		c.limit = append(c.limit, int64(1+r.Intn(120)))
	}
	return c
}

// play runs pass on a fresh machine of c at time 0 and returns what it
// started (queue index and allocation, in order) and the free units left.
func (c easyCase) play(pass func(e *EASY, q *Queue, ends iter.Seq2[int64, []Use], start func(int, []Use))) ([]string, []int, int) {
	e := NewEASY(c.nodes, c.perNode)
	for _, r := range c.running {
		e.Free.Take(r.alloc)
	}
	var q Queue
	if c.fill {
		n := len(c.need)
		order, need, limit := make([]int32, n), make([]int32, n), make([]int64, n)
		for i := range n {
			k := int32(n - 1 - i)
			order[i], need[k], limit[k] = k, c.need[i], c.limit[i]
		}
		for i := range 2*n + 3 { // an older queue, longer, partly started
			q.Add(int32(i), 1+i%7, int64(i))
		}
		q.started(0)
		q.Fill(order, need, limit)
	} else {
		for i := range c.need {
			q.Add(int32(i), int(c.need[i]), c.limit[i])
		}
	}
	running := slices.Clone(c.running)
	ends := func(yield func(int64, []Use) bool) {
		for _, r := range running {
			if !yield(r.end, r.alloc) {
				return
			}
		}
	}
	e.Free.moves = 0
	var started []string
	pass(e, &q, ends, func(i int, a []Use) {
		job := int(q.Order[i]) // the case's job: i, where the queue holds it right
		if c.fill {
			job = len(c.need) - 1 - job
		}
		started = append(started, fmt.Sprint(i, job, a))
		k := len(running)
		for k > 0 && running[k-1].end > c.limit[i] {
			k--
		}
		running = slices.Insert(running, k, easyRun{end: c.limit[i], alloc: slices.Clone(a)})
	})
	return started, slices.Clone(e.Free.free), e.Free.moves
}

// refPass is EASY's backfill as first written: Free with the reservation's
// share held back is made anew for every job that would run past the
// reservation, and given back at once. Pass must start the same jobs on
// the same nodes.
func refPass(e *EASY, now int64, q *Queue, ends iter.Seq2[int64, []Use], start func(int, []Use)) {
	free := e.Free
	need := q.Need
	i := q.Lo
	for ; i < len(need); i++ {
		if need[i] < 0 {
			continue
		}
		if !free.Fits(int(need[i])) {
			break
		}
		e.start(q, i, free.Place(int(need[i]), e.buf), start)
	}
	if i >= len(need) {
		return
	}
	head, shadow := i, int64(-1)
	for x := i + 1; x < len(need); x++ {
		n := int(need[x])
		if free.total == 0 {
			break
		}
		if n < 0 || !free.Fits(n) {
			continue
		}
		if shadow < 0 {
			shadow = e.reserve(now, int(need[head]), ends)
		}
		if now+q.Limit[x] <= shadow {
			e.start(q, x, free.Place(n, e.buf), start)
			for r, u := range e.resv {
				e.long[r] = min(e.long[r], free.free[u.Node])
			}
			continue
		}
		var hold []Use
		for r, u := range e.resv {
			if h := free.free[u.Node] - e.long[r]; h > 0 {
				hold = append(hold, Use{u.Node, int32(h)})
			}
		}
		free.Take(hold)
		var a []Use
		if free.Fits(n) {
			a = free.Place(n, e.buf)
		}
		free.Give(hold)
		if a == nil {
			continue
		}
		for _, v := range a {
			for r, u := range e.resv {
				if u.Node == v.Node {
					e.long[r] -= int(v.Units)
				}
			}
		}
		e.start(q, x, a, start)
	}
}

// TestEASY_PassAgainstReference checks on random machines and queues that
// Pass starts the jobs refPass starts, on the same nodes, in the same
// order, and leaves Free the same.
func TestEASY_PassAgainstReference(t *testing.T) {
	r := rand.New(rand.NewSource(5))
	backfilled := 0
	for n := range 3000 {
		c := newEasyCase(r)
		if n%3 == 0 {
			// Queues of several blocks, for the walk's block skips.
			for range r.Intn(400) {
				c.need = append(c.need, int32(1+r.Intn(3*c.perNode)))
				c.limit = append(c.limit, int64(1+r.Intn(120)))
			}
		}
		// Half the passes run on a queue built by Fill, as the
		// simulator builds the queue of an order that moves with time.
		c.fill = n%2 == 1
		got, gotFree, _ := c.play(func(e *EASY, q *Queue, ends iter.Seq2[int64, []Use], start func(int, []Use)) {
			e.Pass(0, q, ends, true, start)
		})
		c.fill = false
		want, wantFree, _ := c.play(func(e *EASY, q *Queue, ends iter.Seq2[int64, []Use], start func(int, []Use)) {
			refPass(e, 0, q, ends, start)
		})

		if !slices.Equal(got, want) || !slices.Equal(gotFree, wantFree) {
			t.Fatalf("case %d (%+v): Pass started %v, free %v; want %v, free %v", n, c, got, gotFree, want, wantFree)
		}
		if len(want) > 0 {
			backfilled++
		}
	}
	if backfilled < 1000 {
		t.Fatalf("only %d of 3000 cases started a job: the test checks too little", backfilled)
	}
}

// TestQueue_FillIsResetAndAdd: Fill over any older queue leaves q as
// Reset and Add of each job in order would, block summaries included.
func TestQueue_FillIsResetAndAdd(t *testing.T) {
	r := rand.New(rand.NewSource(7))
	for n := range 500 {
		jobs := r.Intn(300)
		order := make([]int32, jobs)
		for i := range order {
			order[i] = int32(i)
		}
		r.Shuffle(jobs, func(i, j int) { order[i], order[j] = order[j], order[i] })
		need, limit := make([]int32, jobs), make([]int64, jobs)
		for k := range jobs {
			need[k], limit[k] = int32(1+r.Intn(100)), int64(r.Intn(1000))
		}
		var got Queue
		for i := range r.Intn(400) {
			got.Add(int32(i), r.Intn(50), int64(r.Intn(50)))
		}
		if got.Live() > 0 {
			got.started(r.Intn(len(got.Order)))
			got.Lo = r.Intn(len(got.Order))
		}
		got.Fill(order, need, limit)
		var want Queue
		for _, k := range order {
			want.Add(k, int(need[k]), limit[k])
		}
		if !reflect.DeepEqual(normQueue(got), normQueue(want)) {
			t.Fatalf("case %d: Fill gave %+v, want %+v", n, got, want)
		}
	}
}

// normQueue is q with empty slices nil, as DeepEqual tells them apart.
func normQueue(q Queue) Queue {
	if len(q.Order) == 0 {
		q.Order, q.Need, q.Limit, q.blockMin, q.blockMinLimit = nil, nil, nil, nil, nil
	}
	return q
}

// TestEASY_PassHoldsTheReservationOnce: on a machine whose queue's head
// waits for many nodes, jobs that would run past its reservation and do
// not fit beside it do not each take and give back the reservation's
// nodes: the pass costs about one hold, not one per waiting job.
func TestEASY_PassHoldsTheReservationOnce(t *testing.T) {
	const nodes, perNode, waiting = 1000, 4, 500
	c := easyCase{nodes: nodes, perNode: perNode}
	// Half the machine runs one job until 10; the head needs the whole
	// machine, so it reserves every node at 10. Each waiting job fits now
	// but runs past 10, and the hold leaves no room beside it.
	half := make([]Use, 0, nodes/2)
	for i := range nodes / 2 {
		half = append(half, Use{int32(i), perNode})
	}
	c.running = []easyRun{{end: 10, alloc: half}}
	c.need = append(c.need, nodes*perNode)
	c.limit = append(c.limit, 50)
	for range waiting {
		c.need = append(c.need, 2)
		c.limit = append(c.limit, 100)
	}
	started, _, moves := c.play(func(e *EASY, q *Queue, ends iter.Seq2[int64, []Use], start func(int, []Use)) {
		e.Pass(0, q, ends, true, start)
	})
	if len(started) != 0 {
		t.Fatalf("started %v: the waiting jobs should not fit beside the reservation", started)
	}
	// The reservation plays the running job's end (500 moves) and takes
	// it back (500); one hold of the 500 free nodes is 1000 more.
	if limit := 4 * nodes; moves > limit {
		t.Fatalf("the pass made %d node moves for %d waiting jobs, above %d: the reservation was held again for each", moves, waiting, limit)
	}
}

// TestEASY_PassSkipsBlocksBehindTheHold: jobs that fit now but would run
// past the head's reservation and do not fit beside it are passed over a
// block at a time, not asked one by one, when no job of the block ends
// before the reservation.
func TestEASY_PassSkipsBlocksBehindTheHold(t *testing.T) {
	const nodes, perNode, waiting = 100, 4, 64 * 100
	e := NewEASY(nodes, perNode)
	half := make([]Use, 0, nodes/2)
	for i := range nodes / 2 {
		half = append(half, Use{int32(i), perNode})
	}
	e.Free.Take(half)
	ends := func(yield func(int64, []Use) bool) { yield(10, half) }
	var q Queue
	q.Add(0, nodes*perNode, 50) // reserves every node at 10
	for i := range waiting {
		q.Add(int32(1+i), 2, 100)
	}
	var started []int
	e.Pass(0, &q, ends, true, func(i int, _ []Use) { started = append(started, i) })
	if len(started) != 0 {
		t.Fatalf("started %v: the waiting jobs should not fit beside the reservation", started)
	}
	if e.asked > 2*queueBlock {
		t.Fatalf("the walk asked %d of %d waiting jobs one by one, above %d: it should skip their blocks", e.asked, waiting, 2*queueBlock)
	}
}

// TestEASY_ReserveDoesNotAllocate: a pass that reserves for its head job
// allocates nothing once its buffers have grown: the simulator reserves
// at tens of thousands of scheduling points.
func TestEASY_ReserveDoesNotAllocate(t *testing.T) {
	const nodes, perNode = 100, 4
	e := NewEASY(nodes, perNode)
	half := make([]Use, 0, nodes/2)
	for i := range nodes / 2 {
		half = append(half, Use{int32(i), perNode})
	}
	e.Free.Take(half)
	quarter := half[:nodes/4]
	ends := func(yield func(int64, []Use) bool) {
		if yield(5, quarter) {
			yield(10, half[nodes/4:])
		}
	}
	var q Queue
	q.Add(0, nodes*perNode, 50) // reserves every node at 10
	q.Add(1, 2, 100)            // fits now, runs past 10: does not start
	started := 0
	start := func(int, []Use) { started++ }
	allocs := testing.AllocsPerRun(100, func() { e.Pass(0, &q, ends, true, start) })
	if started != 0 {
		t.Fatalf("started %d jobs: none fits beside the reservation", started)
	}
	if allocs != 0 {
		t.Fatalf("a pass that reserves made %v allocations, want 0", allocs)
	}
}
