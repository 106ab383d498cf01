package serve

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/fairway-hpc/fairway/policy"
	"github.com/fairway-hpc/fairway/policy/power"
	"github.com/fairway-hpc/fairway/slurmctl"
	"github.com/google/go-cmp/cmp"
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

// sharedHistory is a GPU cluster's day: eight one-GPU jobs on node g1 and
// a two-node job on g[2-3] from 08:00 to 20:00, each day; with hosts
// dropped it is a history that does not name nodes.
type sharedHistory struct{ named bool }

func (h sharedHistory) FinishedJobs(_ context.Context, _ string, since, _ time.Time) ([]policy.Job, error) {
	end := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	var out []policy.Job
	for day := end.AddDate(0, 0, -21); day.Before(end); day = day.AddDate(0, 0, 1) {
		for range 8 {
			out = append(out, policy.Job{Start: day.Add(8 * time.Hour), End: day.Add(20 * time.Hour), Nodes: 1, GPUs: 1, Hosts: "g1"})
		}
		out = append(out, policy.Job{Start: day.Add(8 * time.Hour), End: day.Add(20 * time.Hour), Nodes: 2, GPUs: 16, Hosts: "g[2-3]"})
	}
	if !h.named {
		for i := range out {
			out[i].Hosts = ""
		}
	}
	return out, nil
}

// TestPowerForecaster_SharedNodes: the node use the forecast learns from
// counts a node once however many jobs share it (3 nodes busy by day, not
// the jobs' 10); a history without node names counts node counts, and a
// node list that is not a hostlist falls back to the same
// (TestJobSpans).
func TestPowerForecaster_SharedNodes(t *testing.T) {
	now := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	noon := now.Add(-12 * time.Hour)
	for _, tc := range []struct {
		name string
		hist JobHistory
		want int
	}{
		{"hosts named", sharedHistory{named: true}, 3},
		{"no hosts", sharedHistory{}, 10},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, err := newPowerForecaster(tc.hist, "c", 10*time.Minute)
			if err != nil {
				t.Fatal(err)
			}
			f.refit(context.Background(), now, nil)
			s := f.series(now, nil)
			if got := s.Active[s.Index(noon)]; got != tc.want {
				t.Errorf("node use at noon the day before: %d, want %d", got, tc.want)
			}
			if got := s.Active[s.Index(noon.Add(-6*time.Hour))]; got != 0 {
				t.Errorf("node use at 06:00: %d, want 0", got)
			}
		})
	}
}

// TestPowerForecaster_SeriesReusesHistory: every cycle reads the series,
// so the history's node use is worked out once a refit, not once a cycle
// (with each job's nodes named, once a cycle cost a second and most of a
// gigabyte on a month of a cluster whose jobs span tens of nodes); the
// windows of later cycles still hold what the history gives them, and
// serve's observations on top.
func TestPowerForecaster_SeriesReusesHistory(t *testing.T) {
	now := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	step := 10 * time.Minute
	hist := sharedHistory{named: true}
	f, err := newPowerForecaster(hist, "c", step)
	if err != nil {
		t.Fatal(err)
	}
	f.refit(context.Background(), now, nil)
	jobs, _ := hist.FinishedJobs(context.Background(), "c", now.Add(-f.window), time.Time{})
	spans := power.JobSpans(jobs, slurmctl.ExpandHostlist)
	for _, later := range []time.Duration{0, 10 * time.Minute, 7 * time.Hour, 23*time.Hour + 50*time.Minute} {
		at := now.Add(later)
		observed := map[int64]int{at.Unix() / 600: 7}
		s := f.series(at, observed)
		want := power.NodeUse(spans, s.Start, step, s.Len())
		want[len(want)-1] = max(want[len(want)-1], 7)
		if diff := cmp.Diff(want, s.Active); diff != "" {
			t.Errorf("series %v after the refit (-node use of the history and observed +series):\n%s", later, diff)
		}
	}
	if a := testing.AllocsPerRun(5, func() { f.series(now.Add(time.Hour), nil) }); a > 3 {
		t.Errorf("series allocates %.0f times a call, want at most 3 (the series): it recomputes the history's node use", a)
	}
}
