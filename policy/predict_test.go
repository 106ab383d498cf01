package policy

import (
	"math"
	"runtime"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

var t0 = time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)

// fin is a finished job of user u that ran run seconds under limit seconds.
func fin(id int64, u, name string, gpus int, limit, run int) Job {
	j := Job{ID: id, User: u, Name: name, GPUs: gpus, ArrayTask: -1, State: StateCompleted,
		TimeLimit: time.Duration(limit) * time.Second}
	j.Submit = t0.Add(time.Duration(id) * time.Minute)
	j.Start = j.Submit
	j.End = j.Start.Add(time.Duration(run) * time.Second)
	return j
}

// replay observes history in order, then predicts next.
func replay(t *testing.T, p Predictor, history []Job, next Job) Prediction {
	t.Helper()
	for i := range history {
		p.Observe(&history[i])
	}
	next.Start, next.End, next.State = time.Time{}, time.Time{}, StatePending
	return p.Predict(&next)
}

func TestBaselines_Predict(t *testing.T) {
	tests := []struct {
		name    string
		pred    string
		history []Job
		next    Job
		want    Prediction
	}{
		{"limit", "limit", nil, fin(1, "a", "", 0, 3600, 0), Prediction{Run: time.Hour, Source: "limit"}},
		{"limit without one", "limit", nil, fin(1, "a", "", 0, 0, 0), Prediction{Source: "none"}},
		{"tsafrir first job is its limit", "tsafrir", []Job{fin(1, "b", "", 0, 100, 50)}, fin(2, "a", "", 0, 900, 0),
			Prediction{Run: 900 * time.Second, Source: "limit"}},
		{"tsafrir one job is not enough", "tsafrir", []Job{fin(1, "a", "", 0, 100, 50)}, fin(2, "a", "", 0, 900, 0),
			Prediction{Run: 900 * time.Second, Source: "limit"}},
		{"tsafrir mean of last two", "tsafrir", []Job{fin(1, "a", "", 0, 1000, 999), fin(2, "a", "", 0, 1000, 100), fin(3, "a", "", 0, 1000, 300)},
			fin(4, "a", "", 0, 900, 0), Prediction{Run: 200 * time.Second, Source: "user-last-mean"}},
		{"tsafrir capped at the limit", "tsafrir", []Job{fin(1, "a", "", 0, 1000, 500), fin(2, "a", "", 0, 1000, 700)},
			fin(3, "a", "", 0, 60, 0), Prediction{Run: 60 * time.Second, Source: "user-last-mean"}},
		{"tsafrir no limits: global mean", "tsafrir", []Job{fin(1, "b", "", 0, 0, 100), fin(2, "b", "", 0, 0, 300)},
			fin(3, "a", "", 0, 0, 0), Prediction{Run: 200 * time.Second, Source: "global-mean"}},
		{"alea first job is its request", "alea", nil, fin(1, "a", "", 0, 500, 0), Prediction{Run: 500 * time.Second, Source: "limit"}},
		{"alea max ratio of last five", "alea", []Job{
			fin(1, "a", "", 0, 100, 90), // 0.9, pushed out by the five after it
			fin(2, "a", "", 0, 100, 10), fin(3, "a", "", 0, 100, 50), fin(4, "a", "", 0, 200, 20),
			fin(5, "a", "", 0, 100, 30), fin(6, "a", "", 0, 100, 40),
		}, fin(7, "a", "", 0, 1000, 0), Prediction{Run: 500 * time.Second, Source: "user-max-ratio"}},
		{"alea as published may exceed the request", "alea", []Job{fin(1, "a", "", 0, 100, 150)},
			fin(2, "a", "", 0, 100, 0), Prediction{Run: 150 * time.Second, Source: "user-max-ratio"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := NewPredictor(tt.pred, PredictorParams{})
			if err != nil {
				t.Fatal(err)
			}
			got := replay(t, p, tt.history, tt.next)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Predict (-want +got):\n%s", diff)
			}
		})
	}
}

func TestHelios_Chain(t *testing.T) {
	history := []Job{
		fin(1, "a", "train_bert_large", 8, 0, 1000),
		fin(2, "a", "train_bert_large", 8, 0, 2000),
		fin(3, "a", "train_bert_large", 4, 0, 600),
		fin(4, "b", "resnet50", 1, 0, 90),
		fin(5, "b", "resnet50", 1, 0, 110),
		fin(6, "c", "eval_model", 1, 0, 40),
	}
	tests := []struct {
		name string
		next Job
		want Prediction
	}{
		{"exact name, same GPU count", fin(10, "a", "train_bert_large", 8, 0, 0), Prediction{Run: 1500 * time.Second, Source: "user-name-exact"}},
		{"exact name, no job of that GPU count", fin(10, "a", "train_bert_large", 2, 0, 0), Prediction{Run: 1200 * time.Second, Source: "user-name-exact"}},
		{"exact name of another user", fin(10, "d", "resnet50", 1, 0, 0), Prediction{Run: 100 * time.Second, Source: "name-exact"}},
		{"similar name of the user", fin(10, "a", "train_bert_base", 8, 0, 0), Prediction{Run: 1500 * time.Second, Source: "user-name-similar"}},
		{"similar name of others", fin(10, "c", "resnet101", 1, 0, 0), Prediction{Run: 100 * time.Second, Source: "name-similar"}},
		{"no similar name: user mean", fin(10, "b", "zzz", 1, 0, 0), Prediction{Run: 100 * time.Second, Source: "user-mean"}},
		{"new user, no similar name: global mean", fin(10, "e", "zzz", 1, 0, 0), Prediction{Run: 640 * time.Second, Source: "global-mean"}},
		{"capped at the limit", fin(10, "a", "train_bert_large", 8, 60, 0), Prediction{Run: 60 * time.Second, Source: "user-name-exact"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := NewHeliosPredictor(HeliosParams{})
			if err != nil {
				t.Fatal(err)
			}
			got := replay(t, p, history, tt.next)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Predict (-want +got):\n%s", diff)
			}
		})
	}
}

// TestNameMatcher_Ratio checks the similarity against values printed by
// CPython's difflib.SequenceMatcher(None, a, b).ratio().
func TestNameMatcher_Ratio(t *testing.T) {
	tests := []struct {
		a, b string
		want float64
	}{
		{"apple", "appel", 0.8},
		{"abcd", "bcde", 0.75},
		{"307", "3070", 0.8571428571428571},
		{"resnet101", "resnet50", 0.8235294117647058},
		{"train_bert_large", "train_bert_base", 0.8387096774193549},
		{"", "", 1.0},
		{"abc", "", 0.0},
		{"vgg16", "vgg19", 0.8},
		{"aaaabbb", "ababab", 0.6153846153846154},
	}
	for _, tt := range tests {
		t.Run(tt.a+"/"+tt.b, func(t *testing.T) {
			got := newNameMatcher(tt.b).ratio([]rune(tt.a))
			if math.Abs(got-tt.want) > 1e-12 {
				t.Errorf("ratio(%q, %q) = %v, want %v", tt.a, tt.b, got, tt.want)
			}
		})
	}
}

// TestHelios_CloseMatches checks the choice and order of similar names
// against CPython's difflib.get_close_matches("307", [...], n=2, cutoff=0.6),
// which gives ['3070', '1307']: equal scores, greater name first.
func TestHelios_CloseMatches(t *testing.T) {
	p, err := NewHeliosPredictor(HeliosParams{})
	if err != nil {
		t.Fatal(err)
	}
	h := p.(*heliosPredictor)
	for i, n := range []string{"3070", "370", "30", "703", "1307", "x"} {
		j := fin(int64(i), "u", n, 1, 0, 10)
		h.Observe(&j)
	}
	var got []string
	for _, m := range h.closeMatches("307") {
		got = append(got, m.name)
	}
	if diff := cmp.Diff([]string{"3070", "1307"}, got); diff != "" {
		t.Errorf("closeMatches (-want +got):\n%s", diff)
	}
	// The cached lists kept by Observe agree with a fresh search.
	for _, n := range h.names {
		if diff := cmp.Diff(h.closeMatches(n.s), h.close[n.s], cmp.AllowUnexported(closeMatch{})); diff != "" {
			t.Errorf("cached matches of %q (-fresh +cached):\n%s", n.s, diff)
		}
	}
}

func TestNewPredictor_BadParams(t *testing.T) {
	tests := []struct {
		name string
		p    PredictorParams
		pred string
	}{
		{"unknown", PredictorParams{}, "oracle"},
		{"tsafrir window", PredictorParams{Tsafrir: TsafrirParams{Window: -1}}, "tsafrir"},
		{"alea window", PredictorParams{Alea: AleaParams{Window: -2}}, "alea"},
		{"helios cutoff", PredictorParams{Helios: HeliosParams{Cutoff: 1.5}}, "helios"},
		{"fairway rate", PredictorParams{Fairway: FairwayParams{Rate: 2}}, "fairway"},
		{"fairway depth", PredictorParams{Fairway: FairwayParams{Depth: 40}}, "fairway"},
		{"fairway window", PredictorParams{Fairway: FairwayParams{Window: -1}}, "fairway"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := NewPredictor(tt.pred, tt.p); err == nil {
				t.Errorf("NewPredictor(%q, %+v): want error, got nil", tt.pred, tt.p)
			}
		})
	}
}

func TestPredictorNames(t *testing.T) {
	want := []string{"limit", "tsafrir", "alea", "helios", "fairway"}
	if diff := cmp.Diff(want, PredictorNames()); diff != "" {
		t.Errorf("PredictorNames (-want +got):\n%s", diff)
	}
	for _, n := range want {
		p, err := NewPredictor(n, PredictorParams{})
		if err != nil {
			t.Fatal(err)
		}
		if p.Name() != n {
			t.Errorf("NewPredictor(%q).Name() = %q", n, p.Name())
		}
	}
}

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
	cfg := gbtConfig{Trees: 60, Depth: 3, Rate: 0.3, MinLeaf: 20, Subsample: 0.5}
	tr := gbtTrainer{cfg: cfg}
	m := tr.train(x, y, 2)
	got := []float32{m.predict([]float32{0.2, 0.5}), m.predict([]float32{0.8, 0.5})}
	for i, want := range []float32{0, 10} {
		if math.Abs(float64(got[i]-want)) > 0.5 {
			t.Errorf("predict at x0=%v = %v, want %v±0.5", []float32{0.2, 0.8}[i], got[i], want)
		}
	}
	tr2 := gbtTrainer{cfg: cfg}
	m2 := tr2.train(x, y, 2)
	if diff := cmp.Diff(m, m2, cmp.AllowUnexported(gbtModel{}, gbtNode{})); diff != "" {
		t.Errorf("training twice gave different models (-first +second):\n%s", diff)
	}
}

func TestMedian5(t *testing.T) {
	tests := []struct {
		in   []float32
		want float32
	}{{[]float32{3}, 3}, {[]float32{5, 1}, 1}, {[]float32{5, 1, 3}, 3}, {[]float32{9, 2, 7, 4, 1}, 4}}
	for _, tt := range tests {
		if got := median5(tt.in); got != tt.want {
			t.Errorf("median5(%v) = %v, want %v", tt.in, got, tt.want)
		}
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
// trees, order keys, walked gbtLanes at a time, the rest one by one) against
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
	for _, trees := range []int{gbtLanes - 3, 2*gbtLanes + 5} {
		tr := gbtTrainer{cfg: gbtConfig{Trees: trees, Depth: 4, Rate: 0.3, MinLeaf: 20, Subsample: 0.5}}
		m := tr.train(x, y, nf)
		for i := 0; i < n; i++ {
			row := x[i*nf : (i+1)*nf]
			want := m.base
			for _, tree := range m.trees {
				want += leafValue(tree, row)
			}
			if got := m.predict(row); math.Float32bits(got) != math.Float32bits(want) {
				t.Fatalf("trees=%d, row %d: predict %v, walking the trees %v", trees, i, got, want)
			}
		}
	}
}

// TestGBT_TrainSameOnAnyCores checks that training shared among cores
// (gbtParallel) gives the model serial training gives, to the bit, and that
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
	sameTrees := func(a, b *gbtModel) bool {
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
	for _, weighted := range []bool{false, true} {
		cfg := gbtConfig{Trees: 12, Depth: 5, Rate: 0.2, MinLeaf: 20, Subsample: 0.5, ScaleWeighted: weighted}
		procs := runtime.GOMAXPROCS(1)
		serial := (&gbtTrainer{cfg: cfg}).train(x, y, nf)
		runtime.GOMAXPROCS(4)
		reused := &gbtTrainer{cfg: cfg}
		reused.train(x[:n/2*nf], y[:n/2], nf)
		parallel := reused.train(x, y, nf)
		runtime.GOMAXPROCS(procs)
		if len(serial.trees) != cfg.Trees || len(serial.trees[0]) < 7 {
			t.Fatalf("weighted=%v: %d trees, the first of %d nodes: want %d full trees", weighted, len(serial.trees), len(serial.trees[0]), cfg.Trees)
		}
		if !sameTrees(serial, parallel) {
			t.Errorf("weighted=%v: trained on 4 cores after another training, the model differs from serial training", weighted)
		}
	}
}

// TestQuantile32_MatchesSort checks that quantile32's selection returns
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
				got := quantile32(slices.Clone(v), q)
				if math.Float32bits(got) != math.Float32bits(want) {
					t.Errorf("n=%d nan=%v q=%v: quantile32 %v, sorted %v", n, nan, q, got, want)
				}
			}
		}
	}
}

func TestHourWeekday_MatchesTime(t *testing.T) {
	for _, sec := range []int64{0, -1, -86400, -86401, 1, 3599, 3600, 86399, 86400, 820454400, 1735689599, 1798761600, -2208988800} {
		tm := time.Unix(sec, 0).UTC()
		h, wd := hourWeekday(sec)
		if h != float32(tm.Hour()) || wd != float32(tm.Weekday()) {
			t.Errorf("hourWeekday(%d) = %v, %v; time says %d, %d", sec, h, wd, tm.Hour(), tm.Weekday())
		}
	}
}

// TestBinOf_MatchesSearch checks binOf against sort.Search, as buildBins
// used it: the first cut v is at most, the last bin above every cut or for
// NaN.
func TestBinOf_MatchesSearch(t *testing.T) {
	for n := 1; n <= 70; n++ {
		cuts := make([]float32, n)
		for i := range cuts {
			cuts[i] = float32(i*3) - 20
		}
		for v := float32(-25); v <= float32(3*n-15); v += 0.5 {
			want := min(sort.Search(n, func(k int) bool { return v <= cuts[k] }), n-1)
			if got := binOf(cuts, v); got != want {
				t.Fatalf("%d cuts, v=%v: binOf %d, sort.Search %d", n, v, got, want)
			}
		}
		if got := binOf(cuts, float32(math.NaN())); got != n-1 {
			t.Errorf("%d cuts, NaN: bin %d, want the last", n, got)
		}
	}
}
