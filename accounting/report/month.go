package report

import (
	"fmt"
	"time"
)

// Month is a calendar month in UTC, the span a report covers.
type Month struct {
	Year  int
	Month time.Month
}

// ParseMonth reads a month spelled YYYY-MM, e.g. 2026-10.
func ParseMonth(s string) (Month, error) {
	t, err := time.Parse("2006-01", s)
	if err != nil {
		return Month{}, fmt.Errorf("month %q: want YYYY-MM, e.g. 2026-10", s)
	}
	return Month{Year: t.Year(), Month: t.Month()}, nil
}

// Start is the month's first instant.
func (m Month) Start() time.Time { return time.Date(m.Year, m.Month, 1, 0, 0, 0, 0, time.UTC) }

// End is the first instant after the month.
func (m Month) End() time.Time { return m.Start().AddDate(0, 1, 0) }

// Prev is the month before.
func (m Month) Prev() Month {
	t := m.Start().AddDate(0, -1, 0)
	return Month{Year: t.Year(), Month: t.Month()}
}

// Days is the number of days in the month.
func (m Month) Days() int { return int(m.End().Sub(m.Start()) / (24 * time.Hour)) }

// String spells the month YYYY-MM.
func (m Month) String() string { return m.Start().Format("2006-01") }

// Title spells the month for people, e.g. "October 2026".
func (m Month) Title() string { return m.Start().Format("January 2006") }
