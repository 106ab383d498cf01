package serve

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"
)

// The tests here use only the API as it was before its limits and
// paging (NewAPI with the trusted user header), so that each shows its
// finding on that code (issue 27, item 8).

// getAPI answers one GET to h with the trusted header X-Remote-User set
// to each of users, in order.
func getAPI(h http.Handler, path string, users ...string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(http.MethodGet, path, nil)
	for _, u := range users {
		req.Header.Add("X-Remote-User", u)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

func privateAPI(t *testing.T, last func() *QueueForecast) http.Handler {
	t.Helper()
	return NewAPI(APIConfig{UserHeader: "X-Remote-User"}, last)
}

// TestAPI_NotYoursAnswersAsNotThere: another user's job and a job that
// does not exist get the same status and body, so the API does not tell
// which job ids exist.
func TestAPI_NotYoursAnswersAsNotThere(t *testing.T) {
	q := fcQueue(t)
	h := privateAPI(t, func() *QueueForecast { return q })
	other, missing := getAPI(h, "/v1/jobs/2", "carol"), getAPI(h, "/v1/jobs/99", "carol")
	if other.Code != missing.Code || other.Body.String() != missing.Body.String() {
		t.Errorf("bob's job 2 as carol: %d %s; no job 99: %d %s; want the same answer", other.Code, other.Body, missing.Code, missing.Body)
	}
	if missing.Code != http.StatusNotFound {
		t.Errorf("no such job: %d, want 404", missing.Code)
	}
}

// TestAPI_OwnJobHidesOtherUsers: a user's own job says how many jobs must
// end or start first, but not which: no other user's job id, time or size.
func TestAPI_OwnJobHidesOtherUsers(t *testing.T) {
	q := fcQueue(t) // bob's job 2 waits for alice's running job 1; carol's job 3 backfills before it
	h := privateAPI(t, func() *QueueForecast { return q })
	rec := getAPI(h, "/v1/jobs/2", "bob")
	if rec.Code != http.StatusOK {
		t.Fatalf("bob's own job: %d %s", rec.Code, rec.Body)
	}
	var ans struct {
		Start map[string]json.RawMessage `json:"start"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &ans); err != nil {
		t.Fatal(err)
	}
	for key, want := range map[string]string{"must_end": "[]", "must_start": "[]", "backfill": "[]",
		"must_end_count": "1", "must_start_count": "0", "backfill_count": "1"} {
		if got := string(ans.Start[key]); got != want {
			t.Errorf("start.%s = %s, want %s", key, got, want)
		}
	}
	for _, other := range []string{`"job_id":1,`, `"job_id":3,`, "alice", "carol"} {
		if strings.Contains(rec.Body.String(), other) {
			t.Errorf("bob's answer holds %s: %s", other, rec.Body)
		}
	}
}

// TestAPI_TrustedHeaderExactlyOnce: a request with the trusted header
// twice (the client's, then the proxy's) or a list in it is refused, not
// answered for whichever value comes first.
func TestAPI_TrustedHeaderExactlyOnce(t *testing.T) {
	q := fcQueue(t)
	h := privateAPI(t, func() *QueueForecast { return q })
	for _, users := range [][]string{{"carol", "bob"}, {"bob", "bob"}, {"carol, bob"}} {
		if rec := getAPI(h, "/v1/queue", users...); rec.Code != http.StatusBadRequest {
			t.Errorf("X-Remote-User %q: %d %s, want 400", users, rec.Code, rec.Body)
		}
	}
	if rec := getAPI(h, "/v1/queue", "bob"); rec.Code != http.StatusOK {
		t.Errorf("one X-Remote-User: %d %s", rec.Code, rec.Body)
	}
}

// TestAPI_RateLimitedByDefault: one caller polling in a loop is answered
// 429 with Retry-After before long, and another caller is not.
func TestAPI_RateLimitedByDefault(t *testing.T) {
	q := fcQueue(t)
	h := privateAPI(t, func() *QueueForecast { return q })
	var limited *httptest.ResponseRecorder
	for i := 0; i < 1000 && limited == nil; i++ {
		if rec := getAPI(h, "/v1/queue", "carol"); rec.Code != http.StatusOK {
			limited = rec
		}
	}
	if limited == nil {
		t.Fatal("1000 requests in a row from carol were all answered: no rate limit")
	}
	if s, err := strconv.Atoi(limited.Header().Get("Retry-After")); limited.Code != http.StatusTooManyRequests || err != nil || s < 1 {
		t.Errorf("limited: %d, Retry-After %q; want 429 and whole seconds", limited.Code, limited.Header().Get("Retry-After"))
	}
	if rec := getAPI(h, "/v1/queue", "bob"); rec.Code != http.StatusOK {
		t.Errorf("bob, after carol's loop: %d, want 200", rec.Code)
	}
}

// TestAPI_ConcurrencyLimitedByDefault: with requests held in flight (each
// a different user, so no rate limit applies), one more is answered 503
// with Retry-After at once instead of piling up.
func TestAPI_ConcurrencyLimitedByDefault(t *testing.T) {
	q := fcQueue(t)
	entered, release := make(chan struct{}), make(chan struct{})
	h := privateAPI(t, func() *QueueForecast { entered <- struct{}{}; <-release; return q })
	done := make(chan *httptest.ResponseRecorder, 1000)
	defer close(release) // the held requests then finish into done
	var rejected *httptest.ResponseRecorder
	started := 0
	for i := 0; i < 1000 && rejected == nil; i++ {
		started++
		go func(user string) { done <- getAPI(h, "/v1/queue", user) }(fmt.Sprintf("user%d", i))
		select {
		case <-entered: // admitted: it is now held in last()
		case rejected = <-done:
		}
	}
	if rejected == nil {
		t.Fatalf("%d requests held in flight at once: no concurrency limit", started)
	}
	if rejected.Code != http.StatusServiceUnavailable || rejected.Header().Get("Retry-After") == "" {
		t.Errorf("request %d: %d, Retry-After %q; want 503 with Retry-After", started, rejected.Code, rejected.Header().Get("Retry-After"))
	}
}

// TestAPI_QueuePaged: /v1/queue answers a page at a time, limit at most
// 1000, with a cursor to the next page.
func TestAPI_QueuePaged(t *testing.T) {
	q := fcQueue(t) // bob has jobs 2 and 4
	h := privateAPI(t, func() *QueueForecast { return q })
	type page struct {
		Total      int    `json:"total"`
		NextCursor string `json:"next_cursor"`
		Jobs       []struct {
			JobID int64 `json:"job_id"`
		} `json:"jobs"`
	}
	var got []int64
	path := "/v1/queue?limit=1"
	for n := 0; path != ""; n++ {
		if n > 2 {
			t.Fatalf("more than 2 pages of one job for bob's 2 jobs: %v", got)
		}
		rec := getAPI(h, path, "bob")
		var p page
		if err := json.Unmarshal(rec.Body.Bytes(), &p); rec.Code != http.StatusOK || err != nil || len(p.Jobs) != 1 || p.Total != 2 {
			t.Fatalf("GET %s: %d %s, want one job of 2", path, rec.Code, rec.Body)
		}
		got = append(got, p.Jobs[0].JobID)
		path = ""
		if p.NextCursor != "" {
			path = "/v1/queue?limit=1&cursor=" + url.QueryEscape(p.NextCursor)
		}
	}
	if len(got) != 2 || got[0] != 2 || got[1] != 4 {
		t.Errorf("pages listed %v, want [2 4]", got)
	}
	for _, bad := range []string{"limit=1001", "limit=0", "limit=x", "cursor=x"} {
		if rec := getAPI(h, "/v1/queue?"+bad, "bob"); rec.Code != http.StatusBadRequest {
			t.Errorf("%s: %d %s, want 400", bad, rec.Code, rec.Body)
		}
	}
}
