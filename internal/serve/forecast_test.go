package serve

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/fairway-hpc/fairway/policy"
	"github.com/fairway-hpc/fairway/policy/schedule"
	"github.com/fairway-hpc/fairway/slurmctl"
	"github.com/google/go-cmp/cmp"
)

// fcQueue is one node of 4 GPUs: a running job holds 3 for an hour; the
// ranked queue is a whole-node job, a short one-GPU job that backfills,
// and a job larger than the node, in two partitions.
func fcQueue(t *testing.T) *QueueForecast {
	t.Helper()
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	job := func(id int64, user, part string, gpus int, limit time.Duration) policy.Job {
		return policy.Job{ID: id, User: user, Account: "a-" + user, Partition: part, GPUs: gpus, TimeLimit: limit,
			Submit: now.Add(-time.Duration(id) * time.Minute), State: policy.StatePending, ArrayTask: -1}
	}
	run := job(1, "alice", "gpu", 3, 2*time.Hour)
	run.State, run.Start = policy.StateRunning, now.Add(-time.Hour)
	snap := &policy.Snapshot{Now: now, Running: []policy.Job{run},
		Pending:   []policy.Job{job(2, "bob", "gpu", 4, time.Hour), job(3, "carol", "debug", 1, 30*time.Minute), job(4, "bob", "gpu", 8, time.Hour)},
		Predicted: map[int64]time.Duration{1: 90 * time.Minute, 3: 10 * time.Minute}}
	cl := &slurmctl.Cluster{Nodes: []slurmctl.Node{{Name: "g1", State: []string{"MIXED"}, Partitions: []string{"gpu", "debug"}, CPUs: 64, GPUs: 4},
		{Name: "c1", State: []string{"DOWN"}, Partitions: []string{"gpu"}, CPUs: 64, GPUs: 4}}}
	m := MachineOf(cl, nil)
	if m != (schedule.Machine{Nodes: 1, PerNode: 4}) {
		t.Fatalf("machine %+v, want the one usable node of 4 GPUs", m)
	}
	q, err := NewQueueForecast("fifo", m, snap, snap.Running, []policy.Score{{JobID: 2}, {JobID: 3}, {JobID: 4}})
	if err != nil {
		t.Fatal(err)
	}
	return q
}

func TestNewQueueForecast(t *testing.T) {
	q := fcQueue(t)
	at := func(d time.Duration) *time.Time { x := q.At.Add(d); return &x }
	want := []JobForecast{
		{JobID: 3, User: "carol", Account: "a-carol", Partition: "debug", Rank: 2, Of: 3, Submit: q.At.Add(-3 * time.Minute), WaitS: 180,
			PredictedRunS: 600, TimeLimitS: 1800, ExpectedStart: at(0), LimitStart: at(0), Reason: "starts at Slurm's next scheduling pass: it fits now",
			GPUs: 1, Tasks: 1},
		{JobID: 2, User: "bob", Account: "a-bob", Partition: "gpu", Rank: 1, Of: 3, Submit: q.At.Add(-2 * time.Minute), WaitS: 120,
			PredictedRunS: 3600, TimeLimitS: 3600, ExpectedStart: at(30 * time.Minute), LimitStart: at(time.Hour),
			Reason: "first in Fairway's order; waits for 1 running job to end", GPUs: 4, Tasks: 1},
		{JobID: 4, User: "bob", Account: "a-bob", Partition: "gpu", Rank: 3, Of: 3, Submit: q.At.Add(-4 * time.Minute), WaitS: 240,
			PredictedRunS: 3600, TimeLimitS: 3600, Reason: "asks for 8 GPUs, more than the 4 the ranked partitions have", GPUs: 8, Tasks: 1},
	}
	if diff := cmp.Diff(want, q.Jobs); diff != "" {
		t.Errorf("queue (-want +got):\n%s", diff)
	}
	// Job 3 (rank 2) starts before job 2 (rank 1) by backfill: it is not
	// a job that must start first.
	st, ok := q.Start(2)
	if !ok || len(st.MustEnd) != 1 || st.MustEnd[0].JobID != 1 || len(st.MustStart) != 0 || len(st.Backfill) != 1 || st.Backfill[0].JobID != 3 {
		t.Errorf("job 2 must wait for %+v", st)
	}
}

// TestNewQueueForecast_ReasonsCountOnlyJobsRankedAhead: a node of 4 GPUs,
// 3 held by a running job for 30 more minutes; ranks 1 and 2 ask for 2
// GPUs each and start when it ends, rank 3 asks for 1 and backfills now.
// Rank 2 waits for rank 1 only: the job that backfilled is ranked below
// it and is not waited for (it was counted, as "2 queued jobs").
func TestNewQueueForecast_ReasonsCountOnlyJobsRankedAhead(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	job := func(id int64, gpus int, limit time.Duration) policy.Job {
		return policy.Job{ID: id, User: "u", Account: "a", Partition: "gpu", GPUs: gpus, TimeLimit: limit,
			Submit: now.Add(-time.Minute), State: policy.StatePending, ArrayTask: -1}
	}
	run := job(1, 3, 2*time.Hour)
	run.State, run.Start = policy.StateRunning, now.Add(-time.Hour)
	snap := &policy.Snapshot{Now: now, Running: []policy.Job{run},
		Pending:   []policy.Job{job(2, 2, time.Hour), job(3, 2, time.Hour), job(4, 1, 20*time.Minute)},
		Predicted: map[int64]time.Duration{1: 90 * time.Minute, 4: 10 * time.Minute}}
	q, err := NewQueueForecast("fifo", schedule.Machine{Nodes: 1, PerNode: 4}, snap, snap.Running, []policy.Score{{JobID: 2}, {JobID: 3}, {JobID: 4}})
	if err != nil {
		t.Fatal(err)
	}
	reasons := map[int64]string{}
	for _, jf := range q.Jobs {
		reasons[jf.JobID] = jf.Reason
	}
	want := map[int64]string{
		2: "first in Fairway's order; waits for 1 running job to end",
		3: "rank 2: waits for 1 running job to end and 1 queued job ranked ahead to start",
		4: "starts at Slurm's next scheduling pass: it fits now",
	}
	if diff := cmp.Diff(want, reasons); diff != "" {
		t.Errorf("reasons (-want +got):\n%s", diff)
	}
	st, _ := q.Start(3)
	if got := [][]int64{eventIDs(st.MustEnd), eventIDs(st.MustStart), eventIDs(st.Backfill)}; !cmp.Equal(got, [][]int64{{1}, {2}, {4}}) {
		t.Errorf("job 3: must end, must start, backfill %v, want [[1] [2] [4]]", got)
	}
}

func eventIDs(es []Event) []int64 {
	out := []int64{}
	for _, e := range es {
		out = append(out, e.JobID)
	}
	return out
}

// TestAPI_TrustedUserHeader checks the job API's answers, open to all
// users and with the trusted user header.
func TestAPI_TrustedUserHeader(t *testing.T) {
	q := fcQueue(t)
	last := func() *QueueForecast { return q }
	all, private := APIConfig{AllUsers: true}, APIConfig{UserHeader: "X-Remote-User"}
	tests := []struct {
		name       string
		cfg        APIConfig
		path, user string
		want       int
		jobs       int // jobs in a queue answer
	}{
		{"all users: any job", all, "/v1/jobs/2", "", http.StatusOK, 0},
		{"all users: whole queue", all, "/v1/queue", "", http.StatusOK, 3},
		{"all users: one user's queue", all, "/v1/queue?user=bob", "", http.StatusOK, 2},
		{"all users: unknown job", all, "/v1/jobs/99", "", http.StatusNotFound, 0},
		{"all users: bad id", all, "/v1/jobs/x", "", http.StatusBadRequest, 0},
		{"private: own job", private, "/v1/jobs/2", "bob", http.StatusOK, 0},
		{"private: another user's job, as if absent", private, "/v1/jobs/2", "carol", http.StatusNotFound, 0},
		{"private: no header", private, "/v1/jobs/2", "", http.StatusUnauthorized, 0},
		{"private: own queue by default", private, "/v1/queue", "carol", http.StatusOK, 1},
		{"private: another user's queue", private, "/v1/queue?user=bob", "carol", http.StatusForbidden, 0},
		{"no audience chosen", APIConfig{}, "/v1/queue", "carol", http.StatusForbidden, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := NewAPI(tt.cfg, last)
			req := httptest.NewRequest(http.MethodGet, tt.path, nil)
			if tt.user != "" {
				req.Header.Set("X-Remote-User", tt.user)
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != tt.want {
				t.Fatalf("%d %s, want %d", rec.Code, rec.Body, tt.want)
			}
			if tt.want == http.StatusOK && tt.jobs > 0 {
				var ans QueueAnswer
				if err := json.Unmarshal(rec.Body.Bytes(), &ans); err != nil || len(ans.Jobs) != tt.jobs || ans.Total != tt.jobs {
					t.Errorf("%v: %d jobs (total %d) in %s, want %d", err, len(ans.Jobs), ans.Total, rec.Body, tt.jobs)
				}
			}
		})
	}
	h := NewAPI(all, func() *QueueForecast { return nil })
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/v1/queue", nil))
	if rec.Code != http.StatusServiceUnavailable {
		t.Errorf("before the first cycle: %d, want 503", rec.Code)
	}
}

// TestNewQueueForecast_NoRunningJobToWaitFor: rank 2 waits only for rank 1,
// which holds the node once it starts; no job runs now, so the reason names
// no running job ("waits for 0 running jobs to end and ..." before).
func TestNewQueueForecast_NoRunningJobToWaitFor(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	job := func(id int64) policy.Job {
		return policy.Job{ID: id, User: "u", Account: "a", Partition: "gpu", GPUs: 4, TimeLimit: time.Hour,
			Submit: now.Add(-time.Minute), State: policy.StatePending, ArrayTask: -1}
	}
	snap := &policy.Snapshot{Now: now, Pending: []policy.Job{job(2), job(3)}, Predicted: map[int64]time.Duration{2: 10 * time.Minute}}
	q, err := NewQueueForecast("fifo", schedule.Machine{Nodes: 1, PerNode: 4}, snap, nil, []policy.Score{{JobID: 2}, {JobID: 3}})
	if err != nil {
		t.Fatal(err)
	}
	for _, jf := range q.Jobs {
		if jf.JobID == 3 && jf.Reason != "rank 2: waits for 1 queued job ranked ahead to start" {
			t.Errorf("job 3: %q", jf.Reason)
		}
	}
}

// TestNewQueueForecast_WaitNeverNegative: a job Slurm stamps after the
// cycle's now (serve's clock stepped back, or runs behind slurmctld's)
// has waited 0 s so far in GET /v1/queue and `fairway queue`, not a
// negative time.
func TestNewQueueForecast_WaitNeverNegative(t *testing.T) {
	now := time.Date(2026, 3, 29, 1, 30, 0, 0, time.UTC)
	job := policy.Job{ID: 2, User: "u", Account: "a", Partition: "gpu", GPUs: 1, TimeLimit: time.Hour,
		Submit: now.Add(3 * time.Minute), State: policy.StatePending, ArrayTask: -1}
	snap := &policy.Snapshot{Now: now, Pending: []policy.Job{job}}
	q, err := NewQueueForecast("fifo", schedule.Machine{Nodes: 1, PerNode: 4}, snap, nil, []policy.Score{{JobID: 2}})
	if err != nil {
		t.Fatal(err)
	}
	if len(q.Jobs) != 1 || q.Jobs[0].WaitS != 0 {
		t.Errorf("jobs %+v: want job 2 with wait_s 0", q.Jobs)
	}
}

// TestExplain_WaitNeverNegative: `fairway explain` of a job Slurm stamps
// after the cycle's now says it has waited 0 s, not a negative time.
func TestExplain_WaitNeverNegative(t *testing.T) {
	now := time.Date(2026, 3, 29, 1, 30, 0, 0, time.UTC)
	job := policy.Job{ID: 2, User: "u", Account: "a", Submit: now.Add(3 * time.Minute), State: policy.StatePending, ArrayTask: -1}
	res := &CycleResult{Snapshot: &policy.Snapshot{Now: now, Pending: []policy.Job{job}}, Ranked: []policy.Score{{JobID: 2}}}
	ex, err := Explain(res, 2)
	if err != nil {
		t.Fatal(err)
	}
	if ex.WaitingS != 0 {
		t.Errorf("waiting_s %v, want 0", ex.WaitingS)
	}
}
