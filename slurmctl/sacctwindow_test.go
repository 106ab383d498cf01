package slurmctl

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"
)

// sacctReadings returns the earliest and the latest instant sacct may take
// arg (a -S or -E value) for, had it read its clock at some moment in
// [lo, hi]: a relative "now-N"/"now+N" moves with that moment; a local wall
// clock time is every instant that shows it in time.Local, two in the hour
// a DST change repeats (which one mktime picks is unspecified).
func sacctReadings(t *testing.T, arg string, lo, hi time.Time) (time.Time, time.Time) {
	t.Helper()
	if rest, ok := strings.CutPrefix(arg, "now"); ok {
		n, err := strconv.ParseInt(rest, 10, 64)
		if err != nil {
			t.Fatalf("sacct time %q: %v", arg, err)
		}
		d := time.Duration(n) * time.Second
		return lo.Add(d), hi.Add(d)
	}
	const layout = "2006-01-02T15:04:05"
	wall, err := time.ParseInLocation(layout, arg, time.UTC)
	if err != nil {
		t.Fatalf("sacct time %q: %v", arg, err)
	}
	var first, last time.Time
	for probe := -26 * time.Hour; probe <= 26*time.Hour; probe += 30 * time.Minute {
		_, off := wall.Add(probe).In(time.Local).Zone()
		at := wall.Add(-time.Duration(off) * time.Second)
		if at.In(time.Local).Format(layout) != arg {
			continue
		}
		if first.IsZero() || at.Before(first) {
			first = at
		}
		if last.IsZero() || at.After(last) {
			last = at
		}
	}
	if first.IsZero() {
		t.Fatalf("sacct time %q names no instant in %s", arg, time.Local)
	}
	return first, last
}

// TestCommands_SacctJobsJSONWindowCoversDST: however sacct reads -S and -E,
// the window it selects must hold [since, until]. SyncHistory moves the
// watermark to until once sacct answered, so an -E read an hour early
// loses, for good with an overlap under an hour, the jobs that ended in
// that hour. A wall-clock time of the hour that a change back from DST
// repeats names two instants an hour apart, and sacct's mktime may pick
// either.
func TestCommands_SacctJobsJSONWindowCoversDST(t *testing.T) {
	ny, err := time.LoadLocation("America/New_York")
	if err != nil {
		t.Skipf("no zone data: %v", err)
	}
	saved := time.Local
	time.Local = ny
	t.Cleanup(func() { time.Local = saved })
	for _, tc := range []struct {
		name         string
		since, until time.Time
	}{
		// 2026-11-01: 01:00-02:00 EDT, then 01:00-02:00 EST again.
		{"until in the repeated hour", time.Date(2026, 11, 1, 4, 30, 0, 0, time.UTC), time.Date(2026, 11, 1, 6, 40, 0, 0, time.UTC)},
		{"since in the repeated hour", time.Date(2026, 11, 1, 6, 10, 0, 0, time.UTC), time.Date(2026, 11, 1, 8, 0, 0, 0, time.UTC)},
		{"both in it", time.Date(2026, 11, 1, 5, 10, 0, 0, time.UTC), time.Date(2026, 11, 1, 6, 40, 0, 0, time.UTC)},
		{"summer", time.Date(2026, 7, 1, 4, 30, 0, 0, time.UTC), time.Date(2026, 7, 1, 6, 40, 0, 0, time.UTC)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &fakeRunner{stdout: []byte("{}")}
			lo := time.Now()
			if _, err := (Commands{Runner: r}).SacctJobsJSON(context.Background(), "", "", tc.since, tc.until); err != nil {
				t.Fatal(err)
			}
			hi := time.Now().Add(time.Second) // sacct reads its clock after we return the command
			f := strings.Fields(r.calls[0])
			var s, e string
			for i := range f[:len(f)-1] {
				switch f[i] {
				case "-S":
					s = f[i+1]
				case "-E":
					e = f[i+1]
				}
			}
			_, latestStart := sacctReadings(t, s, lo, hi)
			earliestEnd, _ := sacctReadings(t, e, lo, hi)
			if latestStart.After(tc.since) {
				t.Errorf("%s: sacct may read -S %s as %s, after the window's start %s", r.calls[0], s, latestStart.UTC().Format(time.RFC3339), tc.since.Format(time.RFC3339))
			}
			if earliestEnd.Before(tc.until) {
				t.Errorf("%s: sacct may read -E %s as %s, before the window's end %s", r.calls[0], e, earliestEnd.UTC().Format(time.RFC3339), tc.until.Format(time.RFC3339))
			}
		})
	}
}
