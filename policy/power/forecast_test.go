package power

import (
	"math"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func TestLagsFor(t *testing.T) {
	got, err := LagsFor(10 * time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(Lags{Day: 144, Short: 3, Long: 6, Recent: 18}, got); diff != "" {
		t.Errorf("(-want +got)\n%s", diff)
	}
	if _, err := LagsFor(7 * time.Minute); err == nil {
		t.Error("7m: no error, want one (30 min is not a whole number of steps)")
	}
}

func TestFeatures_HandChecked(t *testing.T) {
	l := Lags{Day: 4, Short: 2, Long: 3, Recent: 2}
	at := time.Date(2017, 12, 3, 13, 40, 0, 0, time.UTC) // a Sunday, ISO week 48
	row := make([]float32, NumFeatures)
	Features(at, 10, func(k int) float64 { return float64(k) }, l, row)
	// Windows end a day (4 steps) before step 10: [5 6] and [4 5 6]; the lag
	// is step 8, softened with steps 7 and 9.
	want := []float32{2017, 12, 3, 13, 40, 6, 337, 48,
		5.5, 5.5, float32(math.Sqrt(0.5)),
		5, 5, 1,
		8, 8}
	if diff := cmp.Diff(want, row, cmpopts.EquateApprox(0, 1e-6)); diff != "" {
		t.Errorf("(-want +got) in order %v\n%s", FeatureNames, diff)
	}
}

func TestSeasonal_Forecast(t *testing.T) {
	s := &Series{Step: 10 * time.Minute, Active: []int{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}}
	for _, tc := range []struct {
		name   string
		period int
		want   []float64
	}{
		{"period 3 repeats itself beyond a period", 3, []float64{4, 5, 6, 4, 5}},
		{"last value", 1, []float64{6, 6, 6, 6, 6}},
		{"before the series: its first value, then the series", 9, []float64{1, 1, 1, 1, 2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := make([]float64, 5)
			Seasonal{Period: tc.period}.Forecast(s, 5, out)
			if diff := cmp.Diff(tc.want, out); diff != "" {
				t.Errorf("(-want +got)\n%s", diff)
			}
		})
	}
}

func TestScore(t *testing.T) {
	for _, tc := range []struct {
		name string
		p, a []float64
		want Errors
	}{
		{"one miss", []float64{1, 3}, []float64{1, 1}, Errors{RMSE: math.Sqrt2, SMAPE: 50, N: 2}},
		{"both zero counts as exact", []float64{0, 2}, []float64{0, 2}, Errors{N: 2}},
		{"empty", nil, nil, Errors{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, Score(tc.p, tc.a), cmpopts.EquateApprox(0, 1e-12)); diff != "" {
				t.Errorf("(-want +got)\n%s", diff)
			}
		})
	}
}

// TestGBTForecaster_NeverReadsTheFuture changes every step after the issue
// and checks the forecast does not move.
func TestGBTForecaster_NeverReadsTheFuture(t *testing.T) {
	s := periodic(20)
	l, _ := LagsFor(s.Step)
	cfg := DefaultEvalConfig().GBT
	cfg.Trees = 20
	f, err := TrainGBT(s, 0, 15*144, l, cfg, GBTForecaster{Delta: true})
	if err != nil {
		t.Fatal(err)
	}
	now := 16 * 144
	before := make([]float64, 2*144)
	f.Forecast(s, now, before)
	for k := now + 1; k < s.Len(); k++ {
		s.Active[k] = 0
	}
	after := make([]float64, 2*144)
	f.Forecast(s, now, after)
	if diff := cmp.Diff(before, after); diff != "" {
		t.Errorf("forecast changed with the future (-before +after)\n%s", diff)
	}
}

// periodic is days of a daily demand cycle between 20 and 80 nodes of 100,
// at 10-minute steps from 2017-10-02 (a Monday).
func periodic(days int) *Series {
	s := &Series{Start: time.Date(2017, 10, 2, 0, 0, 0, 0, time.UTC), Step: 10 * time.Minute}
	for i := range days * 144 {
		a := 50 + 30*math.Sin(2*math.Pi*float64(i%144)/144)
		s.Active = append(s.Active, int(a))
		s.Total = append(s.Total, 100)
	}
	return s
}
