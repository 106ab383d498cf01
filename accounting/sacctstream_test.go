package accounting_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/fairway-hpc/fairway/accounting"
	"github.com/fairway-hpc/fairway/internal/shareddata"
)

// bigSacctDoc is a `sacct --json` document of one day of bigHistory's
// jobs (slurmrestd 26.05.3's real answer repeated), and how many.
func bigSacctDoc(t testing.TB, perDay int) ([]byte, int) {
	t.Helper()
	var buf bytes.Buffer
	day := time.Date(2026, 11, 19, 0, 0, 0, 0, time.UTC)
	n, err := newBigHistory(t, perDay).write(&buf, day, day.Add(24*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	return buf.Bytes(), n
}

func gzipped(t testing.TB, b []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if _, err := zw.Write(b); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// countReader counts the bytes read through it.
type countReader struct {
	r io.Reader
	n int64
}

func (c *countReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// TestSacctSource_DecodesAsItReads: a `sacct --json` file was read whole
// and decoded whole before the import saw its first job (527 MB of
// 100,000 jobs peaked at 1.5 GB). Its first job now comes after only the
// start of the file is read, and every job after it, plain or gzip.
func TestSacctSource_DecodesAsItReads(t *testing.T) {
	doc, n := bigSacctDoc(t, 3000)
	for _, tc := range []struct {
		name string
		data []byte
	}{{"plain", doc}, {"gzip", gzipped(t, doc)}} {
		t.Run(tc.name, func(t *testing.T) {
			cr := &countReader{r: bytes.NewReader(tc.data)}
			src := accounting.NewSacctSource(cr, "big.json", false)
			if !src.Next() {
				t.Fatalf("no first job: %v", src.Err())
			}
			if cr.n > 256<<10 {
				t.Errorf("%d of %d bytes read before the first job, want only the start", cr.n, len(tc.data))
			}
			if w := src.Where(); !strings.HasPrefix(w, "big.json: jobs[0] (job ") {
				t.Errorf("Where = %q", w)
			}
			got := 1
			for src.Next() {
				got++
			}
			if src.Err() != nil || got != n || src.Skipped() != 0 {
				t.Errorf("%d jobs, %d skipped, %v; want %d", got, src.Skipped(), src.Err(), n)
			}
		})
	}
}

// seekCounter is a file-like reader (it can seek, so the import reads it
// twice) that, every MiB read, notes the heap live after a collection.
type seekCounter struct {
	r        *bytes.Reader
	n, next  int64
	base     uint64
	maxAbove uint64
}

func (s *seekCounter) Read(p []byte) (int, error) {
	n, err := s.r.Read(p)
	if s.n += int64(n); s.n >= s.next {
		s.next = s.n + 1<<20
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		if ms.HeapAlloc > s.base {
			s.maxAbove = max(s.maxAbove, ms.HeapAlloc-s.base)
		}
	}
	return n, err
}

func (s *seekCounter) Seek(off int64, whence int) (int64, error) {
	n, err := s.r.Seek(off, whence)
	s.n, s.next = n, n
	return n, err
}

// TestImportFile_SacctJSONInBoundedMemory imports a 16 MB `sacct --json`
// document (3,000 jobs), then its gzip copy. Importing held the whole
// file and all of it decoded (live heap above the file's size); the live
// heap now stays under a quarter of it, with the same summary.
func TestImportFile_SacctJSONInBoundedMemory(t *testing.T) {
	store, _ := freshStore(t)
	doc, n := bigSacctDoc(t, 3000)
	for _, tc := range []struct {
		name string
		data []byte
	}{{"plain", doc}, {"gzip", gzipped(t, doc)}} {
		t.Run(tc.name, func(t *testing.T) {
			runtime.GC()
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			in := &seekCounter{r: bytes.NewReader(tc.data), base: ms.HeapAlloc}
			sum, _, err := store.ImportFile(context.Background(), in, accounting.FileImport{Format: accounting.FormatSacctJSON, Name: "big.json"})
			if err != nil {
				t.Fatal(err)
			}
			if sum.Read != n || sum.Inserted+sum.Unchanged != n || sum.Rejected != 0 {
				t.Errorf("summary %+v, want %d read and stored", sum, n)
			}
			if in.maxAbove > uint64(len(doc))/4 {
				t.Errorf("importing a %d-byte document held %d bytes of live heap, want under a quarter of it", len(doc), in.maxAbove)
			}
		})
	}
}

// TestImportFile_SacctJSONWhatIsReported: the import now starts before
// the end of the document is read, yet reports what it did when the
// document was decoded first: a record that does not decode rather than
// an invalid job before it, and the errors sacct reported after the jobs
// rather than the jobs. Both from sacct 22.05's captured answer.
func TestImportFile_SacctJSONWhatIsReported(t *testing.T) {
	store, _ := freshStore(t)
	data, err := os.ReadFile(sacctFixture)
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	var jobs []map[string]any
	if err := json.Unmarshal(doc["jobs"], &jobs); err != nil {
		t.Fatal(err)
	}
	// Job 27 invalid (more CPUs than the column holds), job 30 not
	// decodable (its id a string).
	for _, r := range jobs[0]["tres"].(map[string]any)["allocated"].([]any) {
		if r := r.(map[string]any); r["type"] == "cpu" {
			r["count"] = 3e9
		}
	}
	jobs[3]["job_id"] = "thirty"
	bad, err := json.Marshal(map[string]any{"meta": doc["meta"], "jobs": jobs})
	if err != nil {
		t.Fatal(err)
	}
	// slurmrestd's answer to a forged token carries errors; here they
	// follow the jobs.
	root := shareddata.Dir(t, "data", "slurmrestd")
	forged, err := os.ReadFile(filepath.Join(root, "slurm-26.05.3", "v0.0.45", "err.jobs-forged-token.json"))
	if err != nil {
		t.Fatal(err)
	}
	var fdoc map[string]json.RawMessage
	if err := json.Unmarshal(forged, &fdoc); err != nil {
		t.Fatal(err)
	}
	late := append(append(append([]byte(`{"jobs":`), doc["jobs"]...), `,"errors":`...), fdoc["errors"]...)
	late = append(late, '}')
	for _, tc := range []struct {
		name, in, want string
	}{
		{"bad record after an invalid job", string(bad), "s.json: jobs[3]: want a number"},
		{"errors after the jobs", string(late), "s.json: sacct reported errors: "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := store.ImportFile(context.Background(), strings.NewReader(tc.in), accounting.FileImport{Format: accounting.FormatSacctJSON, Name: "s.json"})
			if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
				t.Errorf("err = %v, want prefix %q", err, tc.want)
			}
		})
	}
}

// TestIngestSource_GzipSacctJSON: a gzip-compressed `sacct --json` file is
// told from a trace as the plain one is.
func TestIngestSource_GzipSacctJSON(t *testing.T) {
	data, err := os.ReadFile(sacctFixture)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "sacct.json.gz")
	if err := os.WriteFile(path, gzipped(t, data), 0o600); err != nil {
		t.Fatal(err)
	}
	if got, err := accounting.IngestSource(path); err != nil || got != accounting.FormatSacctJSON {
		t.Errorf("IngestSource = %q, %v; want %s", got, err, accounting.FormatSacctJSON)
	}
}
