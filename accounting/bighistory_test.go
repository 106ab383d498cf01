package accounting_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"path/filepath"
	"testing"
	"time"

	"github.com/fairway-hpc/fairway/accounting"
	"github.com/fairway-hpc/fairway/internal/shareddata"
)

// bigHistory makes a large slurmdbd history out of a real answer: the jobs
// of slurmrestd 26.05.3's answer to Fairway's own query (v0.0.45), repeated
// with new job ids and with their times shifted so that perDay of them end
// in each UTC day. Nothing is typed by hand: each job is the captured
// object with its id and times moved.
type bigHistory struct {
	jobs   []map[string]any // the captured job objects
	perDay int
}

func newBigHistory(t testing.TB, perDay int) *bigHistory {
	t.Helper()
	body := shareddata.Read(t, filepath.Join("data", "slurmrestd", "slurm-26.05.3", "v0.0.45", "slurmdb.jobs.fairway-query.json"))
	var doc struct {
		Jobs []map[string]any `json:"jobs"`
	}
	if err := json.Unmarshal(body, &doc); err != nil {
		t.Fatal(err)
	}
	parsed, err := accounting.ParseSacctJSON("capture", body)
	if err != nil || len(parsed.Bad) > 0 || len(parsed.Jobs) != len(doc.Jobs) {
		t.Fatalf("capture: %v, %d bad records", err, len(parsed.Bad))
	}
	// Only the jobs that ended (slurmdbd gives the others the window's end
	// as their end): each copy then ends where it is put.
	h := &bigHistory{perDay: perDay}
	for i, j := range doc.Jobs {
		if parsed.Jobs[i].State.Finished() && timeField(j, "end") > 0 {
			h.jobs = append(h.jobs, j)
		}
	}
	if len(h.jobs) == 0 {
		t.Fatal("the capture holds no finished job")
	}
	return h
}

// timeField reads job.time[key], a number or a {"set","number"} object.
func timeField(j map[string]any, key string) int64 {
	tm, _ := j["time"].(map[string]any)
	switch v := tm[key].(type) {
	case float64:
		return int64(v)
	case map[string]any:
		n, _ := v["number"].(float64)
		return int64(n)
	}
	return 0
}

// shifted returns the captured job i as the job with id that ends at end.
func (h *bigHistory) shifted(i int, id int64, end time.Time) map[string]any {
	src := h.jobs[i%len(h.jobs)]
	d := end.Unix() - timeField(src, "end")
	j := make(map[string]any, len(src))
	for k, v := range src {
		j[k] = v
	}
	tm := make(map[string]any)
	for k, v := range src["time"].(map[string]any) {
		tm[k] = v
	}
	for _, k := range []string{"eligible", "end", "start", "submission"} {
		switch v := tm[k].(type) {
		case float64:
			if v > 0 {
				tm[k] = v + float64(d)
			}
		case map[string]any:
			if n, _ := v["number"].(float64); n > 0 {
				o := map[string]any{}
				for kk, vv := range v {
					o[kk] = vv
				}
				o["number"] = n + float64(d)
				tm[k] = o
			}
		}
	}
	j["time"] = tm
	j["job_id"] = id
	if a, ok := src["array"].(map[string]any); ok {
		if aid, _ := a["job_id"].(float64); aid > 0 {
			c := map[string]any{}
			for k, v := range a {
				c[k] = v
			}
			c["job_id"] = id
			j["array"] = c
		}
	}
	return j
}

// write writes a slurmdbd answer (a `sacct --json` document) holding the
// jobs that end in [since, until): perDay a day, evenly spaced, job ids
// counting from the first of since's day.
func (h *bigHistory) write(w io.Writer, since, until time.Time) (int, error) {
	step := 24 * time.Hour / time.Duration(h.perDay)
	day0 := since.UTC().Truncate(24 * time.Hour)
	first := int(since.Sub(day0) / step)
	if since.Sub(day0)%step != 0 {
		first++
	}
	if _, err := io.WriteString(w, `{"jobs":[`); err != nil {
		return 0, err
	}
	n := 0
	for k := first; ; k++ {
		end := day0.Add(time.Duration(k) * step)
		if !end.Before(until) {
			break
		}
		if n > 0 {
			if _, err := io.WriteString(w, ","); err != nil {
				return n, err
			}
		}
		slot := k + int(day0.Unix()/86400)*h.perDay
		// Indented as slurmrestd sends it (about 4.9 kB a job).
		b, err := json.MarshalIndent(h.shifted(slot, int64(1000000+slot), end), "    ", "  ")
		if err != nil {
			return n, err
		}
		if _, err := w.Write(b); err != nil {
			return n, err
		}
		n++
	}
	_, err := io.WriteString(w, `],"meta":{},"errors":[],"warnings":[]}`)
	return n, err
}

// bigSlurmdb is a SlurmdbJobs over a bigHistory: each query gets the jobs
// ending in its window, as bytes slurmrestd would send. failAt, when not
// zero, makes the query whose window starts at or after it fail.
type bigSlurmdb struct {
	h       *bigHistory
	failAt  time.Time
	failErr error
	windows [][2]time.Time
	bytes   int64
}

func (f *bigSlurmdb) DBJobs(_ context.Context, _ string, since, until time.Time, sink accounting.JobRecordSink) (bool, error) {
	body, err := f.answer(since, until)
	if err != nil {
		return false, err
	}
	return sendRecords(body, sink)
}

// answer is the body slurmrestd would send for a query of [since, until).
func (f *bigSlurmdb) answer(since, until time.Time) ([]byte, error) {
	f.windows = append(f.windows, [2]time.Time{since, until})
	if !f.failAt.IsZero() && !since.Before(f.failAt) {
		return nil, f.failErr
	}
	var buf bytes.Buffer
	if _, err := f.h.write(&buf, since, until); err != nil {
		return nil, err
	}
	f.bytes += int64(buf.Len())
	return buf.Bytes(), nil
}
