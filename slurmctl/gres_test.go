package slurmctl

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseGRES_Forms(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []GRES
	}{
		// 22.05 request strings (tres_per_node, tres_per_job, tres_per_task)
		{"gres:gpu:h100:2", []GRES{{Name: "gpu", Type: "h100", Count: 2}}},
		{"gres:gpu:1", []GRES{{Name: "gpu", Count: 1}}},
		{"gres:shard:3", []GRES{{Name: "shard", Count: 3}}},
		{"gres:gpu", []GRES{{Name: "gpu", Count: 1}}},
		{"gres:gpu:2,gres:shard:4", []GRES{{Name: "gpu", Count: 2}, {Name: "shard", Count: 4}}},
		// 23.x and later spell them with a slash
		{"gres/gpu:a100:2", []GRES{{Name: "gpu", Type: "a100", Count: 2}}},
		{"gres/shard:3", []GRES{{Name: "shard", Count: 3}}},
		// allocations (gres_detail, gres_used)
		{"gpu:h100:2(IDX:0-1)", []GRES{{Name: "gpu", Type: "h100", Count: 2, Index: []int{0, 1}}}},
		{"gpu:h100:3(IDX:0,2-3)", []GRES{{Name: "gpu", Type: "h100", Count: 3, Index: []int{0, 2, 3}}}},
		{"shard:3(IDX:0)", []GRES{{Name: "shard", Count: 3, Index: []int{0}}}},
		{"gpu:h100:0(IDX:N/A),shard:h100:0(IDX:N/A)", []GRES{{Name: "gpu", Type: "h100"}, {Name: "shard", Type: "h100"}}},
		{"gpu:h100:4(S:0-1)", []GRES{{Name: "gpu", Type: "h100", Count: 4}}},
		// node configuration
		{"gpu:h100:4,shard:h100:16", []GRES{{Name: "gpu", Type: "h100", Count: 4}, {Name: "shard", Type: "h100", Count: 16}}},
		// TRES strings: other TRES are skipped
		{"cpu=2,mem=4G,node=2,billing=2,gres/gpu=4", []GRES{{Name: "gpu", Count: 4}}},
		{"cpu=1,gres/gpu=2,gres/gpu:h100=2,license/matlab=1", []GRES{{Name: "gpu", Count: 2}, {Name: "gpu", Type: "h100", Count: 2}}},
		// a numeric type needs its count, as in Slurm
		{"gpu:3090:2", []GRES{{Name: "gpu", Type: "3090", Count: 2}}},
		{"mps:100k", []GRES{{Name: "mps", Count: 100 << 10}}},
		{"", nil},
		{"N/A", nil},
		{"(null)", nil},
	} {
		t.Run(tc.in, func(t *testing.T) {
			got, err := ParseGRES(tc.in)
			if err != nil {
				t.Fatalf("ParseGRES(%q): %v", tc.in, err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("ParseGRES(%q) (-want +got):\n%s", tc.in, diff)
			}
		})
	}
}

func TestParseGRES_Errors(t *testing.T) {
	for _, in := range []string{"gpu:h100:2(IDX:0-1", "gpu:2(IDX:3-1)", "gres/gpu=x", ":2", "gpu:2(IDX:a)"} {
		if got, err := ParseGRES(in); err == nil {
			t.Errorf("ParseGRES(%q) = %v, want an error", in, got)
		}
	}
}

func TestTresTotals_TypedAndUntyped(t *testing.T) {
	for _, tc := range []struct {
		in           string
		gpus, shards int64
		typ          string
	}{
		{"cpu=2,mem=4G,node=2,billing=2,gres/gpu=4", 4, 0, ""},
		{"cpu=1,gres/gpu=2,gres/gpu:h100=2", 2, 0, "h100"}, // untyped total wins, not 4
		{"cpu=1,gres/gpu:h100=1,gres/gpu:a100=2", 3, 0, "h100"},
		{"cpu=2,mem=2000M,node=1,billing=2,gres/shard=3", 0, 3, ""},
		{"cpu=1,mem=1000M", 0, 0, ""},
	} {
		g, s, typ, err := tresTotals(tc.in)
		if err != nil || g != tc.gpus || s != tc.shards || typ != tc.typ {
			t.Errorf("tresTotals(%q) = %d, %d, %q, %v; want %d, %d, %q", tc.in, g, s, typ, err, tc.gpus, tc.shards, tc.typ)
		}
	}
}

func TestTresMemoryMB_Units(t *testing.T) {
	for in, want := range map[string]int64{
		"cpu=2,mem=4G,node=2": 4096,
		"cpu=2,mem=2000M":     2000,
		"mem=1.5G":            1536,
		"mem=1T":              1 << 20,
		"mem=2048K":           2,
	} {
		if got, ok := tresMemoryMB(in); !ok || got != want {
			t.Errorf("tresMemoryMB(%q) = %d, %v; want %d", in, got, ok, want)
		}
	}
	if _, ok := tresMemoryMB("cpu=1"); ok {
		t.Error("tresMemoryMB without mem= reported a value")
	}
}

func TestCountRanges_ArrayExpressions(t *testing.T) {
	for in, want := range map[string]int{"2-4": 3, "0-9": 10, "0-2,4-5": 5, "0-9:2": 5, "7": 1, "0-999": 1000} {
		if got, err := countRanges(in); err != nil || got != want {
			t.Errorf("countRanges(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
}
