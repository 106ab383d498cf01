// Package gbt is a small gradient-boosted regression tree learner for the
// fairway predictor. No maintained pure-Go library trains boosted trees
// (the Go ones only load LightGBM/XGBoost models), and the policy packages
// import only the standard library, so it is written here, kept to what the
// predictor needs:
//
//   - least-absolute-deviation boosting (Friedman, "Greedy Function
//     Approximation: A Gradient Boosting Machine", Ann. Statist. 29(5), 2001,
//     §4.2 LAD_TreeBoost): trees are fit to sign(y−F) and each leaf moves by
//     the median residual of its samples, so the model estimates the
//     conditional median and is not dragged by outliers;
//   - stochastic row subsampling per tree (Friedman, "Stochastic gradient
//     boosting", CSDA 38(4), 2002) with a fixed-seed generator, so training
//     is deterministic;
//   - histogram split finding on at most gbtBins quantile bins per feature,
//     as LightGBM does (Ke et al., NeurIPS 2017), with the smaller child's
//     histogram built and the larger one's obtained by subtraction.
//
// Binning, histograms and the pass that adds a new tree to every sample's
// prediction are shared among the cores (Parallel): each feature or
// sample is handled by one goroutine, in the serial order, so a model is the
// same to the bit on any number of cores.
package gbt

import (
	"math"
	"math/bits"
	"runtime"
	"slices"
	"sync"
)

const gbtBins = 64

// Config sets the learner's size.
type Config struct {
	Trees     int
	Depth     int
	Rate      float64
	MinLeaf   int
	Subsample float64
}

// gbtNode is one node of a tree; a leaf has feature -1.
type gbtNode struct {
	feature     int32
	threshold   float32 // go left when x[feature] <= threshold
	left, right int32
	value       float32
}

// Trees is the number of trees of m.
func (m *Model) Trees() int { return len(m.trees) }

// Depth is the depth every tree of m is stored at.
func (m *Model) Depth() int { return m.depth }

// Model is a trained ensemble. For prediction each tree is also stored
// complete (every leaf at depth `depth`, a leaf above it padded with
// always-left nodes), level by level: node i's children are 2i+1 and 2i+2,
// so a prediction walks depth steps without branching on the tree shape.
//
// Each step of a walk is a chain of dependent loads (the split, then the
// feature it tests), so predict walks Lanes trees at once and the CPU
// overlaps their chains. The splits are laid out for that: trees in groups
// of Lanes, node i of the group's k-th tree at Lanes·i + k within the
// group (splitIndex). A step is integer arithmetic on order keys (see
// gbtOrderKey) with no branch to mispredict.
type Model struct {
	base   float32
	trees  [][]gbtNode
	depth  int
	splits []gbtSplit // trees × (2^depth − 1), at splitIndex
	leaf   []float32  // trees × 2^depth leaf values, tree after tree
}

const (
	// Lanes is how many trees predict walks at once.
	Lanes = 8
	// gbtMaxFeatures bounds the number of features of a model, so that
	// predict's order keys are a small array indexed without bounds checks.
	gbtMaxFeatures = 64
)

// gbtSplit is an inner node of a complete tree in one word, loaded at once:
// the feature index above bit 32, the order key of the threshold in bits
// 0-31. x goes right when gbtOrderKey(x[feature]) > the threshold's key.
type gbtSplit uint64

func newGBTSplit(feature int32, threshold float32) gbtSplit {
	return gbtSplit(uint64(feature)<<32 | uint64(uint32(gbtOrderKey(threshold))))
}

// right is 1 when x, as order keys, goes right at s, else 0: the sign bit
// of threshold − key.
func (s gbtSplit) right(keys *[gbtMaxFeatures]int32) int {
	return int(uint64(int64(int32(s))-int64(keys[(s>>32)%gbtMaxFeatures])) >> 63)
}

// gbtOrderKey maps a float32 to an int32 with the same order: for a and b not
// NaN, a > b exactly when gbtOrderKey(a) > gbtOrderKey(b), and -0 and +0 map
// alike. Non-negative floats order as their bits, negative ones as their
// bits reversed. NaN maps below every other value, so that a NaN feature,
// which compares false with every threshold, goes left as in a float
// compare.
func gbtOrderKey(v float32) int32 {
	if v != v {
		return math.MinInt32
	}
	b := int32(math.Float32bits(v))
	neg := b >> 31 // -1 for negative values (and -0), else 0
	return (b ^ (neg & math.MaxInt32)) - neg
}

// splitIndex is where node pos of tree t is in m.splits: interleaved within
// a full group of Lanes trees, one tree after another for the trees
// after the last full group.
func (m *Model) splitIndex(t, pos int) int {
	inner := (1 << m.depth) - 1
	if g := t / Lanes; (g+1)*Lanes <= len(m.trees) {
		return g*Lanes*inner + Lanes*pos + t%Lanes
	}
	return t*inner + pos
}

// predict returns the model's value for x: the base plus each tree's leaf,
// added in tree order.
func (m *Model) Predict(x []float32) float32 {
	var keys [gbtMaxFeatures]int32
	for i, v := range x[:min(len(x), gbtMaxFeatures)] {
		keys[i] = gbtOrderKey(v)
	}
	f := m.base
	inner, leaves := (1<<m.depth)-1, 1<<m.depth
	t := 0
	for ; t+Lanes <= len(m.trees); t += Lanes {
		s := m.splits[t*inner : (t+Lanes)*inner]
		var i0, i1, i2, i3, i4, i5, i6, i7 int
		for range m.depth {
			i0 = 2*i0 + 1 + s[Lanes*i0].right(&keys)
			i1 = 2*i1 + 1 + s[Lanes*i1+1].right(&keys)
			i2 = 2*i2 + 1 + s[Lanes*i2+2].right(&keys)
			i3 = 2*i3 + 1 + s[Lanes*i3+3].right(&keys)
			i4 = 2*i4 + 1 + s[Lanes*i4+4].right(&keys)
			i5 = 2*i5 + 1 + s[Lanes*i5+5].right(&keys)
			i6 = 2*i6 + 1 + s[Lanes*i6+6].right(&keys)
			i7 = 2*i7 + 1 + s[Lanes*i7+7].right(&keys)
		}
		l := m.leaf[t*leaves : (t+Lanes)*leaves]
		f += l[i0-inner]
		f += l[leaves+i1-inner]
		f += l[2*leaves+i2-inner]
		f += l[3*leaves+i3-inner]
		f += l[4*leaves+i4-inner]
		f += l[5*leaves+i5-inner]
		f += l[6*leaves+i6-inner]
		f += l[7*leaves+i7-inner]
	}
	for ; t < len(m.trees); t++ {
		s := m.splits[t*inner : (t+1)*inner]
		i := 0
		for range m.depth {
			i = 2*i + 1 + s[i].right(&keys)
		}
		f += m.leaf[t*leaves+i-inner]
	}
	return f
}

// complete lays the trees out for predict.
func (m *Model) complete(depth int) {
	m.depth = depth
	inner, leaves := (1<<depth)-1, 1<<depth
	m.splits = make([]gbtSplit, len(m.trees)*inner)
	m.leaf = make([]float32, len(m.trees)*leaves)
	for t, tree := range m.trees {
		var walk func(n int32, pos, d int)
		walk = func(n int32, pos, d int) {
			if d == depth {
				m.leaf[t*leaves+pos-inner] = tree[n].value
				return
			}
			if tree[n].feature < 0 { // a leaf above the bottom: always left
				m.splits[m.splitIndex(t, pos)] = newGBTSplit(0, float32(math.Inf(1)))
				walk(n, 2*pos+1, d+1)
				walk(n, 2*pos+2, d+1)
				return
			}
			m.splits[m.splitIndex(t, pos)] = newGBTSplit(tree[n].feature, tree[n].threshold)
			walk(tree[n].left, 2*pos+1, d+1)
			walk(tree[n].right, 2*pos+2, d+1)
		}
		walk(0, 0, 0)
	}
}

// Trainer holds the scratch space of training, reused across retrains.
type Trainer struct {
	Config   Config
	nf       int
	cuts     [][]float32      // per feature: bin upper bounds; bin b holds x <= cuts[b]
	padded   [][gbtBins]int32 // per feature: cuts as order keys, padded for binOf64
	bins     []uint8          // n × nf, row-major
	resid    []float32
	adds     []int64   // per row, histAdd of its residual
	rest     []int32   // the rows left out of the tree's sample
	inSample []uint8   // 1 for the rows of the tree's sample
	right    []int32   // partition's scratch
	f        []float32 // the model's value for each training row, as trained so far
	// fittedOK is whether f is what the model predicts (see Fitted).
	fittedOK bool
	rows     []int32
	rng      uint64
	free     [][]histBin // histograms of finished nodes, for reuse
	counts   []int64     // countHistogram's scratch: per feature and bin, sign sum and count
	// splitBin is, per node of the tree being grown, the bin its split
	// sends left up to (as threshold: the bin's upper cut).
	splitBin []uint8
	// leaves are the leaves of the tree being grown, each with the range
	// of t.rows it holds, so that Train adds a leaf's value to its sampled
	// rows without walking the tree for each.
	leaves   []leafRows
	leafBuf  []float32 // leaf's scratch
	leafKeys []uint32  // leaf's scratch
	// The tree being grown, complete (see layBinned): per inner node the
	// feature and bin of its split, and the leaf values.
	walkFeat, walkBin []uint8
	walkLeaf          []float32
}

// leafRows is a leaf of the tree being grown: t.rows[lo:hi] are the
// sampled rows that reach it.
type leafRows struct {
	lo, hi int
	value  float32
}

// histBin is a bin's sample count (bits 0-31) and sum of the samples'
// sign(residual) (above), packed as countHistogram counts them: a child's
// bins are its parent's minus its sibling's by one subtraction, which never
// borrows (a child's count is at most its parent's).
type histBin int64

// split unpacks b.
func (b histBin) split() (sign, count int32) {
	count = int32(uint32(b))                             // counts are below 2^31
	return int32((int64(b) - int64(count)) >> 32), count // exact: |sign sum| <= count
}

// lcg is a 64-bit linear congruential generator (Knuth's MMIX constants);
// enough to draw subsamples, and deterministic.
func (t *Trainer) next() uint64 {
	t.rng = t.rng*6364136223846793005 + 1442695040888963407
	return t.rng >> 11
}

// train fits a model to rows x (n × nf, row-major) and targets y; nf is at
// most gbtMaxFeatures.
func (t *Trainer) Train(x []float32, y []float32, nf int) *Model {
	if nf > gbtMaxFeatures {
		panic("gbt: more than gbtMaxFeatures features")
	}
	n := len(y)
	if t.nf != nf {
		t.free = nil // histograms of another size
	}
	t.nf = nf
	t.rng = 0x9e3779b97f4a7c15
	t.fittedOK = false
	t.buildBins(x, n, nf)
	m := &Model{base: median32(slices.Clone(y))}
	t.f = resize(t.f, n)
	t.resid = resize(t.resid, n)
	t.adds = resize(t.adds, n)
	for i := range t.f {
		t.f[i] = m.base
	}
	sub := int(float64(n) * t.Config.Subsample)
	if sub < 2*t.Config.MinLeaf || sub > n {
		sub = n
	}
	all := make([]int32, n)
	t.inSample = resize(t.inSample, n)
	clear(t.inSample)
	for i := range all {
		all[i] = int32(i)
	}
	for k := 0; k < t.Config.Trees; k++ {
		// Partial Fisher-Yates: the first sub entries become the sample.
		for i := 0; i < sub; i++ {
			j := i + int(t.next()%uint64(n-i))
			all[i], all[j] = all[j], all[i]
		}
		// The sample in row order, and the rest, so that the passes over
		// them read x, bins and residuals forwards.
		for _, r := range all[:sub] {
			t.inSample[r] = 1
		}
		// Every row is written to both lists and only its list's
		// count moves: whether a row is in the sample is random, so a
		// branch would mispredict about every other row.
		t.rows, t.rest = resize(t.rows, sub+1), resize(t.rest, n-sub+1)
		nin, nout := 0, 0
		for r, in := range t.inSample {
			t.rows[nin] = int32(r)
			t.rest[nout] = int32(r)
			nin += int(in)
			nout += 1 - int(in)
		}
		t.rows, t.rest = t.rows[:nin], t.rest[:nout]
		clear(t.inSample)
		for _, r := range t.rows {
			res := y[r] - t.f[r]
			t.resid[r] = res
			t.adds[r] = histAdd(res)
		}
		tree := t.growTree(x)
		m.trees = append(m.trees, tree)
		// The sampled rows are where growTree partitioned them: each
		// leaf's own. The others walk the tree on their bins, which are
		// compact, rather than on x: a split at bin b of feature f sends
		// x left exactly when x's bin is at most b (leafValue's
		// x[f] <= cuts[f][b]; see buildBins), as growTree's partition
		// does. Either way a row adds its leaf's value once.
		for _, l := range t.leaves {
			for _, r := range t.rows[l.lo:l.hi] {
				t.f[r] += l.value
			}
		}
		t.layBinned(tree)
		rest := t.rest
		Parallel(len(rest), len(rest)*t.Config.Depth, func(lo, hi int) {
			for _, r := range rest[lo:hi] {
				i := int(r)
				t.f[i] += t.leafValueBinned(t.bins[i*nf : (i+1)*nf])
			}
		})
	}
	m.complete(t.Config.Depth)
	t.fittedOK = !slices.ContainsFunc(x, func(v float32) bool { return v != v })
	return m
}

// Fitted is the last trained model's prediction for each of its training
// rows, as its Predict gives it to the bit, or nil when a feature value was
// NaN. Training added each tree's leaf to every row in tree order, as
// Predict does, and a split's bin sends a row the way its threshold does,
// but for NaN: binned above every cut, it went right in training, and
// Predict sends it left. It is valid until the next Train.
func (t *Trainer) Fitted() []float32 {
	if !t.fittedOK {
		return nil
	}
	return t.f
}

// layBinned lays tree, which growTree just grew (t.splitBin holds its
// splits' bins), out complete for leafValueBinned, as Model.complete does
// for predict: node i's children are 2i+1 and 2i+2, a leaf above the
// bottom padded with splits that always go left.
func (t *Trainer) layBinned(tree []gbtNode) {
	depth := t.Config.Depth
	inner, leaves := (1<<depth)-1, 1<<depth
	t.walkFeat = resize(t.walkFeat, inner)
	t.walkBin = resize(t.walkBin, inner)
	t.walkLeaf = resize(t.walkLeaf, leaves)
	var walk func(n int32, pos, d int)
	walk = func(n int32, pos, d int) {
		if d == depth {
			t.walkLeaf[pos-inner] = tree[n].value
			return
		}
		if tree[n].feature < 0 {
			t.walkFeat[pos], t.walkBin[pos] = 0, math.MaxUint8 // every bin goes left
			walk(n, 2*pos+1, d+1)
			walk(n, 2*pos+2, d+1)
			return
		}
		t.walkFeat[pos], t.walkBin[pos] = uint8(tree[n].feature), t.splitBin[n]
		walk(tree[n].left, 2*pos+1, d+1)
		walk(tree[n].right, 2*pos+2, d+1)
	}
	walk(0, 0, 0)
}

// leafValueBinned is leafValue for a training row given by its bins, on
// the tree layBinned laid out: Depth steps of integer arithmetic, none a
// branch on the data to mispredict.
func (t *Trainer) leafValueBinned(bins []uint8) float32 {
	feat, bin := t.walkFeat, t.walkBin
	i := 0
	for range t.Config.Depth {
		// right is 1 when the row's bin is above the split's, else 0.
		right := int(uint(int(bin[i])-int(bins[feat[i]])) >> (bits.UintSize - 1))
		i = 2*i + 1 + right
	}
	return t.walkLeaf[i-len(bin)]
}

// buildBins chooses quantile cut points per feature and bins every value.
func (t *Trainer) buildBins(x []float32, n, nf int) {
	t.cuts = resize(t.cuts, nf)
	step := max(n/4096, 1)
	Parallel(nf, nf*(n/step+1)*12, func(f0, f1 int) {
		vals := make([]float32, 0, n/step+1)
		scratch := make([]uint32, 2*(n/step+1))
		for f := f0; f < f1; f++ {
			vals = vals[:0]
			for i := 0; i < n; i += step {
				vals = append(vals, x[i*nf+f])
			}
			sortFloats(vals, scratch)
			var cuts []float32
			for b := 1; b < gbtBins; b++ {
				v := vals[b*len(vals)/gbtBins]
				if len(cuts) == 0 || v > cuts[len(cuts)-1] {
					cuts = append(cuts, v)
				}
			}
			if len(cuts) == 0 || cuts[len(cuts)-1] < vals[len(vals)-1] {
				cuts = append(cuts, vals[len(vals)-1])
			}
			t.cuts[f] = cuts
		}
	})
	t.padded = resize(t.padded, nf)
	for f, cuts := range t.cuts {
		p := &t.padded[f]
		for b := range p {
			p[b] = gbtOrderKey(float32(math.Inf(1)))
			if b < len(cuts) {
				p[b] = gbtOrderKey(cuts[b])
			}
		}
	}
	t.bins = resize(t.bins, n*nf)
	Parallel(n, n*nf*6, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			row, bins := x[i*nf:(i+1)*nf], t.bins[i*nf:(i+1)*nf]
			f := 0
			// Four features at a time: each search is a chain of
			// dependent loads, and four chains overlap.
			for ; f+4 <= nf; f += 4 {
				b0, b1, b2, b3 := binOf64x4(
					(*[4][gbtBins]int32)(t.padded[f:f+4]), (*[4]float32)(row[f:f+4]))
				bins[f] = uint8(min(b0, len(t.cuts[f])-1))
				bins[f+1] = uint8(min(b1, len(t.cuts[f+1])-1))
				bins[f+2] = uint8(min(b2, len(t.cuts[f+2])-1))
				bins[f+3] = uint8(min(b3, len(t.cuts[f+3])-1))
			}
			for ; f < nf; f++ {
				bins[f] = uint8(min(binOf64(&t.padded[f], row[f]), len(t.cuts[f])-1))
			}
		}
	})
}

// sortFloats sorts v as slices.Sort does, using scratch (2 len(v)): by
// radix on keys that order the floats as their values, four passes of a
// byte (a pass whose byte all keys share is skipped), which costs a few
// operations per value where the comparison sort's branches mispredict. A
// NaN, which slices.Sort places first, leaves the sort to slices.Sort. The
// one difference is between -0 and +0, equal as values: the radix puts -0
// first, slices.Sort either way, and a cut taken from them sends values
// alike either way.
func sortFloats(v []float32, scratch []uint32) {
	if slices.ContainsFunc(v, func(x float32) bool { return x != x }) {
		slices.Sort(v)
		return
	}
	keys, tmp := scratch[:len(v)], scratch[len(v):2*len(v)]
	for i, x := range v {
		keys[i] = floatKey(x)
	}
	for shift := 0; shift < 32; shift += 8 {
		var count [256]int
		for _, k := range keys {
			count[k>>shift&0xff]++
		}
		if count[keys[0]>>shift&0xff] == len(keys) {
			continue
		}
		pos := 0
		for d, c := range count {
			count[d] = pos
			pos += c
		}
		for _, k := range keys {
			d := k >> shift & 0xff
			tmp[count[d]] = k
			count[d]++
		}
		keys, tmp = tmp, keys
	}
	for i, k := range keys {
		v[i] = fromFloatKey(k)
	}
}

// floatKey is a key of v that orders as v's value (for v not NaN), -0
// below +0: negative floats order as their bits reversed, the others as
// their bits above every negative one.
func floatKey(v float32) uint32 {
	b := math.Float32bits(v)
	return b ^ (uint32(int32(b)>>31) | 1<<31)
}

// fromFloatKey is the float whose key (floatKey) is k.
func fromFloatKey(k uint32) float32 {
	return math.Float32frombits(k ^ (uint32(int32(^k)>>31) | 1<<31))
}

// binKey is v's order key for binOf64, widened so that NaN can be above
// every cut.
func binKey(v float32) int64 {
	if v != v {
		return math.MaxInt32 + 1
	}
	return int64(gbtOrderKey(v))
}

// binOf64 is how many cuts v is above (is not at most), at most gbtBins-1,
// for cuts as order keys (gbtOrderKey) padded to gbtBins with +Inf's; NaN
// is above every cut. A value's bin is that bounded by the last real cut:
// the first cut v is at most, the last bin for a value above every cut or
// NaN. Whether v goes up a step of the search depends on the data, so a
// branch would mispredict about every other step; on order keys each step
// is integer arithmetic, and there are always log2(gbtBins) of them.
func binOf64(cuts *[gbtBins]int32, v float32) int {
	k := binKey(v)
	i := 0
	for step := gbtBins / 2; step > 0; step /= 2 {
		// up is -1 when v > the cut, else 0.
		up := int((int64(cuts[(i+step-1)%gbtBins]) - k) >> 63)
		i += step & up
	}
	return i
}

// binOf64x4 is binOf64 of four values, each among its own cuts, the four
// searches interleaved.
func binOf64x4(cuts *[4][gbtBins]int32, v *[4]float32) (i0, i1, i2, i3 int) {
	k0, k1, k2, k3 := binKey(v[0]), binKey(v[1]), binKey(v[2]), binKey(v[3])
	for step := gbtBins / 2; step > 0; step /= 2 {
		i0 += step & int((int64(cuts[0][(i0+step-1)%gbtBins])-k0)>>63)
		i1 += step & int((int64(cuts[1][(i1+step-1)%gbtBins])-k1)>>63)
		i2 += step & int((int64(cuts[2][(i2+step-1)%gbtBins])-k2)>>63)
		i3 += step & int((int64(cuts[3][(i3+step-1)%gbtBins])-k3)>>63)
	}
	return i0, i1, i2, i3
}

// gbtMinWork is roughly how many inner-loop steps make it worth starting
// goroutines (a few microseconds of work each).
const gbtMinWork = 1 << 15

// Parallel calls fn on contiguous chunks covering [0, n), one chunk per
// core when work (an estimate of the inner-loop steps of the whole range) is
// worth it, else fn(0, n) on the caller's goroutine. fn must write only
// what belongs to its indices.
func Parallel(n, work int, fn func(lo, hi int)) {
	workers, release := gbtWorkers(n, work)
	defer release()
	gbtChunks(n, workers, func(_, lo, hi int) { fn(lo, hi) })
}

// gbtWorkers is how many chunks to make of n indices: the caller plus the
// helpers it can take (TakeHelpers), at most one per core, none when
// the work is too small. release gives the helpers back.
func gbtWorkers(n, work int) (workers int, release func()) {
	want := max(min(runtime.GOMAXPROCS(0), n, work/gbtMinWork), 1)
	got, release := TakeHelpers(want - 1)
	return 1 + got, release
}

// gbtChunks calls fn(w, lo, hi) for chunk w < workers of [0, n), chunk 0 on
// the caller's goroutine, and returns when all are done.
func gbtChunks(n, workers int, fn func(w, lo, hi int)) {
	if workers <= 1 {
		fn(0, 0, n)
		return
	}
	var wg sync.WaitGroup
	chunk := (n + workers - 1) / workers
	for w := 1; w*chunk < n; w++ {
		wg.Go(func() { fn(w, w*chunk, min((w+1)*chunk, n)) })
	}
	fn(0, 0, min(chunk, n))
	wg.Wait()
}

// growTree grows one tree on t.rows, fitting sign(resid) with squared-error
// splits, and sets each leaf to Rate × the median residual of its rows.
func (t *Trainer) growTree(x []float32) []gbtNode {
	type open struct {
		node   int32
		lo, hi int // t.rows[lo:hi] are the node's rows
		depth  int
		hist   []histBin // nf × gbtBins, nil until built
	}
	nf := t.nf
	tree := []gbtNode{{feature: -1}}
	t.splitBin = append(t.splitBin[:0], 0)
	t.leaves = t.leaves[:0]
	stack := []open{{node: 0, lo: 0, hi: len(t.rows)}}
	for len(stack) > 0 {
		o := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		rows := t.rows[o.lo:o.hi]
		if o.depth >= t.Config.Depth || len(rows) < 2*t.Config.MinLeaf {
			tree[o.node].value = t.leaf(rows)
			t.leaves = append(t.leaves, leafRows{o.lo, o.hi, tree[o.node].value})
			t.release(o.hist)
			continue
		}
		if o.hist == nil {
			o.hist = t.histogram(rows)
		}
		// The sums are of integers, exact in float64 in any order.
		var G, H float64
		for b := 0; b < gbtBins; b++ {
			g, n := o.hist[b].split()
			G += float64(g)
			H += float64(n)
		}
		best, bestF, bestB := 0.0, -1, -1
		parent := G * G / H
		for f := 0; f < nf; f++ {
			h := o.hist[f*gbtBins : (f+1)*gbtBins]
			var gl, hl float64
			var nl int32
			for b := 0; b < len(t.cuts[f])-1; b++ {
				if h[b] == 0 {
					// An empty bin adds +0s (sums of ±1s are never
					// -0): the split after it is the one before it,
					// which was either weighed or skipped alike.
					continue
				}
				g, n := h[b].split()
				gl += float64(g)
				hl += float64(n)
				nl += n
				nr := int32(len(rows)) - nl
				if int(nl) < t.Config.MinLeaf || int(nr) < t.Config.MinLeaf {
					continue
				}
				gr, hr := G-gl, H-hl
				if hl <= 0 || hr <= 0 {
					continue
				}
				gain := gl*gl/hl + gr*gr/hr - parent
				if gain > best+1e-9 {
					best, bestF, bestB = gain, f, b
				}
			}
		}
		if bestF < 0 {
			tree[o.node].value = t.leaf(rows)
			t.leaves = append(t.leaves, leafRows{o.lo, o.hi, tree[o.node].value})
			t.release(o.hist)
			continue
		}
		i := t.partition(rows, bestF, bestB)
		l, r := int32(len(tree)), int32(len(tree)+1)
		tree[o.node] = gbtNode{feature: int32(bestF), threshold: t.cuts[bestF][bestB], left: l, right: r}
		tree = append(tree, gbtNode{feature: -1}, gbtNode{feature: -1})
		t.splitBin[o.node] = uint8(bestB)
		t.splitBin = append(t.splitBin, 0, 0)
		lo := open{node: l, lo: o.lo, hi: o.lo + i, depth: o.depth + 1}
		hi := open{node: r, lo: o.lo + i, hi: o.hi, depth: o.depth + 1}
		if lo.depth < t.Config.Depth {
			// Build the smaller child's histogram; the other is the
			// parent's minus it.
			small, big := &lo, &hi
			if hi.hi-hi.lo < lo.hi-lo.lo {
				small, big = &hi, &lo
			}
			if small.hi-small.lo >= 2*t.Config.MinLeaf || big.hi-big.lo >= 2*t.Config.MinLeaf {
				small.hist = t.histogram(t.rows[small.lo:small.hi])
				big.hist = o.hist
				for k, v := range small.hist {
					big.hist[k] -= v
				}
				o.hist = nil
			}
		}
		t.release(o.hist)
		stack = append(stack, lo, hi)
	}
	return tree
}

// partition moves the rows whose bin of feature f is at most b (the left
// child's) before the others and returns how many there are. It is stable:
// the rows of each child stay in the order they were, ascending, so that
// the passes over a node's rows read forwards. Which side a row goes to
// is data, so rather than branch each row is written to both sides (left
// in place: never ahead of the row read) and only its side's count moves.
func (t *Trainer) partition(rows []int32, f, b int) int {
	nf := t.nf
	t.right = resize(t.right, len(rows))
	right := t.right
	nl, nr := 0, 0
	for _, r := range rows {
		bin := int(t.bins[int(r)*nf+f])
		goRight := int(uint(b-bin) >> (bits.UintSize - 1)) // 1 when bin > b
		rows[nl] = r
		right[nr] = r
		nl += 1 - goRight
		nr += goRight
	}
	copy(rows[nl:], right[:nr])
	return nl
}

// histogram sums sign(resid) per feature and bin over rows (see
// countHistogram).
func (t *Trainer) histogram(rows []int32) []histBin {
	var h []histBin
	if k := len(t.free); k > 0 {
		h, t.free = t.free[k-1], t.free[:k-1]
		clear(h)
	} else {
		h = make([]histBin, t.nf*gbtBins)
	}
	t.countHistogram(rows, h)
	return h
}

// countHistogram fills h: every sample weighs 1, so the sums are
// counts, exact in any order, so each bin's sign sum and count are packed
// in one int64 (histBin: one add per feature and row, and the 32 features ×
// 64 bins fit the L1 cache), and the rows can be shared among the cores,
// each counting its own, then added up. growTree adds the unpacked counts
// in float64, exactly, so the split is the float loop's to the bit.
func (t *Trainer) countHistogram(rows []int32, h []histBin) {
	nf := t.nf
	size := nf * gbtBins
	workers, release := gbtWorkers(len(rows), len(rows)*nf)
	defer release()
	const block = gbtMaxFeatures * gbtBins // one worker's counts
	t.counts = resize(t.counts, workers*block)
	gbtChunks(len(rows), workers, func(w, lo, hi int) {
		c := (*[block]int64)(t.counts[w*block : (w+1)*block])
		clear(c[:size])
		for _, r := range rows[lo:hi] {
			add := t.adds[r]
			b := t.bins[int(r)*nf : int(r)*nf+nf]
			f := 0
			// Eight features at a time, on a view of their eight
			// histograms: bin < gbtBins, so the masks only spare the
			// bounds checks, and the offsets are constants.
			for ; f+8 <= nf; f += 8 {
				c8 := (*[8 * gbtBins]int64)(c[f*gbtBins : (f+8)*gbtBins])
				b8 := (*[8]uint8)(b[f : f+8])
				c8[int(b8[0])&(gbtBins-1)] += add
				c8[gbtBins+int(b8[1])&(gbtBins-1)] += add
				c8[2*gbtBins+int(b8[2])&(gbtBins-1)] += add
				c8[3*gbtBins+int(b8[3])&(gbtBins-1)] += add
				c8[4*gbtBins+int(b8[4])&(gbtBins-1)] += add
				c8[5*gbtBins+int(b8[5])&(gbtBins-1)] += add
				c8[6*gbtBins+int(b8[6])&(gbtBins-1)] += add
				c8[7*gbtBins+int(b8[7])&(gbtBins-1)] += add
			}
			for ; f < nf; f++ {
				c[(f*gbtBins+int(b[f]))&(block-1)] += add
			}
		}
	})
	for k := range size {
		v := t.counts[k]
		for w := 1; w < workers; w++ {
			v += t.counts[w*block+k]
		}
		h[k] = histBin(v)
	}
}

// histAdd is what a row with residual res adds to its bins' counts in
// countHistogram: count 1 (bits 0-31), sign(res) above bit 32; a zero or NaN
// residual has sign 0. The sign is data, about as often + as -, so it is
// taken from the float's bits rather than by a branch that would
// mispredict.
func histAdd(res float32) int64 {
	b := math.Float32bits(res)
	// nonzero is -1 when res is neither ±0 nor NaN, else 0: |res|'s bits
	// less one are below +Inf's exactly then (0 wraps round).
	nonzero := (int64((b&0x7fffffff)-1) - 0x7f800000) >> 63
	sign := 1 - 2*int64(b>>31)
	return 1 + (sign<<32)&nonzero
}

// release keeps a histogram no node needs any more for the next one.
func (t *Trainer) release(h []histBin) {
	if h != nil {
		t.free = append(t.free, h)
	}
}

// leaf is Rate × the median residual of rows. The median is a value, the
// same whatever order rows are in (growTree's partition decides it), but
// for the sign of a zero: a zero median is taken as +0, so that residuals
// of both signs of zero (targets with -0) give one model.
func (t *Trainer) leaf(rows []int32) float32 {
	if len(rows) == 0 {
		return 0
	}
	// The residuals as order keys (floatKey): a NaN among them,
	// which has no place in the order, leaves the median to median32.
	t.leafKeys = resize(t.leafKeys, 2*len(rows)) // every entry is written before it is read
	keys := t.leafKeys[:len(rows):len(rows)]
	nan := false
	for i, r := range rows {
		v := t.resid[r]
		nan = nan || v != v
		keys[i] = floatKey(v)
	}
	var med float32
	if nan {
		t.leafBuf = resize(t.leafBuf, len(rows))
		for i, r := range rows {
			t.leafBuf[i] = t.resid[r]
		}
		med = median32(t.leafBuf)
	} else {
		med = fromFloatKey(selectKeys(keys, t.leafKeys[len(rows):2*len(rows)], (len(rows)-1)/2))
	}
	if med == 0 {
		med = 0 // +0 for -0
	}
	return float32(t.Config.Rate) * med
}

// selectKeys is the k-th smallest of keys (from 0), by radix selection: a
// byte at a time from the top, count the candidates per byte value, keep
// those with the byte value the k-th falls in. keys and tmp (as long, not
// overlapping) are overwritten. Each pass is a few operations per candidate, where a
// comparison selection's branches mispredict.
func selectKeys(keys, tmp []uint32, k int) uint32 {
	cand := keys
	for shift := 24; shift >= 0; shift -= 8 {
		var count [256]int
		for _, c := range cand {
			count[c>>shift&0xff]++
		}
		d := 0
		for k >= count[d] {
			k -= count[d]
			d++
		}
		if count[d] == len(cand) {
			continue // every candidate has this byte
		}
		// Every candidate is written, and only those with byte d are
		// counted: whether one has is data, so no branch.
		out := tmp[:len(cand)]
		m := 0
		for _, c := range cand {
			out[m] = c
			x := c>>shift&0xff ^ uint32(d)
			m += int((x - 1) >> 31) // 1 when x is 0
		}
		keys, tmp = tmp, keys
		cand = out[:m]
		if m == 1 {
			return cand[0]
		}
	}
	return cand[k] // all candidates are equal
}

// median32 is the median of v (the lower middle for an even count); v is
// reordered.
func median32(v []float32) float32 {
	if len(v) == 0 {
		return 0
	}
	return select32(v, (len(v)-1)/2)
}

// select32 is the k-th smallest of v (from 0), by Hoare's selection; v is
// reordered. For v without NaN it is sorted v's k-th element.
func select32(v []float32, k int) float32 {
	lo, hi := 0, len(v)-1
	for lo < hi {
		p := v[(lo+hi)/2]
		i, j := lo, hi
		for i <= j {
			for v[i] < p {
				i++
			}
			for v[j] > p {
				j--
			}
			if i <= j {
				v[i], v[j] = v[j], v[i]
				i++
				j--
			}
		}
		switch {
		case k <= j:
			hi = j
		case k >= i:
			lo = i
		default:
			return v[k]
		}
	}
	return v[k]
}

func resize[T any](s []T, n int) []T {
	if cap(s) >= n {
		return s[:n]
	}
	return make([]T, n)
}

// Quantile32 is the q-quantile (0..1) of v by nearest rank; v is reordered.
func Quantile32(v []float32, q float64) float32 {
	if len(v) == 0 {
		return 0
	}
	i := max(min(int(math.Ceil(q*float64(len(v))))-1, len(v)-1), 0)
	if slices.ContainsFunc(v, func(x float32) bool { return x != x }) {
		slices.Sort(v) // NaNs first, as a sort places them
		return v[i]
	}
	return select32(v, i) // the element a sort would put at i, without the sort
}
