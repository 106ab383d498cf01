package power

import (
	"strings"
	"testing"
	"time"
)

func TestDefaultSplit(t *testing.T) {
	day := func(m time.Month, d, h, min int) time.Time { return time.Date(2017, m, d, h, min, 0, 0, time.UTC) }
	rows := func(from, to time.Time, step time.Duration) []Sample {
		var s []Sample
		for at := from; !at.After(to); at = at.Add(step) {
			s = append(s, Sample{Time: at, Active: 1, Total: 2})
		}
		return s
	}
	for _, tc := range []struct {
		name     string
		s        []Sample
		from, to time.Time
		err      string
	}{
		// Philly's span: 10-03 00:00 to 12-15 18:42, one row a minute.
		{name: "ends inside a day", s: rows(day(10, 3, 0, 0), day(12, 15, 18, 42), time.Minute), from: day(12, 1, 0, 0), to: day(12, 15, 0, 0)},
		{name: "last row closes the day", s: rows(day(10, 3, 0, 0), day(12, 14, 23, 59), time.Minute), from: day(12, 1, 0, 0), to: day(12, 15, 0, 0)},
		{name: "ten-minute rows", s: rows(day(10, 3, 0, 0), day(12, 14, 23, 50), 10*time.Minute), from: day(12, 1, 0, 0), to: day(12, 15, 0, 0)},
		{name: "last row at midnight", s: rows(day(10, 3, 0, 0), day(12, 15, 0, 0), time.Hour), from: day(12, 1, 0, 0), to: day(12, 15, 0, 0)},
		{name: "exactly the test days", s: rows(day(11, 1, 0, 0), day(11, 14, 23, 0), time.Hour), from: day(11, 1, 0, 0), to: day(11, 15, 0, 0)},
		{name: "shorter than the test days", s: rows(day(11, 1, 6, 0), day(11, 14, 23, 0), time.Hour), err: "want more than 14 whole days"},
		{name: "one row", s: rows(day(11, 1, 0, 0), day(11, 1, 0, 0), time.Hour), err: "1 rows"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sp, err := DefaultSplit(tc.s)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want it to contain %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !sp.TestFrom.Equal(tc.from) || !sp.TestUntil.Equal(tc.to) || !sp.TrainUntil.Equal(tc.from) {
				t.Fatalf("split = %+v, want train until and test from %s, test until %s", sp, tc.from, tc.to)
			}
		})
	}
}
