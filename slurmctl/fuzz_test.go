package slurmctl

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fairway-hpc/fairway/internal/shareddata"
)

// Fuzz targets for the slurmrestd decoders and the GRES/TRES strings. The
// seeds are real answers: the v0.0.38 recordings in testdata/ (always) and,
// when the shared captures are present, the 24.11 and 26.05 ones of every
// version those releases serve. Run one with
//
//	go test -run '^$' -fuzz '^FuzzParseJobs$' -fuzztime 10m -parallel 1 ./slurmctl

// addCaptures adds as seeds the recorded files of testdata/v0.0.38 matching
// local and, when present, the shared captures matching shared in every
// version folder. It returns the API version of each seed in order.
func addCaptures(f *testing.F, local string, shared []string) []string {
	f.Helper()
	var versions []string
	add := func(path, version string) {
		b, err := os.ReadFile(path)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b, version == V0038)
		versions = append(versions, version)
	}
	paths, err := filepath.Glob(filepath.Join("testdata", V0038, local))
	if err != nil || len(paths) == 0 {
		f.Fatalf("no seeds %s in testdata/%s", local, V0038)
	}
	for _, p := range paths {
		add(p, V0038)
	}
	dir, err := shareddata.CapturesDir()
	if err != nil {
		return versions
	}
	for _, pat := range shared {
		paths, _ := filepath.Glob(filepath.Join(dir, "slurm-*", "v0.0.*", pat))
		for _, p := range paths {
			add(p, filepath.Base(filepath.Dir(p)))
		}
	}
	return versions
}

// checkEnvelopeErr checks what every decoder promises of a failure: it
// wraps ErrMalformed.
func checkEnvelopeErr(t *testing.T, what string, err error) {
	if !errors.Is(err, ErrMalformed) {
		t.Fatalf("%s: error %v does not wrap ErrMalformed", what, err)
	}
}

func FuzzParseJobs(f *testing.F) {
	addCaptures(f, "jobs*.json", []string{"job.*.json", "jobs-state.json", "err.job*.json"})
	f.Fuzz(func(t *testing.T, body []byte, _ bool) {
		jobs, _, err := parseJobs(body)
		if err != nil {
			checkEnvelopeErr(t, "jobs", err)
			return
		}
		for _, j := range jobs {
			if j.ID <= 0 || j.CPUs < 0 || j.Nodes < 0 || j.GPUs < 0 || j.Shards < 0 || j.MemoryMB < 0 ||
				j.TimeLimit < 0 || j.TaskCount < 1 || j.Priority < 0 {
				t.Fatalf("job %d: impossible values: %+v", j.ID, j)
			}
			for _, g := range j.GRESAlloc {
				if g.Count < 0 {
					t.Fatalf("job %d: negative GRES %+v", j.ID, g)
				}
			}
		}
	})
}

func FuzzParseNodes(f *testing.F) {
	addCaptures(f, "nodes*.json", []string{"nodes.json"})
	f.Fuzz(func(t *testing.T, body []byte, _ bool) {
		nodes, _, err := parseNodes(body)
		if err != nil {
			checkEnvelopeErr(t, "nodes", err)
			return
		}
		for _, n := range nodes {
			if n.CPUs < 0 || n.AllocCPUs < 0 || n.MemoryMB < 0 || n.AllocMemMB < 0 ||
				n.GPUs < 0 || n.Shards < 0 || n.AllocGPUs < 0 || n.AllocShards < 0 {
				t.Fatalf("node %s: impossible values: %+v", n.Name, n)
			}
		}
	})
}

func FuzzParsePartitions(f *testing.F) {
	addCaptures(f, "partitions*.json", []string{"partitions.json"})
	f.Fuzz(func(t *testing.T, body []byte, v38 bool) {
		version := "v0.0.41"
		if v38 {
			version = V0038
		}
		parts, _, err := parsePartitions(body, version)
		if err != nil {
			checkEnvelopeErr(t, "partitions", err)
			return
		}
		for _, p := range parts {
			if p.TotalCPUs < 0 || p.TotalNode < 0 || p.GPUs < 0 || p.Shards < 0 || p.MaxTime < 0 {
				t.Fatalf("partition %s: impossible values: %+v", p.Name, p)
			}
		}
	})
}

// FuzzGRES feeds one string to every GRES and TRES reader: the spellings
// of tres_per_*, gres_detail, a node's gres and gres_used, and TRES strings.
func FuzzGRES(f *testing.F) {
	for _, s := range []string{
		"gres:gpu:h100:2", "gres/gpu:h100:2", "gres/gpu=4", "gpu:h100:2(IDX:0-1)", "gpu:h100:4,shard:16",
		"gpu:h100:2(IDX:0,2),shard:h100:0(4/16,0/16,0/16,0/16)", "cpu=2,mem=4G,node=2,billing=2,gres/gpu=4,gres/gpu:h100=4",
		"cpu=1,mem=2000M,node=1,billing=1,gres/shard=2", "gpu:1k", "gres/gpu:h100:2(IDX:0-9:3)", "N/A", "(null)",
		"mem=1.5T", "mem=512K", "gpu:4(S:0-1)",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		terms, err := ParseGRES(s)
		if err == nil {
			for _, g := range terms {
				if g.Count < 0 || g.Name == "" {
					t.Fatalf("ParseGRES(%q): bad term %+v", s, g)
				}
				for _, i := range g.Index {
					if i < 0 {
						t.Fatalf("ParseGRES(%q): negative index in %+v", s, g)
					}
				}
			}
			for _, mult := range []int64{1, 4} {
				if gpus, shards, _, err := gresTotals(terms, mult); err == nil && (gpus < 0 || shards < 0) {
					t.Fatalf("gresTotals(%q, %d) = %d gpus, %d shards", s, mult, gpus, shards)
				}
			}
		}
		if gpus, shards, _, err := tresTotals(s); err == nil && (gpus < 0 || shards < 0) {
			t.Fatalf("tresTotals(%q) = %d gpus, %d shards", s, gpus, shards)
		}
		if mb, ok := tresMemoryMB(s); ok && mb < 0 {
			t.Fatalf("tresMemoryMB(%q) = %d", s, mb)
		}
		if !strings.Contains(s, ",") {
			if n, err := countRanges(s); err == nil {
				if n < 0 {
					t.Fatalf("countRanges(%q) = %d", s, n)
				}
				if n <= 1<<16 {
					idx, err := parseRanges(s)
					if err != nil || len(idx) != n {
						t.Fatalf("parseRanges(%q) = %d indices, %v; countRanges says %d", s, len(idx), err, n)
					}
				}
			}
		}
	})
}

// TestGRES_Overflow holds the inputs that once came out of the GRES and
// TRES readers as negative counts, garbage memory or a loop that never
// ended; each is now an error or "no value".
func TestGRES_Overflow(t *testing.T) {
	for _, s := range []string{
		"gpu:9223372036854775807k",                          // count × 1024 wrapped to -1024
		"gres/gpu:a=1099511627776,gres/gpu:b=1099511627776", // typed totals beyond any count
	} {
		if _, _, _, err := tresTotals(s); err == nil {
			t.Errorf("tresTotals(%q): want an error", s)
		}
	}
	if _, err := ParseGRES("gpu:9223372036854775807k"); err == nil {
		t.Error("ParseGRES(gpu:9223372036854775807k): want an error")
	}
	g, err := ParseGRES("gpu:9223372036854775807")
	if err == nil {
		if _, _, _, err := gresTotals(g, 4); err == nil {
			t.Error("gresTotals(gpu:2^63-1, ×4): want an error, not a wrapped product")
		}
	}
	for _, s := range []string{"mem=1e300G", "mem=NaN", "mem=-5M", "mem=+InfM"} {
		if mb, ok := tresMemoryMB(s); ok {
			t.Errorf("tresMemoryMB(%q) = %d, true; want no value", s, mb)
		}
	}
	for _, s := range []string{"0-9223372036854775807", "0-4194303,0-4194303"} {
		if n, err := countRanges(s); err == nil {
			t.Errorf("countRanges(%q) = %d; want an error", s, n)
		}
	}
	// a range ending at MaxInt: i += step used to wrap and never end
	if idx, err := parseRanges("9223372036854775807"); err != nil || len(idx) != 1 {
		t.Errorf("parseRanges(MaxInt) = %d indices, %v; want 1", len(idx), err)
	}
}

// withField returns a recorded answer with one field of its record i
// (under key list) replaced: the real bytes of every other field stay.
func withField(t *testing.T, file, list string, i int, key string, value any) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", V0038, file))
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	var recs []map[string]json.RawMessage
	if err := json.Unmarshal(doc[list], &recs); err != nil {
		t.Fatal(err)
	}
	if recs[i][key], err = json.Marshal(value); err != nil {
		t.Fatal(err)
	}
	if doc[list], err = json.Marshal(recs); err != nil {
		t.Fatal(err)
	}
	if b, err = json.Marshal(doc); err != nil {
		t.Fatal(err)
	}
	return b
}

// TestDecoders_OutOfRange: values no slurmctld sends, which once came out
// as negative counts or a negative time limit (wrapped time.Duration), are
// refused with ErrMalformed naming the field.
func TestDecoders_OutOfRange(t *testing.T) {
	for _, tc := range []struct {
		key   string
		value any
		want  string
	}{
		{"time_limit", int64(1) << 40, "time_limit"},
		{"cpus", -3, "cpus"}, // -2 is NO_VAL64
		{"node_count", -1, "node_count"},
		{"memory_per_cpu", int64(1) << 41, "memory_per_cpu"},
		{"tres_per_node", "gres:shard:1099511627777", "more than"},
	} {
		// record 4 is a pending job: its request counts, not gres_detail
		_, _, err := parseJobs(withField(t, "jobs.200.json", "jobs", 4, tc.key, tc.value))
		if !errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("job %s=%v: got %v, want ErrMalformed naming %q", tc.key, tc.value, err, tc.want)
		}
	}
	for _, tc := range []struct {
		key   string
		value any
	}{{"cpus", -8}, {"real_memory", -3}, {"gres", "gpu:h100:1099511627777"}} {
		if _, _, err := parseNodes(withField(t, "nodes.200.json", "nodes", 0, tc.key, tc.value)); !errors.Is(err, ErrMalformed) {
			t.Errorf("node %s=%v: got %v, want ErrMalformed", tc.key, tc.value, err)
		}
	}
	if _, _, err := parsePartitions(withField(t, "partitions.200.json", "partitions", 0, "max_time_limit", int64(1)<<40), V0038); !errors.Is(err, ErrMalformed) {
		t.Errorf("partition max_time_limit 2^40 min: got %v, want ErrMalformed", err)
	}
}
