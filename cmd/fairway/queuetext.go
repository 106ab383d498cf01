package main

import (
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/fairway-hpc/fairway/internal/plural"
	"github.com/fairway-hpc/fairway/internal/serve"
)

// writeQueueAnswer writes the queue q for people, one pending job a row with its
// rank, expected start, limit bound, predicted run and wait, times in
// local time, then what the forecast rests on.
func writeQueueAnswer(w io.Writer, q *serve.QueueAnswer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "JOBID\tPARTITION\tUSER\tACCOUNT\tRANK\tEXPECTED_START\tLIMIT_BOUND\tPREDICTED_RUN\tWAITING\tREASON")
	at := func(t *time.Time) string {
		if t == nil {
			return "never"
		}
		return t.Local().Format("2006-01-02T15:04")
	}
	for _, j := range q.Jobs {
		start := at(j.ExpectedStart)
		if j.LastTaskExpectedStart != nil {
			// A pending array record's tasks start one after another:
			// the first's start, then the last's.
			start += ".." + j.LastTaskExpectedStart.Local().Format("15:04")
			if !sameDay(*j.ExpectedStart, *j.LastTaskExpectedStart) {
				start = at(j.ExpectedStart) + ".." + at(j.LastTaskExpectedStart)
			}
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%d/%d\t%s\t%s\t%s\t%s\t%s\n", j.JobID, shown(j.Partition), shown(j.User), shown(j.Account), j.Rank, j.Of,
			start, at(j.LimitStart), roundSecs(j.PredictedRunS), roundSecs(j.WaitS), j.Reason)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "%s; forecast of %s under %s: expected starts from predicted run times, limit bounds from time limits (squeue --start)\n",
		plural.N(len(q.Jobs), "pending job", "pending jobs"), q.At.Local().Format(time.RFC3339), q.Policy)
	return err
}

// roundSecs is s seconds as a duration rounded to the second.
func roundSecs(s float64) string {
	return time.Duration(s * float64(time.Second)).Round(time.Second).String()
}

// sameDay says whether a and b fall on the same local day.
func sameDay(a, b time.Time) bool {
	ay, am, ad := a.Local().Date()
	by, bm, bd := b.Local().Date()
	return ay == by && am == bm && ad == bd
}
