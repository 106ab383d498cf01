package slurmctl

import (
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

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

// Fuzz targets for the text readers of the slurm policy's settings:
// `scontrol show config`, `scontrol show partition -o`, `sacctmgr -nP show
// associations|qos` and a partition's TRES totals. Seeds are the recorded
// outputs in testdata/ (and, for the config, the shared captures' when
// present). Run one with
//
//	go test -run '^$' -fuzz '^FuzzParsePriorityConfig$' -fuzztime 10m -parallel 1 ./slurmctl

// readSeeds returns the files of testdata matching each pattern, with the
// shared captures' cli/ files matching shared when present.
func readSeeds(f *testing.F, patterns []string, shared string) [][]byte {
	f.Helper()
	var paths []string
	for _, pat := range patterns {
		m, err := filepath.Glob(filepath.Join("testdata", pat))
		if err != nil || len(m) == 0 {
			f.Fatalf("no seeds testdata/%s", pat)
		}
		paths = append(paths, m...)
	}
	if dir, err := shareddata.CapturesDir(); err == nil && shared != "" {
		m, _ := filepath.Glob(filepath.Join(dir, "slurm-*", "cli", shared))
		paths = append(paths, m...)
	}
	var out [][]byte
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		out = append(out, b)
	}
	return out
}

// checkPrefixErr checks that a reader's error starts by naming what it
// read, so that a message read alone says which output was wrong.
func checkPrefixErr(t *testing.T, prefix string, err error) {
	if !strings.HasPrefix(err.Error(), prefix) {
		t.Fatalf("error %q does not start with %q", err, prefix)
	}
}

func finiteIn(x, lo, hi float64) bool { return x >= lo && x <= hi } // NaN fails both

// FuzzParsePriorityConfig feeds `scontrol show config` output. Seeds: the
// lines ParsePriorityConfig reads (Priority*, SchedulerParameters,
// SchedulerType, FairShareDampeningFactor, BOOT_TIME) of every recorded
// config, 22.05.8 to 26.05.3, which mutate faster than the 7 kB files,
// and one whole file.
func FuzzParsePriorityConfig(f *testing.F) {
	seeds := readSeeds(f, []string{"config/scontrol-show-config-*.txt", "*/scontrol-show-config.txt"}, "scontrol-show-config.txt")
	f.Add(seeds[0])
	for _, b := range seeds {
		var lines []string
		for _, l := range strings.Split(string(b), "\n") {
			for _, k := range []string{"Priority", "Scheduler", "FairShareDampeningFactor", "BOOT_TIME"} {
				if strings.HasPrefix(l, k) {
					lines = append(lines, l)
					break
				}
			}
		}
		f.Add([]byte(strings.Join(lines, "\n") + "\n"))
	}
	f.Fuzz(func(t *testing.T, out []byte) {
		c, err := ParsePriorityConfig(out)
		if err != nil {
			checkPrefixErr(t, "scontrol show config: ", err)
			return
		}
		m := c.Multifactor
		if c.Type == "" {
			t.Fatal("accepted without a PriorityType")
		}
		for _, w := range []float64{m.WeightAge, m.WeightFairshare, m.WeightJobSize, m.WeightPartition, m.WeightQOS, m.WeightAssoc} {
			if !finiteIn(w, 0, math.MaxUint32) {
				t.Fatalf("weight %g out of range: %+v", w, m)
			}
		}
		for name, w := range m.WeightTRES {
			if name == "" || !finiteIn(w, math.SmallestNonzeroFloat64, math.MaxFloat64) {
				t.Fatalf("TRES weight %q=%g", name, w)
			}
		}
		// slurmctld keeps each in 32-bit seconds; bf_interval is at most 3 h
		const most = math.MaxUint32 * time.Second
		if m.MaxAge < 0 || c.CalcPeriod < 0 || c.BackfillInterval < 0 || (m.DecayHalfLife <= 0 && m.DecayHalfLife != -1) ||
			m.MaxAge > most || c.CalcPeriod > most || m.DecayHalfLife > most || c.BackfillInterval > 3*time.Hour {
			t.Fatalf("durations out of range: max age %v, calc period %v, backfill %v, half-life %v",
				m.MaxAge, c.CalcPeriod, c.BackfillInterval, m.DecayHalfLife)
		}
		if !finiteIn(m.Dampening, 0, math.MaxUint16) {
			t.Fatalf("dampening %g", m.Dampening)
		}
		if sum, _, _ := c.MaxMove(); !finiteIn(sum, 0, math.MaxFloat64) {
			t.Fatalf("MaxMove %g", sum)
		}
	})
}

// FuzzParseScontrolPartitions feeds `scontrol show partition -o` output
// to ParsePartitions (FuzzParsePartitions feeds slurmrestd's partitions
// answer to parsePartitions). Seeds: every recorded one, 22.05.8 to
// 26.05.3.
func FuzzParseScontrolPartitions(f *testing.F) {
	for _, b := range readSeeds(f, []string{"*/scontrol-show-partition-o*.txt", "sacctmgr-22.05.8/*/partitions.txt"}, "") {
		f.Add(b)
		f.Add(b[:len(b)*2/3]) // cut mid-line
	}
	f.Fuzz(func(t *testing.T, out []byte) {
		p, err := ParsePartitions(out)
		if err != nil {
			checkPrefixErr(t, "scontrol show partition -o: ", err)
			return
		}
		if len(p.Factor) == 0 || len(p.Factor) != len(p.TRES) {
			t.Fatalf("%d factors, %d TRES totals", len(p.Factor), len(p.TRES))
		}
		for name, x := range p.Factor {
			tres, ok := p.TRES[name]
			if !ok || !finiteIn(x, 0, math.MaxUint16) {
				t.Fatalf("partition %q: factor %g, TRES %v", name, x, tres)
			}
			checkTRESTotals(t, tres)
		}
		if _, ok := p.Factor[""]; ok && len(p.Factor) < 2 {
			t.Fatal("a default partition but no partition")
		}
	})
}

// checkTRESTotals checks what ParseTRESTotals promises of totals it
// accepts: names in lower case, counts from 0 to maxCount.
func checkTRESTotals(t *testing.T, tres map[string]float64) {
	for name, x := range tres {
		if name == "" || name != strings.ToLower(strings.TrimSpace(name)) || !finiteIn(x, 0, maxCount) {
			t.Fatalf("TRES %q=%g", name, x)
		}
	}
}

// FuzzParseTRESTotals feeds one TRES string to ParseTRESTotals. Seeds:
// the TRES= totals of every recorded `scontrol show partition -o` line and
// the TRES limits of the recorded `sacctmgr show qos|associations`.
func FuzzParseTRESTotals(f *testing.F) {
	for _, b := range readSeeds(f, []string{"*/scontrol-show-partition-o*.txt", "sacctmgr-22.05.8/*/*.txt"}, "") {
		for _, field := range strings.FieldsFunc(string(b), func(r rune) bool { return r == ' ' || r == '|' || r == '\n' }) {
			if v, ok := strings.CutPrefix(field, "TRES="); ok {
				f.Add(v)
			} else if strings.Contains(field, "=") && !strings.Contains(field, "Name=") {
				f.Add(field)
			}
		}
	}
	f.Fuzz(func(t *testing.T, tres string) {
		got, err := ParseTRESTotals(tres)
		if err != nil {
			checkPrefixErr(t, "TRES ", err)
			return
		}
		checkTRESTotals(t, got)
	})
}

// FuzzParseAssocPriorities feeds `sacctmgr -nP show associations
// format=Account,User,Partition,Priority` output. Seeds: the 25.11.7
// recording and, of another shape, 22.05.8's association limits.
func FuzzParseAssocPriorities(f *testing.F) {
	for _, b := range readSeeds(f, []string{"assoc-25.11.7/sacctmgr-show-associations.txt", "sacctmgr-22.05.8/*/associations.txt"}, "") {
		f.Add(b)
		f.Add(b[:len(b)*2/3])
	}
	f.Fuzz(func(t *testing.T, out []byte) {
		a, err := ParseAssocPriorities(out)
		if err != nil {
			checkPrefixErr(t, "sacctmgr show associations", err)
			return
		}
		if len(a.ByAssoc)+a.PerPartition == 0 || a.PerPartition < 0 || !finiteIn(a.Max, 0, math.MaxUint32) {
			t.Fatalf("%d associations, %d per partition, max %g", len(a.ByAssoc), a.PerPartition, a.Max)
		}
		for as, x := range a.ByAssoc {
			if as.Account == "" || !finiteIn(x, 0, a.Max) {
				t.Fatalf("association %+v: priority %g (max %g)", as, x, a.Max)
			}
		}
	})
}

// FuzzParseQOSPriorities feeds `sacctmgr -nP show qos format=Name,
// Priority` output. Seeds: the 26.05.3 recording and, of another shape,
// 22.05.8's QOS limits.
func FuzzParseQOSPriorities(f *testing.F) {
	for _, b := range readSeeds(f, []string{"qos-26.05.3/sacctmgr-show-qos.txt", "sacctmgr-22.05.8/*/qos.txt"}, "") {
		f.Add(b)
		f.Add(b[:len(b)*2/3])
	}
	f.Fuzz(func(t *testing.T, out []byte) {
		q, err := ParseQOSPriorities(out)
		if err != nil {
			checkPrefixErr(t, "sacctmgr show qos", err)
			return
		}
		if len(q) == 0 {
			t.Fatal("no QOS and no error")
		}
		for name, x := range q {
			if name == "" || !finiteIn(x, 0, math.MaxUint32) {
				t.Fatalf("QOS %q: priority %g", name, x)
			}
		}
	})
}
