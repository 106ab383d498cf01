package accounting_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fairway-hpc/fairway/accounting"
	"github.com/fairway-hpc/fairway/internal/shareddata"
)

// TestImport_CountsBeyondColumns imports sacct's real answer with one count
// of job 1 changed to more than its int32 column holds (a corrupt record,
// or a Slurm marker such as NO_VAL read as a count). Before, the value
// wrapped silently (3e9 CPUs stored as -1294967296, array task 3e9 as a
// negative key): the job must be rejected with its reason instead, and
// the other jobs stored.
func TestImport_CountsBeyondColumns(t *testing.T) {
	root := shareddata.Dir(t, "data", "slurmrestd")
	body, err := os.ReadFile(filepath.Join(root, "slurm-26.05.3", "cli", "sacct.json"))
	if err != nil {
		t.Fatal(err)
	}
	tres := func(typ, name string, n float64) func(j map[string]any) {
		return func(j map[string]any) {
			tr := j["tres"].(map[string]any)
			tr["allocated"] = append(tr["allocated"].([]any), map[string]any{"type": typ, "name": name, "id": 9, "count": n})
		}
	}
	for _, tc := range []struct {
		name   string
		change func(j map[string]any)
		want   string
	}{
		{"cpus", func(j map[string]any) {
			for _, r := range j["tres"].(map[string]any)["allocated"].([]any) {
				if r := r.(map[string]any); r["type"] == "cpu" {
					r["count"] = 3e9
				}
			}
		}, "cpus 3000000000"},
		{"gpus NO_VAL", func(j map[string]any) {
			for _, r := range j["tres"].(map[string]any)["allocated"].([]any) {
				if r := r.(map[string]any); r["name"] == "gpu" {
					r["count"] = 4294967294.0
				}
			}
		}, "gpus 4294967294"},
		{"shards", tres("gres", "shard", 1<<33), "shards 8589934592"},
		{"array task", func(j map[string]any) {
			j["array"].(map[string]any)["job_id"] = 1
			j["array"].(map[string]any)["task_id"] = map[string]any{"set": true, "infinite": false, "number": 3e9}
		}, "array task 3000000000"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var doc map[string]any
			if err := json.Unmarshal(body, &doc); err != nil {
				t.Fatal(err)
			}
			for _, ji := range doc["jobs"].([]any) {
				if j := ji.(map[string]any); j["job_id"].(float64) == 1 {
					tc.change(j)
				}
			}
			in, err := json.Marshal(doc)
			if err != nil {
				t.Fatal(err)
			}
			store, pool := freshStore(t)
			sum, _, err := store.ImportFile(context.Background(), strings.NewReader(string(in)),
				accounting.FileImport{Format: accounting.FormatSacctJSON, Name: "sacct.json", SkipBad: true})
			if err != nil {
				t.Fatal(err)
			}
			if sum.Rejected != 1 || len(sum.Rejects) != 1 || !strings.Contains(sum.Rejects[0].Error(), tc.want) {
				t.Errorf("rejected %d: %v; want job 1, for %q", sum.Rejected, sum.Rejects, tc.want)
			}
			if n := countRows(t, pool, `SELECT count(*) FROM job WHERE job_id = 1 OR cpus < 0 OR gpus < 0 OR shards < 0 OR array_task < -1`); n != 0 {
				t.Errorf("%d rows of job 1 or with negative counts stored, want none", n)
			}
		})
	}
}
