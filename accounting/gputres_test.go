package accounting_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/fairway-hpc/fairway/accounting"
	"github.com/fairway-hpc/fairway/internal/shareddata"
	"github.com/google/go-cmp/cmp"
)

// TestParseSacctJSON_GPUTRES reads job 1 of 26.05.3's real `sacct --json`
// (gres/gpu=1) with its GPU TRES replaced the ways other sites' accounting
// records them: AccountingStorageTRES may list typed GPUs with or without
// the untyped total, in any order. The untyped total counts once; without
// one the typed counts add up (two types: 3 GPUs, not the first type's 1),
// and the type is the first, as slurmctl reads tres_alloc_str, so the
// record serve stored from slurmctld is not overwritten by a different one
// from slurmdbd.
func TestParseSacctJSON_GPUTRES(t *testing.T) {
	root := shareddata.Dir(t, "data", "slurmrestd")
	body, err := os.ReadFile(filepath.Join(root, "slurm-26.05.3", "cli", "sacct.json"))
	if err != nil {
		t.Fatal(err)
	}
	type gres struct {
		GPUs    int
		GPUType string
		Shards  int
	}
	g := func(name string, n int) map[string]any {
		return map[string]any{"type": "gres", "name": name, "id": 1000 + n, "count": n}
	}
	for _, tc := range []struct {
		name string
		tres []map[string]any
		want gres
	}{
		{"captured", nil, gres{1, "", 0}},
		{"typed only", []map[string]any{g("gpu:h100", 2)}, gres{2, "h100", 0}},
		{"untyped then typed", []map[string]any{g("gpu", 2), g("gpu:h100", 2)}, gres{2, "h100", 0}},
		{"typed then untyped", []map[string]any{g("gpu:h100", 2), g("gpu", 2)}, gres{2, "h100", 0}},
		{"two types", []map[string]any{g("gpu:h100", 1), g("gpu:a100", 2)}, gres{3, "h100", 0}},
		{"two types and total", []map[string]any{g("gpu:h100", 1), g("gpu:a100", 2), g("gpu", 3)}, gres{3, "h100", 0}},
		{"shards typed and untyped", []map[string]any{g("shard", 4), g("shard:h100", 4)}, gres{0, "", 4}},
		{"shards of two types", []map[string]any{g("shard:h100", 4), g("shard:a100", 2)}, gres{0, "", 6}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var doc map[string]any
			if err := json.Unmarshal(body, &doc); err != nil {
				t.Fatal(err)
			}
			for _, ji := range doc["jobs"].([]any) {
				j := ji.(map[string]any)
				if j["job_id"].(float64) != 1 || tc.tres == nil {
					continue
				}
				tr := j["tres"].(map[string]any)
				var kept []any
				for _, r := range tr["allocated"].([]any) {
					if r.(map[string]any)["type"] != "gres" {
						kept = append(kept, r)
					}
				}
				for _, r := range tc.tres {
					kept = append(kept, r)
				}
				tr["allocated"] = kept
			}
			in, err := json.Marshal(doc)
			if err != nil {
				t.Fatal(err)
			}
			parsed, err := accounting.ParseSacctJSON("sacct.json", in)
			if err != nil || len(parsed.Bad) != 0 {
				t.Fatalf("%v, bad %v", err, parsed.Bad)
			}
			for _, j := range parsed.Jobs {
				if j.ID == 1 {
					if diff := cmp.Diff(tc.want, gres{j.GPUs, j.GPUType, j.Shards}); diff != "" {
						t.Errorf("job 1 (-want +got):\n%s", diff)
					}
				}
			}
		})
	}
}
