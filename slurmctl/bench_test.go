package slurmctl

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/fairway-hpc/fairway/policy"
)

// replicateJobs builds a /jobs response of n pending records from the
// captured ones: the captured pending records are copied round-robin, each
// copy with its own job id (and, for an array record, its own array id).
// Every byte besides the ids comes from the real slurmrestd.
func replicateJobs(tb testing.TB, body []byte, n int) []byte {
	tb.Helper()
	var r struct {
		Meta   json.RawMessage   `json:"meta"`
		Errors json.RawMessage   `json:"errors"`
		Jobs   []json.RawMessage `json:"jobs"`
	}
	if err := json.Unmarshal(body, &r); err != nil {
		tb.Fatal(err)
	}
	var pending []map[string]json.RawMessage
	for _, raw := range r.Jobs {
		var m map[string]json.RawMessage
		if err := json.Unmarshal(raw, &m); err != nil {
			tb.Fatal(err)
		}
		if string(m["job_state"]) == `"PENDING"` {
			pending = append(pending, m)
		}
	}
	if len(pending) == 0 {
		tb.Fatal("no pending job in the capture")
	}
	out := make([]json.RawMessage, n)
	for i := range n {
		src := pending[i%len(pending)]
		m := make(map[string]json.RawMessage, len(src))
		for k, v := range src {
			m[k] = v
		}
		id := json.RawMessage(fmt.Sprint(1_000_000 + i))
		if string(m["array_job_id"]) == string(m["job_id"]) {
			m["array_job_id"] = id
		}
		m["job_id"] = id
		b, err := json.Marshal(m)
		if err != nil {
			tb.Fatal(err)
		}
		out[i] = b
	}
	r.Jobs = out
	b, err := json.Marshal(r)
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// BenchmarkParseJobs decodes and translates a /jobs response of n pending
// jobs built from captured records (see replicateJobs).
func BenchmarkParseJobs(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		b.Run(fmt.Sprintf("jobs=%d", n), func(b *testing.B) {
			body := replicateJobs(b, fixture(b, "jobs.200.json"), n)
			jobs, _, err := parseJobs(body)
			if err != nil {
				b.Fatal(err)
			}
			pending := 0
			for i := range jobs {
				if jobs[i].State == policy.StatePending {
					pending++
				}
			}
			if len(jobs) != n || pending != n || jobs[n-1].ID != int64(1_000_000+n-1) {
				b.Fatalf("decoded %d jobs (%d pending), last id %d", len(jobs), pending, jobs[n-1].ID)
			}
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				if _, _, err := parseJobs(body); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/job")
		})
	}
}

// TestReplicateJobs_DistinctIDs guards the benchmark input.
func TestReplicateJobs_DistinctIDs(t *testing.T) {
	jobs, _, err := parseJobs(replicateJobs(t, fixture(t, "jobs.200.json"), 500))
	if err != nil {
		t.Fatal(err)
	}
	seen := map[int64]bool{}
	for i := range jobs {
		if seen[jobs[i].ID] || jobs[i].State != policy.StatePending {
			t.Fatalf("job %d: duplicate or not pending", jobs[i].ID)
		}
		seen[jobs[i].ID] = true
		if jobs[i].ArrayTasks != "" && jobs[i].ArrayJob != jobs[i].ID {
			t.Errorf("array record %d has array id %d", jobs[i].ID, jobs[i].ArrayJob)
		}
	}
}
