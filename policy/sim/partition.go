package sim

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/fairway-hpc/fairway/policy"
	"github.com/fairway-hpc/fairway/policy/schedule"
)

// Layout is a partitioned cluster, as slurm.conf's NodeName and
// PartitionName lines describe one: nodes, each of some units and a GPU
// type, each in one or more partitions.
//
// A job runs only on the nodes of its partition (policy.Job.Partition; the
// first partition, the default, when it names none, as Slurm's
// Default=YES; of a comma-separated list, the first whose nodes can run
// it) and, when it asks for a GPU type (policy.Job.GPUType, on a GPU
// cluster), only on nodes of that type. Jobs are ranked in one order over
// all partitions, as Slurm's priority is, and start in that order while
// they fit their partition (with GPU type); a job that does not fit blocks
// its partition only (every GPU type of it), whose jobs of each GPU type
// then make their own EASY pass, its reservation and backfill seeing only
// their nodes, as Slurm's backfill plans each partition apart
// (simulator.decideParts). A node in several partitions is one node: what
// a job of one takes, the others lose. Where partitions overlap, or GPU
// types of one partition (an untyped job's nodes and an h100 job's), a
// reservation of one does not hold the shared nodes against another's
// backfill.
type Layout struct {
	Nodes []Node
	// Partitions names the partitions, the default first.
	Partitions []string
}

// Node is one node of a Layout.
type Node struct {
	Units int    // GPUs (or processors, on a CPU cluster)
	Type  string // GPU type ("h100"); "" untyped
	// Partitions are indices into Layout.Partitions.
	Partitions []int
}

// WithLayout returns c partitioned by l: Nodes and PerNode become l's
// node count and largest node.
func (c Cluster) WithLayout(l *Layout) Cluster {
	c.Layout, c.Nodes, c.PerNode = l, len(l.Nodes), l.largest()
	return c
}

func (l *Layout) capacity() int {
	n := 0
	for _, nd := range l.Nodes {
		n += nd.Units
	}
	return n
}

func (l *Layout) largest() int {
	m := 0
	for _, nd := range l.Nodes {
		m = max(m, nd.Units)
	}
	return m
}

func (l *Layout) validate() error {
	if len(l.Nodes) == 0 || len(l.Partitions) == 0 {
		return fmt.Errorf("partitioned cluster with %d nodes and %d partitions: want both > 0", len(l.Nodes), len(l.Partitions))
	}
	used := make([]bool, len(l.Partitions))
	for i, nd := range l.Nodes {
		if nd.Units <= 0 {
			return fmt.Errorf("node %d: %d units: want > 0", i, nd.Units)
		}
		if len(nd.Partitions) == 0 {
			return fmt.Errorf("node %d: in no partition", i)
		}
		for _, p := range nd.Partitions {
			if p < 0 || p >= len(l.Partitions) {
				return fmt.Errorf("node %d: partition %d of %d", i, p, len(l.Partitions))
			}
			used[p] = true
		}
	}
	for p, ok := range used {
		if !ok {
			return fmt.Errorf("partition %q: no nodes", l.Partitions[p])
		}
	}
	return nil
}

// String spells l as ParseLayout reads it, one entry per run of like
// nodes, each naming its partitions in l's order. ParseLayout takes the
// first partition named for the default: where the first node is not in
// l's default, a union of the default with itself (which adds no node)
// leads, so that the text reads back with the same default.
func (l *Layout) String() string {
	var b strings.Builder
	if len(l.Nodes) > 0 && len(l.Partitions) > 0 && !slices.Contains(l.Nodes[0].Partitions, 0) {
		fmt.Fprintf(&b, "%s:of=%s", l.Partitions[0], l.Partitions[0])
	}
	for i := 0; i < len(l.Nodes); {
		nd := l.Nodes[i]
		n := 1
		for i+n < len(l.Nodes) && l.Nodes[i+n].Units == nd.Units && l.Nodes[i+n].Type == nd.Type && slices.Equal(l.Nodes[i+n].Partitions, nd.Partitions) {
			n++
		}
		if b.Len() > 0 {
			b.WriteByte(';')
		}
		ps := slices.Sorted(slices.Values(nd.Partitions))
		names := make([]string, len(ps))
		for k, p := range ps {
			names[k] = l.Partitions[p]
		}
		fmt.Fprintf(&b, "%s:nodes=%d,per-node=%d", strings.Join(names, "+"), n, nd.Units)
		if nd.Type != "" {
			fmt.Fprintf(&b, ",type=%s", nd.Type)
		}
		i += n
	}
	return b.String()
}

// ParseLayout reads a cluster's partitions from spec: entries separated by
// ';' or new lines, each
//
//	NAME:nodes=N,per-node=U[,type=T]   N new nodes of U units (of GPU type T) in partition NAME
//	NAME:of=A+B                        partition NAME is every node of partitions A and B
//
// Names are letters, digits, '-', '_' and '.'. An entry whose NAME is
// A+B (nodes=… form) puts its new nodes in both partitions. A name given
// again adds nodes to that partition; the first partition named is the
// default. Blank lines and text from '#' on are ignored, so spec can be a
// file's contents:
//
//	gpu:nodes=100,per-node=8,type=v100
//	gpu:nodes=20,per-node=8,type=a100
//	debug:nodes=4,per-node=8
//	all:of=gpu+debug
func ParseLayout(spec string) (*Layout, error) {
	l := &Layout{}
	index := map[string]int{}
	part := func(name string) int {
		p, ok := index[name]
		if !ok {
			p = len(l.Partitions)
			index[name] = p
			l.Partitions = append(l.Partitions, name)
		}
		return p
	}
	type union struct {
		entry string
		p     int
		of    []string
	}
	var unions []union
	n := 0
	lines := strings.Split(spec, "\n")
	for ln, line := range lines {
		line, _, _ = strings.Cut(line, "#")
		for _, e := range strings.Split(line, ";") {
			e = strings.TrimSpace(e)
			if e == "" {
				continue
			}
			n++
			// A file's entries are found by line; a one-line spec's by count.
			where := fmt.Sprintf("partition entry %d %q", n, e)
			if len(lines) > 1 {
				where = fmt.Sprintf("line %d: partition entry %q", ln+1, e)
			}
			bad := func(format string, a ...any) error {
				return fmt.Errorf("%s: %s", where, fmt.Sprintf(format, a...))
			}
			name, kvs, ok := strings.Cut(e, ":")
			if !ok {
				return nil, bad("want NAME:nodes=N,per-node=U[,type=T] or NAME:of=A+B")
			}
			names := strings.Split(strings.TrimSpace(name), "+")
			for _, nm := range names {
				if !validName(nm) {
					return nil, bad("partition name %q: want letters, digits, '-', '_' or '.'", nm)
				}
			}
			var nodes, units int
			var typ string
			var of []string
			seen := map[string]bool{}
			for _, kv := range strings.Split(kvs, ",") {
				k, v, ok := strings.Cut(strings.TrimSpace(kv), "=")
				k, v = strings.TrimSpace(k), strings.TrimSpace(v)
				if !ok || v == "" {
					return nil, bad("%q: want KEY=VALUE", kv)
				}
				if seen[k] {
					return nil, bad("%s given twice", k)
				}
				seen[k] = true
				switch k {
				case "nodes", "per-node":
					x, err := strconv.Atoi(v)
					if err != nil || x <= 0 || x > 1<<20 {
						return nil, bad("%s=%s: want a whole number from 1 to %d", k, v, 1<<20)
					}
					if k == "nodes" {
						nodes = x
					} else {
						units = x
					}
				case "type":
					if !validName(v) {
						return nil, bad("type=%s: want letters, digits, '-', '_' or '.'", v)
					}
					typ = v
				case "of":
					of = strings.Split(v, "+")
					for _, o := range of {
						if !validName(o) {
							return nil, bad("of=%s: partition name %q: want letters, digits, '-', '_' or '.'", v, o)
						}
					}
				default:
					return nil, bad("unknown key %q: want nodes, per-node, type or of", k)
				}
			}
			if of != nil {
				if len(seen) > 1 {
					return nil, bad("of= takes no other key")
				}
				if len(names) > 1 {
					return nil, bad("of= names one partition")
				}
				unions = append(unions, union{e, part(names[0]), of})
				continue
			}
			if nodes == 0 || units == 0 {
				return nil, bad("want both nodes= and per-node=")
			}
			if len(l.Nodes)+nodes > 1<<20 {
				return nil, bad("more than %d nodes in all", 1<<20)
			}
			ps := make([]int, 0, len(names))
			for _, nm := range names {
				if p := part(nm); !slices.Contains(ps, p) {
					ps = append(ps, p)
				}
			}
			for range nodes {
				l.Nodes = append(l.Nodes, Node{Units: units, Type: typ, Partitions: ps})
			}
		}
	}
	if n == 0 {
		return nil, fmt.Errorf("partitions: empty: want NAME:nodes=N,per-node=U[,type=T] entries separated by ';'")
	}
	// A union adds itself to the nodes of the partitions it names, as they
	// were given by nodes= entries (not through another union): each
	// node's own partitions are kept apart, so that the unions' order in
	// the spec does not matter.
	own := make([]bool, len(l.Partitions))
	given := make([][]int, len(l.Nodes))
	for i, nd := range l.Nodes {
		given[i] = nd.Partitions
		for _, p := range nd.Partitions {
			own[p] = true
		}
	}
	for _, u := range unions {
		for _, o := range u.of {
			p, ok := index[o]
			if !ok || !own[p] {
				return nil, fmt.Errorf("partition entry %q: of=%s: no nodes= entry for partition %q", u.entry, strings.Join(u.of, "+"), o)
			}
			for i := range l.Nodes {
				nd := &l.Nodes[i]
				if slices.Contains(given[i], p) && !slices.Contains(nd.Partitions, u.p) {
					nd.Partitions = append(slices.Clip(nd.Partitions), u.p)
				}
			}
		}
	}
	if err := l.validate(); err != nil {
		return nil, fmt.Errorf("partitions: %w", err)
	}
	return l, nil
}

func validName(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.') {
			return false
		}
	}
	return true
}

// partView is the nodes one kind of job may run on: a partition's, of one
// GPU type or of any.
type partView struct {
	part   int
	typ    string
	member []bool
	units  []int
	// perNode is the largest node of the view, whole counts the nodes of
	// that size: a job larger than one node takes whole nodes of perNode.
	perNode, whole, capacity int
}

// fits reports whether a job of need units fits the view's empty nodes.
func (v *partView) fits(need int) bool {
	if need <= v.perNode {
		return true
	}
	return schedule.NodesFor(need, v.perNode) <= v.whole
}

// router sends jobs to their views, making each view when a job first
// needs it.
type router struct {
	l     *Layout
	typed bool // GPU types count (a GPU cluster)
	index map[string]int
	views []*partView
	keys  map[[2]string]int32
}

func newRouter(c Cluster) *router {
	r := &router{l: c.Layout, typed: c.Unit == GPUs, index: map[string]int{}, keys: map[[2]string]int32{}}
	for p, name := range c.Layout.Partitions {
		r.index[name] = p
	}
	return r
}

// route returns the view of job j needing need units, or -1 and why no
// node can ever run it (a skip reason naming the partition or type). Of a
// comma-separated list it takes the first partition whose nodes (of the
// job's GPU type) can hold the job, as Slurm would start it in any listed
// partition; when none can, the reason is the first listed one's.
func (r *router) route(j *policy.Job, need int) (int32, string) {
	typ := ""
	if r.typed {
		typ = j.GPUType
	}
	if j.Partition == "" {
		return r.routeIn(0, typ, need)
	}
	why := ""
	for name := range strings.SplitSeq(j.Partition, ",") {
		p, ok := r.index[strings.TrimSpace(name)]
		if !ok {
			continue
		}
		v, w := r.routeIn(p, typ, need)
		if v >= 0 {
			return v, ""
		}
		if why == "" {
			why = w
		}
	}
	if why == "" {
		why = fmt.Sprintf("partition %q not in the cluster", j.Partition)
	}
	return -1, why
}

// routeIn is route within partition p.
func (r *router) routeIn(p int, typ string, need int) (int32, string) {
	key := [2]string{r.l.Partitions[p], typ}
	v, ok := r.keys[key]
	if !ok {
		v = r.view(p, typ)
		r.keys[key] = v
	}
	if v < 0 {
		return -1, fmt.Sprintf("no %s node in partition %q", typ, r.l.Partitions[p])
	}
	if !r.views[v].fits(need) {
		return -1, fmt.Sprintf("larger than partition %q", key[0]+typeSuffix(typ))
	}
	return v, ""
}

// Unroutable counts, by the reason a replay names, the jobs no node of
// c's layout can ever run: their partition or GPU type is not in it, or
// they are larger than their partition. A replay on c leaves them out
// (Result.Skipped) and does not say so until it runs; nil without a
// layout.
func Unroutable(jobs []policy.Job, c Cluster) map[string]int {
	if c.Layout == nil {
		return nil
	}
	r, out := newRouter(c), map[string]int{}
	for i := range jobs {
		j := &jobs[i]
		if need := c.Need(j); need > 0 {
			if v, why := r.route(j, need); v < 0 {
				out[why]++
			}
		}
	}
	return out
}

// SkipWarning is the line a report prints for n jobs left out because
// no node of the cluster can run them (a reason of Unroutable).
func SkipWarning(n int, reason string) string {
	return fmt.Sprintf("warning: %d jobs left out, no node of the cluster can run them: %s", n, reason)
}

func typeSuffix(typ string) string {
	if typ == "" {
		return ""
	}
	return " (" + typ + ")"
}

// view makes the view of partition p's nodes of type typ ("": any), -1
// when it has none.
func (r *router) view(p int, typ string) int32 {
	v := &partView{part: p, typ: typ, member: make([]bool, len(r.l.Nodes)), units: make([]int, len(r.l.Nodes))}
	for i, nd := range r.l.Nodes {
		v.units[i] = nd.Units
		if slices.Contains(nd.Partitions, p) && (typ == "" || nd.Type == typ) {
			v.member[i] = true
			v.capacity += nd.Units
			if nd.Units > v.perNode {
				v.perNode, v.whole = nd.Units, 0
			}
			if nd.Units == v.perNode {
				v.whole++
			}
		}
	}
	if v.capacity == 0 {
		return -1
	}
	r.views = append(r.views, v)
	return int32(len(r.views) - 1)
}

// partState is a partitioned simulation's scheduling state: per view, its
// free units (a view of the one machine), its queue and EASY pass, and the
// needs of its pending jobs.
type partState struct {
	router *router
	views  []viewState
	// blocked marks, by partition, this cycle's partitions where a job
	// did not fit; rank is the views with jobs queued behind it, in the
	// order of their best-ranked queued job; cur is the view being
	// scheduled, start the callback of its pass (made once, so a pass
	// allocates nothing).
	blocked []bool
	rank    []int32
	cur     int32
	start   func(i int, a []schedule.Use)
}

type viewState struct {
	easy   *schedule.EASY
	queue  schedule.Queue
	needs  needs
	queued bool // this cycle, the view has jobs queued for its pass
}

func (p *partState) init(s *simulator) {
	p.views = make([]viewState, len(p.router.views))
	p.blocked = make([]bool, len(p.router.l.Partitions))
	for i, v := range p.router.views {
		p.views[i] = viewState{easy: schedule.NewEASYOn(schedule.NewPoolOf(v.perNode, v.units, v.member)),
			needs: newNeeds(v.capacity)}
	}
	p.start = func(i int, a []schedule.Use) {
		for w := range p.views {
			if int32(w) != p.cur {
				p.views[w].easy.Free.Take(a)
			}
		}
		s.start(p.views[p.cur].queue.Order[i], a)
	}
}

func (v *viewState) enqueue(need int) { v.needs.add(need) }

func (v *viewState) dequeue(need int) { v.needs.remove(need) }

// take removes an allocation from every view.
func (p *partState) take(a []schedule.Use) {
	for w := range p.views {
		p.views[w].easy.Free.Take(a)
	}
}

// give returns an allocation to every view.
func (p *partState) give(a []schedule.Use) {
	for w := range p.views {
		p.views[w].easy.Free.Give(a)
	}
}

// anyFits reports whether a pending job could start now: some pending
// job fits the free units of some view.
func (s *simulator) anyFits() bool {
	if s.sh != nil && s.sh.shardFits() {
		return true
	}
	if s.parts == nil {
		return s.free.Fits(s.needs.min)
	}
	for w := range s.parts.views {
		v := &s.parts.views[w]
		if v.needs.min < len(v.needs.count) && v.easy.Free.Fits(v.needs.min) {
			return true
		}
	}
	return false
}

// decideParts is decideEASY on a partitioned cluster, as Slurm's two
// schedulers act on one priority order: the main one walks the whole
// ranking, starting each job that fits its view until one does not, which
// blocks its partition only (every GPU type of it, as Slurm's main
// scheduler skips the rest of a partition whatever they ask for); then
// each view with jobs behind a blocked one, the view of the best-ranked
// such job first, makes its EASY pass over its jobs not started, in
// ranking order, with the reservation and backfill seeing only its nodes.
func (s *simulator) decideParts() {
	p := s.parts
	for w := range p.views {
		p.views[w].queue.Reset()
		p.views[w].queued = false
	}
	clear(p.blocked)
	p.rank = p.rank[:0]
	for _, k := range s.order {
		j := &s.jobs[k]
		v := &p.views[j.view]
		part := p.router.views[j.view].part
		if !p.blocked[part] {
			if free := v.easy.Free; free.Fits(int(j.need)) {
				s.place = free.Place(int(j.need), s.place)
				p.take(s.place)
				s.start(k, s.place)
				continue
			}
			p.blocked[part] = true
		}
		if !v.queued {
			v.queued = true
			p.rank = append(p.rank, j.view)
		}
		v.queue.Add(k, int(j.need), j.limit-j.done)
	}
	if !s.backfillNow() {
		return
	}
	for _, w := range p.rank {
		p.cur = w
		v := &p.views[w]
		v.easy.Pass(s.now, &v.queue, s.limitEnds, true, p.start)
	}
}

// TRES is the cluster's TRES totals, which the slurm policy divides a
// job's request by (policy.MultifactorParams.PartitionTRES): per
// partition its nodes and units, as "cpu" on a CPU cluster and as
// "gres/gpu" and "gres/gpu:TYPE" on a GPU one. The entry "" is the
// default partition's (a job that names none runs there), or the whole
// cluster's when it has no layout.
func (c Cluster) TRES() map[string]map[string]float64 {
	unit := "gres/gpu"
	if c.Unit == CPUs {
		unit = "cpu"
	}
	if c.Layout == nil {
		return map[string]map[string]float64{"": {"node": float64(c.Nodes), unit: float64(c.Capacity())}}
	}
	out := make(map[string]map[string]float64, len(c.Layout.Partitions)+1)
	for _, name := range c.Layout.Partitions {
		out[name] = map[string]float64{}
	}
	for _, nd := range c.Layout.Nodes {
		for _, p := range nd.Partitions {
			t := out[c.Layout.Partitions[p]]
			t["node"]++
			t[unit] += float64(nd.Units)
			if nd.Type != "" && c.Unit == GPUs {
				t[unit+":"+strings.ToLower(nd.Type)] += float64(nd.Units)
			}
		}
	}
	out[""] = out[c.Layout.Partitions[0]]
	return out
}
