package main

import (
	"strings"
	"testing"
	"time"

	"github.com/fairway-hpc/fairway/internal/serve"
)

func TestWriteQueueAnswer(t *testing.T) {
	t.Setenv("TZ", "UTC") // the table prints local times
	at := time.Date(2026, 11, 2, 9, 0, 0, 0, time.UTC)
	start, bound := at.Add(90*time.Minute), at.Add(3*time.Hour)
	q := &serve.QueueAnswer{At: at, Policy: "fair-qssf", Jobs: []serve.JobForecast{
		{JobID: 12, Partition: "gpu", User: "alice", Account: "physics", Rank: 1, Of: 2, ExpectedStart: &start, LimitStart: &bound,
			PredictedRunS: 1800.4, WaitS: 59.6, Reason: "Priority"},
		{JobID: 13, Partition: "gpu", User: "bob", Account: "physics", Rank: 2, Of: 2, PredictedRunS: 3600, WaitS: 5, Reason: "Resources"},
	}}
	var b strings.Builder
	if err := writeQueueAnswer(&b, q); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(b.String(), "\n")
	fields := func(i int) []string { return strings.Fields(lines[i]) }
	if got := strings.Join(fields(0), " "); got != "JOBID PARTITION USER ACCOUNT RANK EXPECTED_START LIMIT_BOUND PREDICTED_RUN WAITING REASON" {
		t.Errorf("header %q", got)
	}
	if got := strings.Join(fields(1), " "); got != "12 gpu alice physics 1/2 "+start.Local().Format("2006-01-02T15:04")+" "+bound.Local().Format("2006-01-02T15:04")+" 30m0s 1m0s Priority" {
		t.Errorf("row 1 %q", got)
	}
	if got := strings.Join(fields(2), " "); got != "13 gpu bob physics 2/2 never never 1h0m0s 5s Resources" {
		t.Errorf("row 2 %q: a job with no forecast starts never", got)
	}
	if want := "2 pending jobs; forecast of " + at.Local().Format(time.RFC3339) + " under fair-qssf:"; !strings.HasPrefix(lines[3], want) {
		t.Errorf("summary %q, want it to start with %q", lines[3], want)
	}
}

func TestWriteQueueAnswer_OneJob(t *testing.T) {
	q := &serve.QueueAnswer{At: time.Date(2026, 11, 2, 9, 0, 0, 0, time.UTC), Policy: "fair-sjf",
		Jobs: []serve.JobForecast{{JobID: 12, Partition: "gpu", User: "alice", Account: "physics", Rank: 1, Of: 1, Reason: "Priority"}}}
	var b strings.Builder
	if err := writeQueueAnswer(&b, q); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "\n1 pending job; forecast of ") {
		t.Errorf("summary of one job:\n%s", b.String())
	}
}

// TestQueueAnswer_WriteTextArrayTasks: a pending array record's row says
// when its first and its last task are expected to start.
func TestWriteQueueAnswerArrayTasks(t *testing.T) {
	t.Setenv("TZ", "UTC")
	at := time.Date(2026, 11, 24, 8, 11, 0, 0, time.UTC)
	first, last, bound := at.Add(time.Hour), at.Add(3*time.Hour), at.Add(4*time.Hour)
	q := &serve.QueueAnswer{At: at, Policy: "fifo", Jobs: []serve.JobForecast{{JobID: 10, Partition: "gpu", User: "carol", Account: "chem", Rank: 1, Of: 1,
		ExpectedStart: &first, LastTaskExpectedStart: &last, LimitStart: &bound, GPUs: 1, Tasks: 8, Reason: "Resources"}}}
	var b strings.Builder
	if err := writeQueueAnswer(&b, q); err != nil {
		t.Fatal(err)
	}
	if row := strings.Fields(strings.Split(b.String(), "\n")[1]); len(row) < 6 || row[5] != "2026-11-24T09:11..11:11" {
		t.Errorf("array row %q: want the expected start 2026-11-24T09:11..11:11", row)
	}
}
