package power

import (
	"fmt"
	"time"
)

// TestDays is how many whole days DefaultSplit replays: the artifact's two
// weeks.
const TestDays = 14

// Split is where a sequence's training ends and which days are replayed.
type Split struct {
	// TrainUntil is the first instant not trained on.
	TrainUntil time.Time
	// TestFrom and TestUntil bound the replayed days, [TestFrom, TestUntil).
	TestFrom, TestUntil time.Time
}

// DefaultSplit applies the artifact's split to any sequence: the last
// TestDays whole days (midnight to midnight, UTC) are replayed and
// everything before them is training. A site's own sequence rarely covers
// the artifact's dates, and the most recent weeks are the ones an admin
// wants judged. On Philly, which ends during 2017-12-15, it is the
// artifact's own split: train through 11-30, test 12-01 to 12-14.
//
// The sequence ends one sample step after its last row (the step taken
// from its last two rows), so a sequence whose last row is 23:59 of a
// minute-by-minute day keeps that day. Whether enough training precedes
// the test is Evaluate's to say.
func DefaultSplit(s []Sample) (Split, error) {
	if len(s) < 2 {
		return Split{}, fmt.Errorf("default split: %d rows: want a sequence of at least %d whole days", len(s), TestDays+1)
	}
	last := s[len(s)-1].Time.UTC()
	end := last.Add(last.Sub(s[len(s)-2].Time.UTC()))
	until := time.Date(end.Year(), end.Month(), end.Day(), 0, 0, 0, 0, time.UTC)
	from := until.AddDate(0, 0, -TestDays)
	if first := s[0].Time.UTC(); from.Before(first) {
		return Split{}, fmt.Errorf("default split: the sequence runs %s to %s: want more than %d whole days (the test days, and training before them)",
			first.Format(time.DateTime), end.Format(time.DateTime), TestDays)
	}
	return Split{TrainUntil: from, TestFrom: from, TestUntil: until}, nil
}
