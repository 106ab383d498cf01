package power

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestEnvelope_HandChecked(t *testing.T) {
	// The forecast issued at step i is read at its leads; here it is the
	// same for every step: 1 step ahead 4, 2 steps ahead 7.
	fc := func(int) []float64 { return []float64{4, 7} }
	for _, tc := range []struct {
		name   string
		e      Envelope
		active []int
		wantOn []int
	}{
		// Horizon 1: max(active, 4) + 1.
		{"one step ahead", Envelope{Buffer: 1, Horizon: 1}, []int{2, 6, 3}, []int{5, 7, 5}},
		// Horizon 2 sees the 7: 8 powered whatever the demand below it.
		{"two steps ahead", Envelope{Buffer: 1, Horizon: 2}, []int{2, 6, 3}, []int{8, 8, 8}},
		// Margin 0.5 on lead 1: 4.5 needs 5 nodes.
		{"margin rounds up", Envelope{Buffer: 0, Horizon: 1, Margin: []float64{0.5}}, []int{2, 2}, []int{5, 5}},
		// Hold 1 keeps the previous step's 6 through step 2; capped at 10.
		{"hold looks back", Envelope{Buffer: 0, Hold: 1}, []int{2, 6, 3, 3, 10}, []int{2, 6, 6, 3, 10}},
		{"capped at the cluster", Envelope{Buffer: 5, Horizon: 2}, []int{2, 9}, []int{10, 10}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := tc.e
			e.Forecast = fc
			if diff := cmp.Diff(tc.wantOn, plan(&e, series(tc.active...))); diff != "" {
				t.Errorf("powered (-want +got)\n%s", diff)
			}
		})
	}
}

// TestEnvelope_HoldIsIdleTime: on step maxima (the simulator's), with no
// forecast and no buffer, holding the last s−1 steps is the idle-time
// rule at SuspendTime s steps, once its all-on start has passed; which is
// why the family has no envelope without a horizon.
func TestEnvelope_HoldIsIdleTime(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for trial := range 50 {
		active := make([]int, 200)
		for i := range active {
			active[i] = r.IntN(11)
		}
		s := series(active...)
		for suspend := 1; suspend <= 6; suspend++ {
			idle := plan(&IdleTime{SuspendTime: time.Duration(suspend) * 10 * time.Minute}, s)
			env := plan(&Envelope{Hold: suspend - 1}, s)
			for i := suspend; i < len(active); i++ {
				if idle[i] != env[i] {
					t.Fatalf("trial %d, suspend %d steps, step %d: idle-time %d, envelope %d", trial, suspend, i, idle[i], env[i])
				}
			}
		}
	}
}

// TestPredictive_Switches: each condition switched off lets a power-down
// through that the artifact's rule holds back.
func TestPredictive_Switches(t *testing.T) {
	highThenLow := func(i int) []float64 {
		if i <= 1 {
			return constant(100)(i)
		}
		return constant(0)(i)
	}
	spike := func(int) []float64 { return []float64{100, 0, 0, 0, 0, 0, 0, 0} }
	for _, tc := range []struct {
		name     string
		active   []int
		forecast func(int) []float64
		p        Predictive
		wantOn   []int
	}{
		// The forecast holds step 1 up (above demand); at step 2 it is low
		// but demand is flat, no fall, so the artifact still holds 9;
		// without the falling test it goes to 5.
		{"artifact: no fall, no change", []int{8, 4, 4}, highThenLow, Predictive{}, []int{9, 9, 9}},
		{"without falling", []int{8, 4, 4}, highThenLow, Predictive{AnyHistory: true}, []int{9, 9, 5}},
		// A forecast above demand next step (and falling after, so not
		// rising) holds the artifact; without the below test it powers down.
		{"artifact: forecast above holds", []int{8, 6, 4}, spike, Predictive{}, []int{9, 9, 9}},
		{"without below", []int{8, 6, 4}, spike, Predictive{AnyForecast: true}, []int{9, 7, 5}},
		// A rising forecast holds the artifact; without the trend test it
		// powers down.
		{"artifact: rising holds", []int{8, 6, 4}, func(int) []float64 { return []float64{0, 0, 9, 9, 9, 9, 9, 9} }, Predictive{}, []int{9, 9, 9}},
		{"without not rising", []int{8, 6, 4}, func(int) []float64 { return []float64{0, 0, 9, 9, 9, 9, 9, 9} }, Predictive{AnyTrend: true}, []int{9, 7, 5}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := tc.p
			p.Buffer, p.History, p.Future, p.WarmUp, p.Forecast = 1, 1, 2, 1, tc.forecast
			if diff := cmp.Diff(tc.wantOn, plan(&p, series(tc.active...))); diff != "" {
				t.Errorf("powered (-want +got)\n%s", diff)
			}
		})
	}
}

func TestScoreCurve(t *testing.T) {
	row := func(b int, off, lack float64) RuleRow {
		return RuleRow{Buffer: b, Metrics: Metrics{NodeHoursOff: off, LackNodeMinutes: lack}}
	}
	idle := []RuleRow{row(0, 100, 50), row(0, 90, 10)}
	curve := []RuleRow{row(0, 110, 40), row(5, 100, 20), row(10, 80, 5)}
	got := scoreCurve(curve, idle)
	// Against the first: buffer 0 (row 0) has less lack and +10 %;
	// against the second only buffer 10 (row 2) lacks less, at −11.1 %.
	if got.dominated != 1 || !cmp.Equal(got.witness, []int{0, 2}) || got.margin < 0.1-1/9.0-1e-9 || got.margin > 0.1-1/9.0+1e-9 {
		t.Errorf("got %+v, want 1 dominated, witnesses [0 2], margin %.4f", got, 0.1-1/9.0)
	}
	none := scoreCurve([]RuleRow{row(0, 200, 60)}, idle)
	if none.dominated != 0 || none.margin != -2 || !cmp.Equal(none.witness, []int{-1, -1}) {
		t.Errorf("got %+v, want nothing dominated, margin −2", none)
	}
}

// TestAnchored_ShiftsByTheIssueError: the anchored forecast is the plain
// one plus the model's error at the issue step, at every lead, and like
// it never reads a step after the issue.
func TestAnchored_ShiftsByTheIssueError(t *testing.T) {
	s := periodic(20)
	l, _ := LagsFor(s.Step)
	cfg := DefaultEvalConfig().GBT
	cfg.Trees = 20
	f, err := TrainGBT(s, 0, 15*144, l, cfg, GBTForecaster{Delta: true})
	if err != nil {
		t.Fatal(err)
	}
	now := 16 * 144
	s.Active[now] += 7 // the model cannot know: its error at the issue is about 7
	plain, anchored := make([]float64, 6), make([]float64, 6)
	f.Forecast(s, now, plain)
	Anchored{F: f}.Forecast(s, now, anchored)
	var row [NumFeatures]float32
	Features(s.Time(now), now, func(k int) float64 { return float64(s.Active[k]) }, l, row[:])
	r := float64(s.Active[now]) - f.predict(row[:])
	if r < 5 {
		t.Fatalf("error at the issue %.2f, want about 7", r)
	}
	for h := range plain {
		if want := max(plain[h]+r, 0); anchored[h] != want {
			t.Errorf("lead %d: anchored %.3f, want plain %.3f + error %.3f", h+1, anchored[h], plain[h], r)
		}
	}
	for k := now + 1; k < s.Len(); k++ {
		s.Active[k] = 0
	}
	after := make([]float64, 6)
	Anchored{F: f}.Forecast(s, now, after)
	if diff := cmp.Diff(anchored, after); diff != "" {
		t.Errorf("anchored forecast changed with the future (-before +after)\n%s", diff)
	}
}

// TestWriteBrief: the brief table keeps, of the predictive rows, the
// artifact's test rows and each idle-time setting's pick (validation and
// test), and every idle-time and reference row.
func TestWriteBrief(t *testing.T) {
	row := func(name, kind string) RuleRow { return RuleRow{Metrics: Metrics{Rule: name}, Kind: kind} }
	pick := row("hybrid idle 25m, x, buffer 3", "predictive")
	r := &EvalResult{
		Validation: []RuleRow{row("artifact, buffer 0", "predictive"), row("hybrid idle 5m, x, buffer 0", "predictive"), pick, row("idle-time 30m", "idle-time")},
		Rules:      []RuleRow{pick, row("artifact, buffer 0", "predictive"), row("hybrid idle 5m, x, buffer 0", "predictive"), row("idle-time 30m", "idle-time"), row("always on", "reference")},
		Picks:      []Pick{{Idle: "idle-time 30m", Valid: pick, Test: pick, Holds: true}},
	}
	var b strings.Builder
	if err := r.WriteBrief(&b); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{"validation: hybrid idle 25m, x, buffer 3", "validation: idle-time 30m", " artifact, buffer 0", "ref: always on", "idle-time 30m: hybrid idle 25m, x, buffer 3"} {
		if !strings.Contains(out, want) {
			t.Errorf("brief table lacks %q:\n%s", want, out)
		}
	}
	if n := strings.Count(out, "hybrid idle 25m, x, buffer 3"); n != 3 {
		t.Errorf("the pick appears %d times, want 3 (validation row, test row, the pick line)", n)
	}
	for _, not := range []string{"hybrid idle 5m", "validation: artifact", "trend nowcast"} {
		if strings.Contains(out, not) {
			t.Errorf("brief table has %q:\n%s", not, out)
		}
	}
	// A pick with the trend nowcast: a line says how serve takes it.
	r.Picks[0].Setting = Setting{Hybrid: true, RampWindow: 2, RampAfter: 2, RampGain: 0.5, RampExpire: 5}
	b.Reset()
	if err := r.WriteBrief(&b); err != nil {
		t.Fatal(err)
	}
	if want := "the trend nowcast of the picks, as serve takes it: idle-time 30m: --power-nowcast gain=0.5,window=2m,after=2m,expire=5m\n"; !strings.HasSuffix(b.String(), want) {
		t.Errorf("brief table with a nowcast pick:\n%s\nwant it to end with %q", b.String(), want)
	}
}

// TestPickMargin: the pick's margin is the smaller of the relative
// node-hours-off gain and the relative lack cut, and negative for a row
// that does not dominate (equal lack is not less).
func TestPickMargin(t *testing.T) {
	idle := RuleRow{Metrics: Metrics{NodeHoursOff: 1000, LackNodeMinutes: 200}}
	for _, tc := range []struct {
		name      string
		off, lack float64
		want      float64
		dominates bool
	}{
		{"gains little off, cuts much lack: the gain", 1010, 100, 0.01, true},
		{"gains much off, cuts little lack: the cut", 1500, 198, 0.01, true},
		{"as many off, less lack: zero", 1000, 150, 0, true},
		{"equal lack does not dominate", 1100, 200, -1e-12, false},
		{"fewer off does not dominate", 990, 100, -0.01, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := RuleRow{Metrics: Metrics{NodeHoursOff: tc.off, LackNodeMinutes: tc.lack}}
			m, _, _ := pickMargin(p, idle)
			if math.Abs(m-tc.want) > 1e-9 || dominates(p, idle) != tc.dominates || (m >= 0) != tc.dominates {
				t.Errorf("margin %g (dominates %v), want %g (%v)", m, dominates(p, idle), tc.want, tc.dominates)
			}
		})
	}
}

// TestSetting_Nowcast: a hybrid setting's nowcast is what serve takes
// (--power-nowcast) and what its replay runs; other settings have none.
func TestSetting_Nowcast(t *testing.T) {
	st := Setting{Hybrid: true, Lookahead: 10, NoAhead: true, RampWindow: 2, RampAfter: 2, RampGain: 0.5, RampExpire: 5}
	want := Nowcast{Window: 2 * time.Minute, After: 2 * time.Minute, Expire: 5 * time.Minute, Gain: 0.5}
	if got := st.Nowcast(); got != want || got.Spec() != "gain=0.5,window=2m,after=2m,expire=5m" {
		t.Errorf("Nowcast = %+v (%s), want %+v", got, got.Spec(), want)
	}
	if got := st.HybridRule(time.Hour, 0, nil, nil).Nowcast(); got != want {
		t.Errorf("HybridRule's nowcast = %+v, want %+v", got, want)
	}
	for _, other := range []Setting{{Hybrid: true, Lookahead: 10}, {Envelope: true, Horizon: 3, RampWindow: 2, RampGain: 1}, ArtifactSetting(2, 30, 10)} {
		if nc := other.Nowcast(); nc.On() {
			t.Errorf("%s: nowcast %+v, want off", other, nc)
		}
	}
}

// TestWithQueue: on a sequence with a pending column the family gains a
// queue copy of each hybrid setting, and only of those (the other rules
// decide per step on the count, not on the queue), named apart.
func TestWithQueue(t *testing.T) {
	fam := DefaultFamily()
	got := withQueue(fam)
	hybrids := 0
	for _, st := range fam {
		if st.Hybrid {
			hybrids++
		}
	}
	if len(got) != len(fam)+hybrids {
		t.Fatalf("%d settings, want %d + %d hybrids", len(got), len(fam), hybrids)
	}
	names := map[string]bool{}
	for i, st := range got {
		if st.Queue != (i >= len(fam)) || (st.Queue && !st.Hybrid) {
			t.Errorf("setting %d %s: queue %v", i, st, st.Queue)
		}
		if names[st.String()] {
			t.Errorf("two settings named %s", st)
		}
		names[st.String()] = true
	}
	if !strings.HasSuffix(got[len(got)-1].String(), ", anchored, queue") {
		t.Errorf("last queue setting named %q, want it to end in \", anchored, queue\"", got[len(got)-1])
	}
	h := got[len(got)-1].HybridRule(10*time.Minute, 0, func(int) []float64 { return nil }, nil)
	if !h.Queue {
		t.Error("HybridRule of a queue setting does not read the queue")
	}
}

// TestNearSuspend: whatever idle times are listed, the hybrid is replayed
// at each SuspendTime and the two minutes below it; the default list
// already has them and is returned as it is.
func TestNearSuspend(t *testing.T) {
	def := DefaultEvalConfig()
	if got := nearSuspend(def.IdleAfter, def.SuspendTimes); !slices.Equal(got, def.IdleAfter) {
		t.Errorf("defaults: %v, want them unchanged %v", got, def.IdleAfter)
	}
	got := nearSuspend(minutesOf(5, 50), []time.Duration{2 * time.Minute, 20 * time.Minute})
	if want := minutesOf(1, 2, 5, 18, 19, 20, 50); !slices.Equal(got, want) {
		t.Errorf("idle 5m,50m with SuspendTime 2m,20m: %v, want %v", got, want)
	}
}

// TestDefaultFamily_NearSlurm: the family has hybrids whose early
// power-down starts no earlier than 0.8 of the idle time, so that every
// SuspendTime has rows within a fifth of Slurm's clock.
func TestDefaultFamily_NearSlurm(t *testing.T) {
	n := 0
	for _, st := range DefaultFamily() {
		if st.Hybrid && st.EarlyFrac >= 0.8 {
			n++
		}
	}
	if n == 0 {
		t.Error("no hybrid with the early power-down at 0.8 of the idle time or later")
	}
}
