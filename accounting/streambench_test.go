package accounting_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/fairway-hpc/fairway/accounting"
	"github.com/fairway-hpc/fairway/slurmctl"
)

// peakHeap runs f and returns the most heap in use while it ran above what
// was in use before it, sampled every millisecond (runtime.ReadMemStats).
func peakHeap(f func()) uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	base, peak := ms.HeapInuse, ms.HeapInuse
	var mu sync.Mutex
	sample := func() {
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		mu.Lock()
		peak = max(peak, m.HeapInuse)
		mu.Unlock()
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(time.Millisecond)
		defer t.Stop()
		for {
			sample()
			select {
			case <-done:
				return
			case <-t.C:
			}
		}
	}()
	f()
	close(done)
	wg.Wait()
	sample()
	return peak - base
}

// BenchmarkWriteBigSacctFile writes a `sacct --json` file of
// $FAIRWAY_BIG_SACCT_JOBS jobs (slurmrestd 26.05.3's real answer repeated,
// see bigHistory) to $FAIRWAY_BIG_SACCT_OUT, for measuring `fairway ingest
// FILE` by hand (without them, 1,000 jobs to a temporary file):
//
//	FAIRWAY_BIG_SACCT_OUT=/tmp/big.json FAIRWAY_BIG_SACCT_JOBS=100000 go test ./accounting -run '^$' -bench WriteBigSacctFile -benchtime 1x
//	/usr/bin/time -v fairway ingest --database-url ... /tmp/big.json
//
// It is a benchmark, not a test, so that it never runs (or skips) in
// `make test`.
func BenchmarkWriteBigSacctFile(b *testing.B) {
	out, n := os.Getenv("FAIRWAY_BIG_SACCT_OUT"), 1000
	if out == "" {
		out = filepath.Join(b.TempDir(), "big.json")
	}
	if s := os.Getenv("FAIRWAY_BIG_SACCT_JOBS"); s != "" {
		var err error
		if n, err = strconv.Atoi(s); err != nil || n <= 0 {
			b.Fatalf("FAIRWAY_BIG_SACCT_JOBS=%q: want a job count", s)
		}
	}
	const perDay = 5000
	day := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	until := day.Add(time.Duration(n) * 24 * time.Hour / perDay)
	h := newBigHistory(b, perDay)
	for b.Loop() {
		f, err := os.Create(out)
		if err != nil {
			b.Fatal(err)
		}
		w := bufio.NewWriter(f)
		got, err := h.write(w, day, until)
		if err == nil {
			err = w.Flush()
		}
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			b.Fatal(err)
		}
		b.Logf("%s: %d jobs", out, got)
	}
}

// farJWT is a token that expires in 2100, for a fake slurmrestd.
var farJWT = "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9." + base64.RawURLEncoding.EncodeToString([]byte(`{"exp":4102444800,"sun":"root"}`)) + ".c2ln"

// BenchmarkRESTHistory_Window reads one day of slurmdbd history through
// the real slurmctl client from a server answering with slurmrestd
// 26.05.3's real answer repeated, and reports the heap the read took at
// its peak (peak-MB) beside the answer's size (answer-MB).
func BenchmarkRESTHistory_Window(b *testing.B) {
	for _, n := range []int{10000} {
		b.Run(fmt.Sprintf("jobs=%d", n), func(b *testing.B) {
			day := time.Date(2026, 11, 19, 0, 0, 0, 0, time.UTC)
			var body bytes.Buffer
			if _, err := newBigHistory(b, n).write(&body, day, day.Add(24*time.Hour)); err != nil {
				b.Fatal(err)
			}
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path != "/slurmdb/v0.0.45/jobs" {
					http.NotFound(w, r)
					return
				}
				w.Header().Set("Content-Type", "application/json")
				_, _ = w.Write(body.Bytes())
			}))
			defer srv.Close()
			c, err := slurmctl.New(context.Background(), slurmctl.Config{URL: srv.URL, User: "root", Token: slurmctl.StaticToken(farJWT),
				Version: "v0.0.45", RequestTimeout: time.Minute}, nil)
			if err != nil {
				b.Fatal(err)
			}
			h := &accounting.RESTHistory{Client: c}
			jobs, bad, err := h.FinishedJobs(context.Background(), day, day.Add(24*time.Hour))
			if err != nil || len(bad) > 0 || len(jobs) != n {
				b.Fatalf("%d jobs, %d bad, %v; want %d jobs", len(jobs), len(bad), err, n)
			}
			jobs = nil
			var peak uint64
			b.ResetTimer()
			for range b.N {
				p := peakHeap(func() {
					jobs, _, err = h.FinishedJobs(context.Background(), day, day.Add(24*time.Hour))
				})
				if err != nil {
					b.Fatal(err)
				}
				jobs = nil
				peak = max(peak, p)
			}
			b.ReportMetric(float64(peak)/1e6, "peak-MB")
			b.ReportMetric(float64(body.Len())/1e6, "answer-MB")
		})
	}
}

// TestRESTHistory_AnswerDecodedAsItArrives reads a day of slurmdbd
// history (16 MB: slurmrestd 26.05.3's real answer repeated) through the
// real slurmctl client from a server that, every MiB it sends, notes the
// heap live after a collection. The client held the whole answer before
// it was decoded, and all of it decoded (a 212 MB answer peaked at
// 1.17 GB); the answer is now decoded as it arrives, and the live heap
// stays under a quarter of its size, with the same jobs.
func TestRESTHistory_AnswerDecodedAsItArrives(t *testing.T) {
	day := time.Date(2026, 11, 19, 0, 0, 0, 0, time.UTC)
	var body bytes.Buffer
	n, err := newBigHistory(t, 3000).write(&body, day, day.Add(24*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	var base, maxAbove uint64
	live := func() uint64 {
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return ms.HeapAlloc
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/slurmdb/v0.0.45/jobs" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		for b := body.Bytes(); len(b) > 0; {
			k := min(len(b), 1<<20)
			if _, err := w.Write(b[:k]); err != nil {
				return
			}
			b = b[k:]
			if h := live(); h > base {
				maxAbove = max(maxAbove, h-base)
			}
		}
	}))
	defer srv.Close()
	c, err := slurmctl.New(context.Background(), slurmctl.Config{URL: srv.URL, User: "root", Token: slurmctl.StaticToken(farJWT),
		Version: "v0.0.45", RequestTimeout: time.Minute}, nil)
	if err != nil {
		t.Fatal(err)
	}
	base = live()
	jobs, bad, err := (&accounting.RESTHistory{Client: c}).FinishedJobs(context.Background(), day, day.Add(24*time.Hour))
	if err != nil || len(bad) > 0 || len(jobs) != n {
		t.Fatalf("%d jobs, %d bad, %v; want %d jobs", len(jobs), len(bad), err, n)
	}
	t.Logf("a %d-byte answer: at most %d bytes of live heap", body.Len(), maxAbove)
	if maxAbove > uint64(body.Len())/4 {
		t.Errorf("reading a %d-byte answer held %d bytes of live heap, want under a quarter of it", body.Len(), maxAbove)
	}
}
