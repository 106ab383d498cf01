package serve

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/fairway-hpc/fairway/policy"
)

// fakeHistory is an accounting history of jobs with a daily pattern: from
// 08:00 to 20:00 each day 30 nodes are busy, otherwise 5.
type fakeHistory struct {
	days int
	err  error
	asks int
}

func (h *fakeHistory) FinishedJobs(_ context.Context, _ string, since, _ time.Time) ([]policy.Job, error) {
	h.asks++
	if h.err != nil {
		return nil, h.err
	}
	end := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	var out []policy.Job
	for d := h.days; d > 0; d-- {
		day := end.AddDate(0, 0, -d)
		if day.Before(since.Add(-24 * time.Hour)) {
			continue
		}
		out = append(out,
			policy.Job{Start: day, End: day.Add(24 * time.Hour), Nodes: 5},
			policy.Job{Start: day.Add(8 * time.Hour), End: day.Add(20 * time.Hour), Nodes: 25})
	}
	return out, nil
}

func TestPowerForecaster(t *testing.T) {
	now := time.Date(2026, 3, 1, 6, 0, 0, 0, time.UTC) // two hours before the daily rise
	observed := map[int64]int{}
	step := 10 * time.Minute
	for k := now.Add(-30*time.Hour).Unix() / 600; k <= now.Unix()/600; k++ {
		observed[k] = 5
	}
	for _, tc := range []struct {
		name     string
		hist     *fakeHistory
		by       string // ForecastBy's prefix
		because  string // what it must say
		wantRise bool   // the forecast 3 h ahead is the daytime level
	}{
		{"three weeks of history: the GBT", &fakeHistory{days: 21}, "GBT", "refit daily", true},
		{"three days: seasonal naive", &fakeHistory{days: 3}, "seasonal naive", "days of node-use history, the GBT needs 14", false},
		{"the database fails: seasonal naive", &fakeHistory{err: errors.New("connection refused")}, "seasonal naive", "connection refused", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, err := newPowerForecaster(tc.hist, "c", step)
			if err != nil {
				t.Fatal(err)
			}
			fc, by := f.forecast(context.Background(), now, 24, observed)
			if !strings.HasPrefix(by, tc.by) || !strings.Contains(by, tc.because) {
				t.Fatalf("forecast by %q, want %q … %q", by, tc.by, tc.because)
			}
			if len(fc) != 24 {
				t.Fatalf("%d steps, want 24", len(fc))
			}
			// Step 15 ahead is 08:30, when the day's jobs run. The GBT's
			// 10 shrunk trees move two thirds of the way to the 30 nodes
			// a day earlier; serve's own observations (a night of 5)
			// give the seasonal-naive fallback no rise to repeat.
			if rise := fc[14]; tc.wantRise != (rise > 15) {
				t.Errorf("forecast for 08:30 %.1f nodes (want a rise above 15: %v); whole forecast %v", rise, tc.wantRise, fc)
			}
			if fc[0] > 10 {
				t.Errorf("forecast for 06:10 %.1f nodes, want about the night's 5", fc[0])
			}
			// Within a day it neither rereads the history nor refits,
			// unless reading it failed: then it retries after an hour.
			f.forecast(context.Background(), now.Add(30*time.Minute), 24, observed)
			f.forecast(context.Background(), now.Add(61*time.Minute), 24, observed)
			want := 1
			if tc.hist.err != nil {
				want = 2
			}
			if tc.hist.asks != want {
				t.Errorf("history read %d times in the first 61 minutes, want %d", tc.hist.asks, want)
			}
		})
	}
}
