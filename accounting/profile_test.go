package accounting_test

import (
	"bufio"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/fairway-hpc/fairway/accounting"
	"github.com/fairway-hpc/fairway/contrib/lab"
	"github.com/fairway-hpc/fairway/policy"
	"github.com/fairway-hpc/fairway/policy/rewrite"
	"github.com/fairway-hpc/fairway/slurmctl"
	"github.com/google/go-cmp/cmp"
)

// TestStore_UsageSamples stores finished jobs and epilog records and reads
// them back as samples: per job, GPUs averaged, the peak and the smallest
// device; a record without its job, an old record and a job id reused
// long before are left out.
func TestStore_UsageSamples(t *testing.T) {
	store, _ := freshStore(t)
	ctx := context.Background()
	base := time.Date(2025, 5, 10, 12, 0, 0, 0, time.UTC)
	job := func(id int64, name string, gpus, shards int, start time.Time, run time.Duration) policy.Job {
		return policy.Job{Cluster: "c1", ID: id, ArrayTask: -1, User: "alice", Account: "physics", Partition: "gpu", Name: name,
			Submit: start.Add(-time.Minute), Start: start, End: start.Add(run), Nodes: 1, CPUs: 2, GPUs: gpus, Shards: shards,
			State: policy.StateCompleted}
	}
	jobs := []policy.Job{
		job(10, "train", 2, 0, base, time.Hour),
		job(11, "train", 0, 2, base.Add(2*time.Hour), 30*time.Minute),
		job(12, "old", 1, 0, base.AddDate(0, -2, 0), time.Hour), // epilog record too old
		job(13, "reused", 1, 0, base.AddDate(0, 0, -5), time.Hour),
	}
	if _, err := store.RecordFinished(ctx, "test", jobs); err != nil {
		t.Fatal(err)
	}
	f := func(v float64) *float64 { return &v }
	i := func(v int64) *int64 { return &v }
	end := func(j policy.Job) time.Time { return j.End.Add(2 * time.Second) }
	us := []accounting.GPUUsage{
		{Cluster: "c1", JobID: 10, Node: "gpu1", GPUMinor: 0, Ended: end(jobs[0]), UtilAvgPct: f(10), MemPeakMB: i(3000), MemTotalMB: i(81920)},
		{Cluster: "c1", JobID: 10, Node: "gpu1", GPUMinor: 1, Ended: end(jobs[0]), UtilAvgPct: f(30), MemPeakMB: i(5000), MemTotalMB: i(40960)},
		{Cluster: "c1", JobID: 11, Node: "gpu2", GPUMinor: 3, Ended: end(jobs[1]), Shards: 2},
		{Cluster: "c1", JobID: 12, Node: "gpu1", GPUMinor: 0, Ended: end(jobs[2]), UtilAvgPct: f(50)},
		// Job 13's id, recorded a week after the job with that id ended.
		{Cluster: "c1", JobID: 13, Node: "gpu1", GPUMinor: 0, Ended: base.AddDate(0, 0, 2), UtilAvgPct: f(5)},
		// No job row at all (history not synced yet).
		{Cluster: "c1", JobID: 99, Node: "gpu1", GPUMinor: 0, Ended: base, UtilAvgPct: f(5)},
		// Another cluster.
		{Cluster: "c2", JobID: 10, Node: "gpu1", GPUMinor: 0, Ended: end(jobs[0]), UtilAvgPct: f(99)},
	}
	if _, err := store.RecordGPUUsage(ctx, us); err != nil {
		t.Fatal(err)
	}
	got, err := store.UsageSamples(ctx, "c1", base.AddDate(0, 0, -7))
	if err != nil {
		t.Fatal(err)
	}
	want := []rewrite.UsageSample{
		{JobID: 10, User: "alice", Name: "train", End: jobs[0].End, State: policy.StateCompleted, GPUs: 2, CPUs: 2, Run: time.Hour,
			GPUUtilPct: 20, GPUMemPeakMB: 5000, GPUMemTotalMB: 40960, CPUsUsed: -1},
		{JobID: 11, User: "alice", Name: "train", End: jobs[1].End, State: policy.StateCompleted, Shards: 2, CPUs: 2, Run: 30 * time.Minute,
			GPUUtilPct: -1, CPUsUsed: -1},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("samples (-want +got):\n%s", d)
	}
}

// TestStore_UsageSamples_OtherNodeCannotDilute: another node's login may
// store records for any job id under its own node name (the job table does
// not know which nodes a job ran on). Seven idle records from gpu9 for
// bob's job, which ran on gpu1 at 95%, used to be averaged in (11.88%) and
// got his whole-GPU jobs cut to shards; the reading is now the busiest
// node's average, so they cannot lower it. A made-up high reading or peak
// only keeps a job on more of its GPU.
func TestStore_UsageSamples_OtherNodeCannotDilute(t *testing.T) {
	store, _ := freshStore(t)
	ctx := context.Background()
	start := time.Date(2025, 5, 10, 12, 0, 0, 0, time.UTC)
	jobs := []policy.Job{
		{Cluster: "c1", ID: 20, ArrayTask: -1, User: "bob", Name: "train", Submit: start.Add(-time.Minute), Start: start,
			End: start.Add(time.Hour), Nodes: 1, CPUs: 2, GPUs: 1, State: policy.StateCompleted},
		{Cluster: "c1", ID: 21, ArrayTask: -1, User: "bob", Name: "wide", Submit: start.Add(-time.Minute), Start: start,
			End: start.Add(time.Hour), Nodes: 2, CPUs: 4, GPUs: 4, State: policy.StateCompleted},
	}
	if _, err := store.RecordFinished(ctx, "test", jobs); err != nil {
		t.Fatal(err)
	}
	f := func(v float64) *float64 { return &v }
	i := func(v int64) *int64 { return &v }
	end := start.Add(time.Hour + 2*time.Second)
	us := []accounting.GPUUsage{
		{Cluster: "c1", JobID: 20, Node: "gpu1", GPUMinor: 0, Ended: end, UtilAvgPct: f(95), MemPeakMB: i(60000), MemTotalMB: i(81920)},
		// Job 21 ran on two nodes, one busier than the other.
		{Cluster: "c1", JobID: 21, Node: "gpu1", GPUMinor: 1, Ended: end, UtilAvgPct: f(70), MemPeakMB: i(1000), MemTotalMB: i(81920)},
		{Cluster: "c1", JobID: 21, Node: "gpu1", GPUMinor: 2, Ended: end, UtilAvgPct: f(90), MemPeakMB: i(1000), MemTotalMB: i(81920)},
		{Cluster: "c1", JobID: 21, Node: "gpu2", GPUMinor: 0, Ended: end, UtilAvgPct: f(40), MemPeakMB: i(1000), MemTotalMB: i(81920)},
		{Cluster: "c1", JobID: 21, Node: "gpu2", GPUMinor: 1, Ended: end, UtilAvgPct: f(40), MemPeakMB: i(1000), MemTotalMB: i(81920)},
	}
	for m := range 7 {
		us = append(us, accounting.GPUUsage{Cluster: "c1", JobID: 20, Node: "gpu9", GPUMinor: m, Ended: end.Add(time.Duration(m) * time.Second),
			UtilAvgPct: f(0), MemPeakMB: i(0), MemTotalMB: i(81920)})
	}
	if _, err := store.RecordGPUUsage(ctx, us); err != nil {
		t.Fatal(err)
	}
	got, err := store.UsageSamples(ctx, "c1", start.AddDate(0, 0, -7))
	if err != nil {
		t.Fatal(err)
	}
	util := map[int64]float64{}
	for _, s := range got {
		util[s.JobID] = s.GPUUtilPct
	}
	if diff := cmp.Diff(map[int64]float64{20: 95, 21: 80}, util); diff != "" {
		t.Errorf("GPU utilization by job (-want +got):\n%s", diff)
	}
}

func TestParseSacctUsage(t *testing.T) {
	// The TotalCPU and MaxRSS spellings sacct documents: [DD-[HH:]]MM:SS[.mmm],
	// sizes with a unit suffix.
	in := []byte("7|100|00:50.000|\n7.batch|100|00:30.500|1024K\n7.0|90|01:00|2G\n7.extern|100|00:00:00|0\n" +
		"8|3600|1-00:00:00|\n9|10|00:00:00|\n")
	got, err := accounting.ParseSacctUsage(in)
	if err != nil {
		t.Fatal(err)
	}
	want := map[int64]accounting.CPUUse{
		7: {CPUsUsed: 0.905, MemUsedMB: 2048}, // steps 30.5 + 60 s over 100 s
		8: {CPUsUsed: 24, MemUsedMB: 0},
		9: {CPUsUsed: -1},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("usage (-want +got):\n%s", d)
	}
	for _, bad := range []string{"x|1|00:01|\n", "1|1|1:2:3:4|\n", "1|1|00:01|12Q\n", "1|2\n"} {
		if _, err := accounting.ParseSacctUsage([]byte(bad)); !errors.Is(err, accounting.ErrMalformed) {
			t.Errorf("%q: %v, want ErrMalformed", bad, err)
		}
	}
}

// TestSacctUsage_Lab reads the lab's real sacct output for the last day:
// it must parse, and every job listed must have a non-negative memory.
func TestSacctUsage_Lab(t *testing.T) {
	e := lab.Get(t)
	now := time.Now()
	got, err := accounting.SacctUsage(context.Background(), slurmctl.Commands{Runner: slurmctl.ExecRunner{SlurmConf: e.SlurmConf}}, "", now.Add(-24*time.Hour), now)
	if err != nil {
		t.Fatal(err)
	}
	for id, u := range got {
		if id <= 0 || u.MemUsedMB < 0 || (u.CPUsUsed < 0 && u.CPUsUsed != -1) {
			t.Errorf("job %d: %+v", id, u)
		}
	}
	t.Logf("%d jobs in the lab's last day of sacct", len(got))
}

// TestParseSacctUsage_OutOfRange holds input once accepted as something it
// is not: job id 0 (found by FuzzParseSacctUsage, in testdata/fuzz) or
// below, a TotalCPU adding up to +Inf (CPUsUsed +Inf), a MaxRSS of NaN,
// Inf or beyond int64 (a wrapped conversion, read as 0), an ElapsedRaw
// that is no number (read as unknown), a line too long to scan (an error
// that did not say it came from sacct). Each is ErrMalformed naming the
// field now, or, for the long line, an error saying where.
func TestParseSacctUsage_OutOfRange(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"0|10|00:01|\n", "job id \"0\""},
		{"-7|10|00:01|\n", "job id \"-7\""},
		{"1|10|Inf:00|\n", "TotalCPU \"Inf:00\""},
		{"1|10|NaN:00|\n", "TotalCPU \"NaN:00\""},
		{"1|10|1e308:00:00|\n", "TotalCPU \"1e308:00:00\""},
		{"1|10|00:01|\n1.0|10|00:01|NaN\n", "line 2: MaxRSS \"NaN\""},
		{"1|10|00:01|InfK\n", "MaxRSS \"InfK\""},
		{"1|10|00:01|1e300G\n", "MaxRSS \"1e300G\""},
		{"1|xx|00:05|\n", "ElapsedRaw \"xx\""},
		{"1|-3|00:05|\n", "ElapsedRaw \"-3\""},
	} {
		_, err := accounting.ParseSacctUsage([]byte(tc.in))
		if !errors.Is(err, accounting.ErrMalformed) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: got %v, want ErrMalformed naming %s", tc.in, err, tc.want)
		}
	}
	_, err := accounting.ParseSacctUsage([]byte("1|10|00:01|" + strings.Repeat("1", 70000) + "\n"))
	if !errors.Is(err, bufio.ErrTooLong) || !strings.HasPrefix(err.Error(), "sacct usage: ") {
		t.Errorf("long line: got %v, want a bufio.ErrTooLong starting \"sacct usage: \"", err)
	}
	// an empty ElapsedRaw is unknown, as an empty TotalCPU or MaxRSS is
	got, err := accounting.ParseSacctUsage([]byte("1||00:05|\n"))
	if err != nil || got[1].CPUsUsed != -1 {
		t.Errorf("empty ElapsedRaw: %+v, %v; want CPUsUsed -1", got, err)
	}
}
