package accounting

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/fairway-hpc/fairway/internal/shareddata"
)

// FuzzParseSacctJSON feeds `sacct --json` documents to the parser. Seeds
// are real: each job object of the 22.05 recording in testdata/ and, when
// the shared captures are present, of 24.11's and 26.05's sacct --json and
// slurmdb answers, each alone in a document (small inputs mutate faster
// than whole captures), plus the captures' error and empty answers.
//
//	go test -run '^$' -fuzz '^FuzzParseSacctJSON$' -fuzztime 10m -parallel 1 ./accounting
func FuzzParseSacctJSON(f *testing.F) {
	paths := []string{filepath.Join("testdata", "sacct-22.05.json")}
	if dir, err := shareddata.CapturesDir(); err == nil {
		for _, pat := range []string{"slurm-*/cli/sacct.json", "slurm-*/v0.0.*/slurmdb.job-*.json",
			"slurm-*/v0.0.*/slurmdb.jobs.nothing-found*.json", "slurm-*/v0.0.*/slurmdb.err.*.json"} {
			m, _ := filepath.Glob(filepath.Join(dir, pat))
			paths = append(paths, m...)
		}
	}
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		var doc struct {
			Jobs []json.RawMessage `json:"jobs"`
		}
		if err := json.Unmarshal(b, &doc); err != nil || len(doc.Jobs) == 0 || len(b) < 4096 {
			f.Add(b)
			continue
		}
		for i, j := range doc.Jobs {
			if i == 8 {
				break
			}
			f.Add([]byte(`{"jobs":[` + string(j) + `]}`))
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		doc, err := ParseSacctJSON("fuzz", data)
		if err != nil {
			return // a whole document refused, with its reason
		}
		if len(doc.Jobs) != len(doc.Where) {
			t.Fatalf("%d jobs but %d locations", len(doc.Jobs), len(doc.Where))
		}
		for _, e := range doc.Bad {
			if !errors.Is(e, ErrMalformed) {
				t.Fatalf("bad record %v does not wrap ErrMalformed", e)
			}
		}
		for _, j := range doc.Jobs {
			if j.ID <= 0 || j.Cluster == "" || j.Submit.IsZero() {
				t.Fatalf("job without id, cluster or submit time: %+v", j)
			}
			if j.CPUs < 0 || j.Nodes < 0 || j.GPUs < 0 || j.Shards < 0 || j.MemoryMB < 0 || j.TimeLimit < 0 || j.ArrayTask < -1 {
				t.Fatalf("job %d: impossible values: %+v", j.ID, j)
			}
		}
	})
}

// TestParseSacctJSON_HugeLimit: a time limit just under NO_VAL minutes
// once wrapped time.Duration into a negative limit; it is a bad record now.
func TestParseSacctJSON_HugeLimit(t *testing.T) {
	doc, err := ParseSacctJSON("t", []byte(`{"jobs":[{"job_id":7,"cluster":"c","time":{"submission":1700000000,"limit":4294967293},"state":{"current":"COMPLETED"}}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if len(doc.Jobs) != 0 || len(doc.Bad) != 1 {
		t.Fatalf("jobs %+v, bad %v; want one bad record", doc.Jobs, doc.Bad)
	}
}
