package serve

import (
	"encoding/json"
	"fmt"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/fairway-hpc/fairway/policy"
	"github.com/fairway-hpc/fairway/policy/schedule"
	"github.com/google/go-cmp/cmp"
)

// TestAPI_RateLimit: each caller gets Burst requests at once, then Rate a
// second; Retry-After says when the next one is there.
func TestAPI_RateLimit(t *testing.T) {
	q := fcQueue(t)
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	h := newAPI(APIConfig{UserHeader: "X-Remote-User", Rate: 0.5, Burst: 2}, func() *QueueForecast { return q }, func() time.Time { return now })
	codes := func(user string, n int) []int {
		var out []int
		for range n {
			out = append(out, getAPI(h, "/v1/queue", user).Code)
		}
		return out
	}
	if d := cmp.Diff([]int{200, 200, 429}, codes("carol", 3)); d != "" {
		t.Errorf("carol's burst (-want +got):\n%s", d)
	}
	if rec := getAPI(h, "/v1/queue", "carol"); rec.Header().Get("Retry-After") != "2" {
		t.Errorf("Retry-After %q, want 2 (one request per 2 s)", rec.Header().Get("Retry-After"))
	}
	if d := cmp.Diff([]int{200, 200}, codes("bob", 2)); d != "" {
		t.Errorf("bob, a caller of his own (-want +got):\n%s", d)
	}
	now = now.Add(2 * time.Second)
	if d := cmp.Diff([]int{200, 429}, codes("carol", 2)); d != "" {
		t.Errorf("carol 2 s later (-want +got):\n%s", d)
	}
	now = now.Add(time.Hour) // refilled to the burst, not beyond
	if d := cmp.Diff([]int{200, 200, 429}, codes("carol", 3)); d != "" {
		t.Errorf("carol an hour later (-want +got):\n%s", d)
	}
}

// TestAPI_RateLimiterKeysBounded: the per-caller buckets are bounded;
// idle ones are dropped to make room.
func TestAPI_RateLimiterKeysBounded(t *testing.T) {
	l := &rateLimiter{rate: 1, burst: 1, buckets: map[string]*bucket{}}
	now := time.Unix(0, 0)
	for i := range maxRateKeys {
		if _, ok := l.take(string(rune(i)), now); !ok {
			t.Fatalf("caller %d refused", i)
		}
	}
	if _, ok := l.take("one more", now); ok {
		t.Error("a caller past the bound was answered while every bucket is in use")
	}
	if _, ok := l.take("one more", now.Add(time.Second)); !ok || len(l.buckets) != 1 {
		t.Errorf("after the buckets refilled: ok %v, %d buckets; want the idle ones dropped", ok, len(l.buckets))
	}
}

// TestAPI_QueueCursorStale: a cursor from a forecast that has been
// replaced is answered 410, never a page of the new one at the old offset.
func TestAPI_QueueCursorStale(t *testing.T) {
	q := fcQueue(t)
	cur := q
	h := NewAPI(APIConfig{AllUsers: true}, func() *QueueForecast { return cur })
	var p QueueAnswer
	if rec := getAPI(h, "/v1/queue?limit=2"); rec.Code != http.StatusOK || json.Unmarshal(rec.Body.Bytes(), &p) != nil || p.NextCursor == "" || len(p.Jobs) != 2 {
		t.Fatalf("first page: %d %s", rec.Code, rec.Body)
	}
	next := *q
	next.At = q.At.Add(30 * time.Second)
	cur = &next
	if rec := getAPI(h, "/v1/queue?limit=2&cursor="+p.NextCursor); rec.Code != http.StatusGone || !strings.Contains(rec.Body.String(), "without a cursor") {
		t.Errorf("stale cursor: %d %s, want 410 saying to start again", rec.Code, rec.Body)
	}
}

// TestQueueForecast_StartFor: a user sees their own jobs ahead listed and
// everyone's counted.
func TestQueueForecast_StartFor(t *testing.T) {
	q := fcQueue(t)
	ids := func(es []Event) []int64 {
		out := []int64{}
		for _, e := range es {
			out = append(out, e.JobID)
		}
		return out
	}
	// Carol's job 3 (rank 2) backfills before bob's job 2 (rank 1): it is
	// listed under backfill, not among the jobs that must start first.
	for _, c := range []struct {
		user                      string
		ends, starts, backfill    []int64
		nEnds, nStarts, nBackfill int
	}{
		{"", []int64{1}, []int64{}, []int64{3}, 1, 0, 1},
		{"bob", []int64{}, []int64{}, []int64{}, 1, 0, 1},
		{"carol", []int64{}, []int64{}, []int64{3}, 1, 0, 1},
		{"alice", []int64{1}, []int64{}, []int64{}, 1, 0, 1},
	} {
		sf, ok := q.StartFor(2, c.user, 0)
		if !ok {
			t.Fatal("job 2 not found")
		}
		want := []any{c.ends, c.starts, c.backfill, c.nEnds, c.nStarts, c.nBackfill}
		got := []any{ids(sf.MustEnd), ids(sf.MustStart), ids(sf.Backfill), sf.MustEndCount, sf.MustStartCount, sf.BackfillCount}
		if d := cmp.Diff(want, got); d != "" {
			t.Errorf("as %q (-want +got):\n%s", c.user, d)
		}
	}
}

// TestAPI_QueuePageCostsAPage: a page of /v1/queue costs memory for the
// page, not for every job that matches: with --http-all-users any client
// lists the whole queue, at Rate requests a second and MaxInFlight at
// once, and a copy of a 100k-job queue per request is tens of MB each.
func TestAPI_QueuePageCostsAPage(t *testing.T) {
	const jobs = 100_000
	q := &QueueForecast{At: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC), Jobs: make([]JobForecast, jobs)}
	for i := range q.Jobs {
		q.Jobs[i] = JobForecast{JobID: int64(i + 1), User: "bob", Account: "a", Rank: i + 1, Of: jobs}
	}
	h := NewAPI(APIConfig{AllUsers: true}, func() *QueueForecast { return q })
	var least uint64
	for n := range 3 { // the least of three: a background allocation adds to one only
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		rec := getAPI(h, "/v1/queue?limit=10&account=a")
		runtime.ReadMemStats(&after)
		if rec.Code != http.StatusOK {
			t.Fatalf("GET: %d %s", rec.Code, rec.Body)
		}
		var ans QueueAnswer
		if err := json.Unmarshal(rec.Body.Bytes(), &ans); err != nil || ans.Total != jobs || len(ans.Jobs) != 10 || ans.NextCursor == "" {
			t.Fatalf("GET: total %d, %d jobs, next %q (err %v); want 10 of %d and a next page", ans.Total, len(ans.Jobs), ans.NextCursor, err, jobs)
		}
		if b := after.TotalAlloc - before.TotalAlloc; n == 0 || b < least {
			least = b
		}
	}
	if least > 1<<20 {
		t.Errorf("one page of 10 jobs allocated %d bytes, want under 1 MiB", least)
	}
}

// TestAPI_JobAnswerBounded: /v1/jobs/{id} of the last of a long queue
// lists a bounded number of the jobs that must start first, and counts
// them all: listing every one made each answer megabytes, tens of MB to
// build, at Rate requests a second per caller.
func TestAPI_JobAnswerBounded(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	const n = 5000
	snap := &policy.Snapshot{Now: now}
	var ranking []policy.Score
	for i := range n {
		id := int64(i + 1)
		snap.Pending = append(snap.Pending, policy.Job{ID: id, User: "bob", Account: "a", Partition: "gpu", GPUs: 1, TimeLimit: time.Hour,
			Submit: now.Add(-time.Minute), State: policy.StatePending, ArrayTask: -1})
		ranking = append(ranking, policy.Score{JobID: id})
	}
	q, err := NewQueueForecast("fifo", schedule.Machine{Nodes: 1, PerNode: 1}, snap, nil, ranking)
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range []http.Handler{NewAPI(APIConfig{AllUsers: true}, func() *QueueForecast { return q }),
		NewAPI(APIConfig{UserHeader: "X-Remote-User"}, func() *QueueForecast { return q })} {
		rec := getAPI(h, fmt.Sprintf("/v1/jobs/%d", n), "bob")
		var ans JobAnswer
		if err := json.Unmarshal(rec.Body.Bytes(), &ans); rec.Code != http.StatusOK || err != nil || ans.Start == nil {
			t.Fatalf("GET: %d %.200s (err %v)", rec.Code, rec.Body, err)
		}
		if got := len(ans.Start.MustStart); got != MaxStartEvents || ans.Start.MustStartCount != n-1 {
			t.Errorf("must_start lists %d of %d, want %d of %d", got, ans.Start.MustStartCount, MaxStartEvents, n-1)
		}
		if first := ans.Start.MustStart[0]; first.JobID != 1 {
			t.Errorf("must_start begins with job %d, want 1 (the earliest)", first.JobID)
		}
	}
	// Building the answer copies the listed jobs only (about 1.4 MB
	// here when every job before it was copied and sorted).
	var least uint64
	for k := range 3 { // the least of three: a background allocation adds to one only
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		sf, _ := q.StartFor(n, "", MaxStartEvents)
		runtime.ReadMemStats(&after)
		if len(sf.MustStart) != MaxStartEvents {
			t.Fatalf("StartFor lists %d, want %d", len(sf.MustStart), MaxStartEvents)
		}
		if b := after.TotalAlloc - before.TotalAlloc; k == 0 || b < least {
			least = b
		}
	}
	if least > 256<<10 {
		t.Errorf("StartFor of the last of %d jobs allocated %d bytes, want under 256 KiB", n, least)
	}
}
