package gbt

import (
	"math"
	"runtime"
	"slices"
	"sort"
	"testing"

	"github.com/google/go-cmp/cmp"
)

import ()

// TestGBT_LearnsConditionalMedian fits y = 10·[x0 > 0.5] + noise, where the
// noise is skewed (mostly 0, sometimes +100): least absolute deviation must
// find the medians (0 and 10), not the means, and train deterministically.
func TestGBT_LearnsConditionalMedian(t *testing.T) {
	const n = 4000
	x := make([]float32, 0, 2*n)
	y := make([]float32, 0, n)
	for i := 0; i < n; i++ {
		x0 := float32(i%100) / 100
		x1 := float32((i*37)%101) / 101 // irrelevant
		v := float32(0)
		if x0 > 0.5 {
			v = 10
		}
		if i%5 == 0 {
			v += 100
		}
		x = append(x, x0, x1)
		y = append(y, v)
	}
	cfg := Config{Trees: 60, Depth: 3, Rate: 0.3, MinLeaf: 20, Subsample: 0.5}
	tr := Trainer{Config: cfg}
	m := tr.Train(x, y, 2)
	got := []float32{m.Predict([]float32{0.2, 0.5}), m.Predict([]float32{0.8, 0.5})}
	for i, want := range []float32{0, 10} {
		if math.Abs(float64(got[i]-want)) > 0.5 {
			t.Errorf("predict at x0=%v = %v, want %v±0.5", []float32{0.2, 0.8}[i], got[i], want)
		}
	}
	tr2 := Trainer{Config: cfg}
	m2 := tr2.Train(x, y, 2)
	if diff := cmp.Diff(m, m2, cmp.AllowUnexported(Model{}, gbtNode{})); diff != "" {
		t.Errorf("training twice gave different models (-first +second):\n%s", diff)
	}
}

// TestGBTOrderKey checks that integer compares of order keys are float
// compares, which the trees rely on: on special values and on random bit
// patterns, gbtOrderKey(a) > gbtOrderKey(b) exactly when a > b, NaN never above.
func TestGBTOrderKey(t *testing.T) {
	vals := []float32{0, float32(math.Copysign(0, -1)), 1, -1, 0.5, -0.5, math.SmallestNonzeroFloat32, -math.SmallestNonzeroFloat32,
		math.MaxFloat32, -math.MaxFloat32, float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN()), -1e-30, 1e-30, 3600, 35100}
	s := uint64(1)
	for range 2000 {
		s = s*6364136223846793005 + 1442695040888963407
		vals = append(vals, math.Float32frombits(uint32(s>>32)))
	}
	for _, a := range vals {
		for _, b := range vals {
			if b != b { // thresholds are never NaN
				continue
			}
			if got, want := gbtOrderKey(a) > gbtOrderKey(b), a > b; got != want {
				t.Fatalf("gbtOrderKey(%v) > gbtOrderKey(%v) = %v, want %v", a, b, got, want)
			}
		}
	}
}

// TestGBT_PredictMatchesTrees checks the laid-out prediction (complete
// trees, order keys, walked Lanes at a time, the rest one by one) against
// a plain walk of the trained trees, to the bit.
func TestGBT_PredictMatchesTrees(t *testing.T) {
	const n, nf = 3000, 5
	x := make([]float32, 0, n*nf)
	y := make([]float32, 0, n)
	s := uint64(7)
	rnd := func() float32 {
		s = s*6364136223846793005 + 1442695040888963407
		return float32(s>>40)/float32(1<<24) - 0.25 // some negative values
	}
	for i := 0; i < n; i++ {
		row := []float32{rnd(), rnd() * 100, -1, rnd(), float32(i % 7)}
		if i%3 == 0 {
			row[2] = rnd()
		}
		x = append(x, row...)
		y = append(y, row[0]*10+row[4]+rnd())
	}
	for _, trees := range []int{Lanes - 3, 2*Lanes + 5} {
		tr := Trainer{Config: Config{Trees: trees, Depth: 4, Rate: 0.3, MinLeaf: 20, Subsample: 0.5}}
		m := tr.Train(x, y, nf)
		for i := 0; i < n; i++ {
			row := x[i*nf : (i+1)*nf]
			want := m.base
			for _, tree := range m.trees {
				want += leafValue(tree, row)
			}
			if got := m.Predict(row); math.Float32bits(got) != math.Float32bits(want) {
				t.Fatalf("trees=%d, row %d: predict %v, walking the trees %v", trees, i, got, want)
			}
		}
	}
}

// TestGBT_TrainSameOnAnyCores checks that training shared among cores
// (Parallel) gives the model serial training gives, to the bit, and that
// a trainer reused for a retraining gives a fresh trainer's model.
func TestGBT_TrainSameOnAnyCores(t *testing.T) {
	const n, nf = 20000, 9 // enough rows for every step to go parallel
	x := make([]float32, 0, n*nf)
	y := make([]float32, 0, n)
	s := uint64(11)
	rnd := func() float32 {
		s = s*6364136223846793005 + 1442695040888963407
		return float32(s>>40) / float32(1<<24)
	}
	for i := 0; i < n; i++ {
		for f := 0; f < nf; f++ {
			x = append(x, rnd()*float32(f+1))
		}
		x[i*nf+2] = float32(i % 5) // few distinct values
		y = append(y, x[i*nf]*3+x[i*nf+2]+rnd())
	}
	sameTrees := func(a, b *Model) bool {
		if math.Float32bits(a.base) != math.Float32bits(b.base) || len(a.trees) != len(b.trees) {
			return false
		}
		for k := range a.trees {
			if len(a.trees[k]) != len(b.trees[k]) {
				return false
			}
			for i, na := range a.trees[k] {
				nb := b.trees[k][i]
				if na.feature != nb.feature || na.left != nb.left || na.right != nb.right ||
					math.Float32bits(na.threshold) != math.Float32bits(nb.threshold) ||
					math.Float32bits(na.value) != math.Float32bits(nb.value) {
					return false
				}
			}
		}
		return true
	}
	cfg := Config{Trees: 12, Depth: 5, Rate: 0.2, MinLeaf: 20, Subsample: 0.5}
	procs := runtime.GOMAXPROCS(1)
	serial := (&Trainer{Config: cfg}).Train(x, y, nf)
	runtime.GOMAXPROCS(4)
	reused := &Trainer{Config: cfg}
	reused.Train(x[:n/2*nf], y[:n/2], nf)
	parallel := reused.Train(x, y, nf)
	runtime.GOMAXPROCS(procs)
	if len(serial.trees) != cfg.Trees || len(serial.trees[0]) < 7 {
		t.Fatalf("%d trees, the first of %d nodes: want %d full trees", len(serial.trees), len(serial.trees[0]), cfg.Trees)
	}
	if !sameTrees(serial, parallel) {
		t.Errorf("trained on 4 cores after another training, the model differs from serial training")
	}
}

// TestQuantile32_MatchesSort checks that Quantile32's selection returns
// the element a sort puts at the nearest rank, on inputs with repeats,
// negative values and NaNs.
func TestQuantile32_MatchesSort(t *testing.T) {
	s := uint64(3)
	rnd := func() float32 {
		s = s*6364136223846793005 + 1442695040888963407
		return float32(int64(s>>40)%41-20) / 4
	}
	for _, n := range []int{1, 2, 3, 10, 101, 3000} {
		for _, nan := range []bool{false, true} {
			v := make([]float32, n)
			for i := range v {
				v[i] = rnd()
			}
			if nan {
				v[n/2] = float32(math.NaN())
			}
			for _, q := range []float64{0, 0.1, 0.5, 0.9, 1} {
				sorted := slices.Clone(v)
				slices.Sort(sorted)
				want := sorted[max(min(int(math.Ceil(q*float64(n)))-1, n-1), 0)]
				got := Quantile32(slices.Clone(v), q)
				if math.Float32bits(got) != math.Float32bits(want) {
					t.Errorf("n=%d nan=%v q=%v: Quantile32 %v, sorted %v", n, nan, q, got, want)
				}
			}
		}
	}
}

// leafValue walks tree on the raw features x, against the thresholds: the
// reference that the binned walk (leafValueBinned) and Model.Predict must
// agree with.
func leafValue(tree []gbtNode, x []float32) float32 {
	i := int32(0)
	for {
		n := &tree[i]
		if n.feature < 0 {
			return n.value
		}
		if x[n.feature] <= n.threshold {
			i = n.left
		} else {
			i = n.right
		}
	}
}

// TestBinOf64_MatchesSearch checks the branch-free search on padded order
// keys against sort.Search, as buildBins used it (the first cut v is at
// most, the last bin for a value above every cut or NaN), on cut lists of
// every length buildBins makes, with values at, between and beyond the
// cuts, signed zeros, infinities and NaN.
func TestBinOf64_MatchesSearch(t *testing.T) {
	inf := float32(math.Inf(1))
	for n := 1; n <= gbtBins; n++ {
		for _, last := range []float32{0, inf} {
			cuts := make([]float32, n)
			for i := range cuts {
				cuts[i] = float32(i*3) - 20
			}
			if last == inf {
				cuts[n-1] = inf // a feature whose largest sampled value is +Inf
			}
			var padded [gbtBins]int32
			for b := range padded {
				padded[b] = gbtOrderKey(inf)
				if b < n {
					padded[b] = gbtOrderKey(cuts[b])
				}
			}
			vals := []float32{float32(math.Copysign(0, -1)), 0, -inf, inf, float32(math.NaN()), -math.MaxFloat32, math.MaxFloat32}
			for v := float32(-25); v <= float32(3*n-15); v += 0.5 {
				vals = append(vals, v)
			}
			for _, v := range vals {
				want := min(sort.Search(n, func(k int) bool { return v <= cuts[k] }), n-1)
				if got := min(binOf64(&padded, v), n-1); got != want {
					t.Fatalf("%d cuts (last %v), v=%v: binOf64 %d, sort.Search %d", n, cuts[n-1], v, got, want)
				}
				// binOf64x4 with v in each lane, the other lanes searching
				// other values among the same cuts.
				for lane := range 4 {
					vs := [4]float32{v + 1, v - 0.5, -v, 2 * v}
					vs[lane] = v
					var got [4]int
					got[0], got[1], got[2], got[3] = binOf64x4(&[4][gbtBins]int32{padded, padded, padded, padded}, &vs)
					for k, g := range got {
						if g != binOf64(&padded, vs[k]) {
							t.Fatalf("%d cuts, values %v: binOf64x4 lane %d gives %d, binOf64 %d", n, vs, k, g, binOf64(&padded, vs[k]))
						}
					}
				}
			}
		}
	}
}

// TestHistAdd_MatchesCompare checks the branch-free sign against the float
// compares countHistogram made: +1 above zero, -1 below, 0 for ±0 and NaN,
// in bit 32 up, over a count of 1.
func TestHistAdd_MatchesCompare(t *testing.T) {
	inf := float32(math.Inf(1))
	vals := []float32{0, float32(math.Copysign(0, -1)), float32(math.NaN()), -float32(math.NaN()), inf, -inf,
		math.SmallestNonzeroFloat32, -math.SmallestNonzeroFloat32, math.MaxFloat32, -math.MaxFloat32, 1, -1, 0.25, -3e7}
	for _, v := range vals {
		want := int64(1)
		switch {
		case v > 0:
			want += 1 << 32
		case v < 0:
			want -= 1 << 32
		}
		if got := histAdd(v); got != want {
			t.Errorf("histAdd(%v) = %#x, want %#x", v, got, want)
		}
	}
}

// TestGBT_LeafZeroIsPositive checks that a leaf whose median residual is
// zero gets +0 whatever the signs of the zeros, so that the order
// growTree's partition leaves rows in cannot show in the model.
func TestGBT_LeafZeroIsPositive(t *testing.T) {
	negZero := float32(math.Copysign(0, -1))
	tr := &Trainer{Config: Config{Rate: 0.5}, resid: []float32{negZero, negZero, 0, negZero, 1}}
	for _, rows := range [][]int32{{0}, {0, 1, 3}, {0, 2, 1}, {2, 0, 3, 1, 4}} {
		if got := tr.leaf(rows); math.Float32bits(got) != 0 {
			t.Errorf("rows %v: leaf %v (bits %#x), want +0", rows, got, math.Float32bits(got))
		}
	}
}

// TestGBT_FittedMatchesPredict checks that the values training reached for
// its rows are what the model predicts for them, to the bit (the fairway
// predictor takes its training residuals from them), also after the
// trainer was reused, and that Fitted gives nothing when a feature is NaN,
// which training and Predict send different ways.
func TestGBT_FittedMatchesPredict(t *testing.T) {
	const nf = 6
	s := uint64(5)
	rnd := func() float32 {
		s = s*6364136223846793005 + 1442695040888963407
		return float32(s>>40) / float32(1<<24)
	}
	data := func(n int) (x, y []float32) {
		for i := 0; i < n; i++ {
			for f := 0; f < nf; f++ {
				v := rnd() * float32(f+1)
				if f == 2 {
					v = float32(i % 3) // few distinct values: rows on the cuts
				}
				x = append(x, v)
			}
			y = append(y, x[i*nf]*2+x[i*nf+2]+rnd())
		}
		return x, y
	}
	tr := &Trainer{Config: Config{Trees: 23, Depth: 4, Rate: 0.3, MinLeaf: 10, Subsample: 0.5}}
	for _, n := range []int{3000, 800} {
		x, y := data(n)
		m := tr.Train(x, y, nf)
		fitted := tr.Fitted()
		if len(fitted) != n {
			t.Fatalf("n=%d: %d fitted values", n, len(fitted))
		}
		for i := range n {
			if want := m.Predict(x[i*nf : (i+1)*nf]); math.Float32bits(fitted[i]) != math.Float32bits(want) {
				t.Fatalf("n=%d, row %d: fitted %v, Predict %v", n, i, fitted[i], want)
			}
		}
		x[nf+1] = float32(math.NaN())
		tr.Train(x, y, nf)
		if got := tr.Fitted(); got != nil {
			t.Errorf("n=%d, a NaN feature: %d fitted values, want none", n, len(got))
		}
	}
}

// TestSortFloats_MatchesSort checks the radix sort against slices.Sort to
// the bit, on values of every sign and size, repeats, infinities and
// subnormals, on lengths around the passes' edge cases, and with a NaN
// (left to slices.Sort); with both zeros, equal as values.
func TestSortFloats_MatchesSort(t *testing.T) {
	s := uint64(9)
	rnd := func() uint64 {
		s = s*6364136223846793005 + 1442695040888963407
		return s >> 11
	}
	inf := float32(math.Inf(1))
	special := []float32{inf, -inf, math.SmallestNonzeroFloat32, -math.SmallestNonzeroFloat32, math.MaxFloat32, -math.MaxFloat32, 1, -1}
	for _, n := range []int{1, 2, 3, 255, 256, 4287} {
		for _, kind := range []string{"mixed", "few", "positive", "nan", "zeros"} {
			v := make([]float32, n)
			for i := range v {
				switch r := rnd(); kind {
				case "few":
					v[i] = float32(r%4) - 1
				case "positive":
					v[i] = float32(r%1000) / 7
				default:
					v[i] = math.Float32frombits(uint32(r))
					if v[i] != v[i] || r%5 == 0 {
						v[i] = special[r%uint64(len(special))]
					}
				}
			}
			switch kind {
			case "nan":
				v[n/2] = float32(math.NaN())
			case "zeros":
				v[0] = float32(math.Copysign(0, -1))
				v[n-1] = 0
			}
			want := slices.Clone(v)
			slices.Sort(want)
			got := slices.Clone(v)
			sortFloats(got, make([]uint32, 2*n))
			for i := range got {
				same := math.Float32bits(got[i]) == math.Float32bits(want[i])
				if kind == "zeros" {
					same = got[i] == want[i]
				}
				if kind == "nan" && want[i] != want[i] {
					same = got[i] != got[i]
				}
				if !same {
					t.Fatalf("n=%d %s: at %d sortFloats %v, slices.Sort %v", n, kind, i, got[i], want[i])
				}
			}
		}
	}
}

// TestGBT_LeafMatchesSelect checks the radix selection of leaf against
// median32, Hoare's selection, to the bit (zeros aside, which leaf takes
// as +0): residuals of every sign, repeats, few distinct values, one
// value, and a NaN (left to median32).
func TestGBT_LeafMatchesSelect(t *testing.T) {
	s := uint64(13)
	rnd := func() uint64 {
		s = s*6364136223846793005 + 1442695040888963407
		return s >> 11
	}
	for _, n := range []int{1, 2, 3, 4, 5, 40, 257, 1000, 15001} {
		for _, kind := range []string{"wide", "few", "same", "signs", "nan"} {
			resid := make([]float32, n)
			for i := range resid {
				switch r := rnd(); kind {
				case "wide":
					resid[i] = math.Float32frombits(uint32(r))
					if resid[i] != resid[i] {
						resid[i] = float32(r%100) - 50
					}
				case "few":
					resid[i] = float32(r%3) - 1
				case "same":
					resid[i] = 0.375
				default:
					resid[i] = (float32(r%2001) - 1000) / 64
				}
			}
			if kind == "nan" {
				resid[n/2] = float32(math.NaN())
			}
			rows := make([]int32, n)
			for i := range rows {
				rows[i] = int32(n - 1 - i)
			}
			tr := &Trainer{Config: Config{Rate: 0.5}, resid: resid}
			gathered := make([]float32, n)
			for i, r := range rows {
				gathered[i] = resid[r]
			}
			want := float32(0.5) * median32(gathered)
			if want == 0 {
				want = 0
			}
			got := tr.leaf(rows)
			if math.Float32bits(got) != math.Float32bits(want) && !(got != got && want != want) {
				t.Fatalf("n=%d %s: leaf %v, 0.5 x median32 %v", n, kind, got, want)
			}
		}
	}
}

// TestHistBin_Split checks that a bin packed as countHistogram counts
// (histAdd per row) unpacks to its sign sum and count, also after a
// sibling's bin is subtracted from its parent's.
func TestHistBin_Split(t *testing.T) {
	signs := []float32{1, -1, -1, 0, -2, 3, -0.5, -1, 0, 1}
	for cut := range len(signs) + 1 {
		var parent, small histBin
		var wantG, wantN int32
		for i, v := range signs {
			parent += histBin(histAdd(v))
			if i < cut {
				small += histBin(histAdd(v))
				continue
			}
			wantN++
			switch {
			case v > 0:
				wantG++
			case v < 0:
				wantG--
			}
		}
		if g, n := (parent - small).split(); g != wantG || n != wantN {
			t.Errorf("rows %d..: sign sum %d, count %d; want %d, %d", cut, g, n, wantG, wantN)
		}
	}
}
