package sim

import (
	"strings"
	"testing"

	"github.com/fairway-hpc/fairway/policy"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// partJob is smJob in partition part asking for GPU type typ.
func partJob(id int64, part, typ string, submit float64, units int, run, limit float64) policy.Job {
	j := smJob(id, "u", submit, units, run, limit)
	j.Partition, j.GPUType = part, typ
	return j
}

func partCluster(t *testing.T, spec string) Cluster {
	t.Helper()
	l, err := ParseLayout(spec)
	if err != nil {
		t.Fatal(err)
	}
	return Cluster{Unit: GPUs}.WithLayout(l)
}

// TestRun_Partitions replays hand-made queues under FIFO on partitioned
// clusters; each case runs through the kept order (static keys) and
// through full cycles (OnCycle set), which must agree.
func TestRun_Partitions(t *testing.T) {
	tests := []struct {
		name     string
		spec     string
		backfill Backfill
		jobs     []policy.Job
		want     map[int64]float64
	}{{
		// Job 2 waits for partition a's node although b's is free; job 3
		// (b) starts at once; job 4 names no partition: the default, a.
		name: "own partition",
		spec: "a:nodes=1,per-node=4;b:nodes=1,per-node=4",
		jobs: []policy.Job{
			partJob(1, "a", "", 0, 4, 100, 100),
			partJob(2, "a", "", 1, 4, 10, 10),
			partJob(3, "b", "", 2, 4, 10, 10),
			partJob(4, "", "", 3, 4, 10, 10),
		},
		want: map[int64]float64{1: 0, 2: 100, 3: 2, 4: 110},
	}, {
		// Node 0 is in a and b, node 1 only in b: job 2 (b) takes node 1,
		// job 3 (b) waits for it (node 0 is job 1's), job 4 (a) for node 0.
		name: "overlapping",
		spec: "a+b:nodes=1,per-node=4;b:nodes=1,per-node=4",
		jobs: []policy.Job{
			partJob(1, "a", "", 0, 4, 100, 100),
			partJob(2, "b", "", 1, 4, 50, 50),
			partJob(3, "b", "", 2, 4, 10, 10),
			partJob(4, "a", "", 3, 4, 10, 10),
		},
		want: map[int64]float64{1: 0, 2: 1, 3: 51, 4: 100},
	}, {
		name: "overlapping by of=",
		spec: "a:nodes=1,per-node=4;bonly:nodes=1,per-node=4;b:of=a+bonly",
		jobs: []policy.Job{
			partJob(1, "a", "", 0, 4, 100, 100),
			partJob(2, "b", "", 1, 4, 50, 50),
			partJob(3, "b", "", 2, 4, 10, 10),
			partJob(4, "a", "", 3, 4, 10, 10),
		},
		want: map[int64]float64{1: 0, 2: 1, 3: 51, 4: 100},
	}, {
		// Node 0 is only a's, node 1 a's and b's. All three arrive at
		// once: job 1 takes node 0, job 2 (ranked second, b) node 1, and
		// job 3 (a) waits, though a's pass alone would have given it
		// node 1 first: the priority order runs across partitions.
		name: "priority across overlapping partitions",
		spec: "a:nodes=1,per-node=4;a+b:nodes=1,per-node=4",
		jobs: []policy.Job{
			partJob(1, "a", "", 0, 4, 100, 100),
			partJob(2, "b", "", 0, 4, 50, 50),
			partJob(3, "a", "", 0, 4, 10, 10),
		},
		want: map[int64]float64{1: 0, 2: 0, 3: 50},
	}, {
		// A comma-separated list runs in the first partition the cluster has.
		name: "partition list",
		spec: "a:nodes=1,per-node=4;b:nodes=1,per-node=4",
		jobs: []policy.Job{
			partJob(1, "b", "", 0, 4, 100, 100),
			partJob(2, "x,b,a", "", 1, 4, 10, 10),
		},
		want: map[int64]float64{1: 0, 2: 100},
	}, {
		// Job 2 wants an H100 and waits for job 1's although the V100
		// node is free; job 3 asks for no type and takes the V100; job 4
		// wants a V100 and waits for job 3.
		name: "GPU types",
		spec: "gpu:nodes=1,per-node=8,type=v100;gpu:nodes=1,per-node=8,type=h100",
		jobs: []policy.Job{
			partJob(1, "gpu", "h100", 0, 8, 100, 100),
			partJob(2, "gpu", "h100", 1, 8, 10, 10),
			partJob(3, "gpu", "", 2, 8, 10, 10),
			partJob(4, "gpu", "v100", 3, 8, 10, 10),
		},
		want: map[int64]float64{1: 0, 2: 100, 3: 2, 4: 12},
	}, {
		// Without backfill a job blocked on its GPU type blocks its whole
		// partition: job 3, untyped and ranked after job 2 (blocked on
		// the h100 node job 1 half holds), waits behind it instead of
		// taking the node's free half and holding job 2 off until 1002.
		name:     "GPU type blocks its partition",
		spec:     "gpu:nodes=1,per-node=8,type=h100",
		backfill: NoBackfill,
		jobs: []policy.Job{
			partJob(1, "gpu", "", 0, 4, 100, 100),
			partJob(2, "gpu", "h100", 1, 8, 10, 10),
			partJob(3, "gpu", "", 2, 4, 1000, 1000),
		},
		want: map[int64]float64{1: 0, 2: 100, 3: 110},
	}, {
		// Nor does a blocked job of one type hold back the free nodes of
		// another type under EASY: job 3 (v100), behind job 2 (a100,
		// blocked), starts in its own type's pass at once.
		name: "GPU types plan apart under EASY",
		spec: "gpu:nodes=1,per-node=8,type=a100;gpu:nodes=1,per-node=8,type=v100",
		jobs: []policy.Job{
			partJob(1, "gpu", "a100", 0, 8, 100, 100),
			partJob(2, "gpu", "a100", 1, 8, 10, 10),
			partJob(3, "gpu", "v100", 2, 8, 10, 1000),
		},
		want: map[int64]float64{1: 0, 2: 100, 3: 2},
	}, {
		// Job 3 heads the queue, blocked in a (reserved at 100); b has
		// its own reservation for job 4 at 50, when job 2's limit ends.
		// Job 5 backfills in b, ending (by its limit, 43) before b's
		// reservation; job 6 would not, and waits.
		name:     "EASY per partition",
		spec:     "a:nodes=1,per-node=4;b:nodes=1,per-node=4",
		backfill: EASY,
		jobs: []policy.Job{
			partJob(1, "a", "", 0, 4, 100, 100),
			partJob(2, "b", "", 0, 2, 50, 50),
			partJob(3, "a", "", 1, 4, 10, 10),
			partJob(4, "b", "", 2, 4, 100, 100),
			partJob(5, "b", "", 3, 2, 10, 40),
			partJob(6, "b", "", 4, 2, 10, 100),
		},
		want: map[int64]float64{1: 0, 2: 0, 3: 100, 4: 50, 5: 3, 6: 150},
	}, {
		// Without backfill b's queue stops at its own blocked head, not
		// at a's.
		name:     "no backfill per partition",
		spec:     "a:nodes=1,per-node=4;b:nodes=1,per-node=4",
		backfill: NoBackfill,
		jobs: []policy.Job{
			partJob(1, "a", "", 0, 4, 100, 100),
			partJob(2, "b", "", 0, 2, 50, 50),
			partJob(3, "a", "", 1, 4, 10, 10),
			partJob(4, "b", "", 2, 4, 100, 100),
			partJob(5, "b", "", 3, 2, 10, 40),
			partJob(6, "a", "", 4, 2, 10, 100),
		},
		want: map[int64]float64{1: 0, 2: 0, 3: 100, 4: 50, 5: 150, 6: 110},
	}, {
		// A job larger than one node takes whole nodes of its partition.
		name: "multi-node",
		spec: "a:nodes=2,per-node=4;b:nodes=2,per-node=4",
		jobs: []policy.Job{
			partJob(1, "b", "", 0, 2, 100, 100),
			partJob(2, "a", "", 1, 8, 10, 10),
			partJob(3, "b", "", 2, 8, 10, 10),
		},
		want: map[int64]float64{1: 0, 2: 1, 3: 100},
	}}
	for _, tt := range tests {
		for _, full := range []bool{false, true} {
			name := tt.name
			if full {
				name += "/full cycles"
			}
			t.Run(name, func(t *testing.T) {
				cfg := Config{Cluster: partCluster(t, tt.spec), Policy: smPolicy(t, "fifo", nil), Backfill: tt.backfill}
				if full {
					cfg.OnCycle = func(*policy.Observation, *policy.Snapshot, []policy.Score) {}
				}
				got, res := smStarts(t, tt.jobs, cfg)
				if diff := cmp.Diff(tt.want, got); diff != "" {
					t.Errorf("starts (-want +got):\n%s", diff)
				}
				if len(res.Skipped) != 0 {
					t.Errorf("skipped %v, want none", res.Skipped)
				}
			})
		}
	}
}

// TestRun_PartitionsUnroutable leaves out, counted under a reason naming
// the partition or type, the jobs no node of the cluster can ever run.
func TestRun_PartitionsUnroutable(t *testing.T) {
	jobs := []policy.Job{
		partJob(1, "gpu", "v100", 0, 8, 10, 10),
		partJob(2, "cpu", "", 0, 1, 10, 10),
		partJob(3, "cpu", "", 1, 1, 10, 10),
		partJob(4, "gpu", "a100", 0, 1, 10, 10),
		partJob(5, "debug", "", 0, 16, 10, 10),
		partJob(6, "gpu", "", 0, 16, 10, 10),
	}
	cfg := Config{Cluster: partCluster(t, "gpu:nodes=2,per-node=8,type=v100;debug:nodes=1,per-node=8"), Policy: smPolicy(t, "fifo", nil)}
	got, res := smStarts(t, jobs, cfg)
	want := map[string]int{
		`partition "cpu" not in the cluster`: 2,
		`no a100 node in partition "gpu"`:    1,
		`larger than partition "debug"`:      1,
	}
	if diff := cmp.Diff(want, res.Skipped); diff != "" {
		t.Errorf("skipped (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[int64]float64{1: 0, 6: 10}, got); diff != "" {
		t.Errorf("starts (-want +got):\n%s", diff)
	}
}

// TestRun_PartitionList: a job submitted to several partitions (-p a,b)
// runs in the first of them whose nodes can run it, as Slurm would start
// it in any; it is left out only when none can, under the first one's
// reason.
func TestRun_PartitionList(t *testing.T) {
	const spec = "gpu:nodes=1,per-node=8,type=v100;gpuhi:nodes=1,per-node=8,type=h100;small:nodes=1,per-node=2"
	tests := []struct {
		name        string
		jobs        []policy.Job
		want        map[int64]float64
		wantSkipped map[string]int
	}{{
		// gpu has no h100 node; gpuhi, listed second, has one.
		name: "type only in a later partition",
		jobs: []policy.Job{partJob(1, "gpu,gpuhi", "h100", 0, 4, 10, 10)},
		want: map[int64]float64{1: 0},
	}, {
		// small's one node is too small; gpu's holds it.
		name: "size only in a later partition",
		jobs: []policy.Job{partJob(1, "small,gpu", "", 0, 8, 10, 10)},
		want: map[int64]float64{1: 0},
	}, {
		// Both can: the first listed, gpu, which job 1 holds until 100,
		// though gpuhi is free (a job runs in one partition's view).
		name: "first that can",
		jobs: []policy.Job{
			partJob(1, "gpu", "", 0, 8, 100, 100),
			partJob(2, "gpu,gpuhi", "", 1, 8, 10, 10),
		},
		want: map[int64]float64{1: 0, 2: 100},
	}, {
		name:        "none can: the first one's reason",
		jobs:        []policy.Job{partJob(1, "gpu", "", 0, 1, 10, 10), partJob(2, "nope,small,gpu", "a100", 0, 4, 10, 10)},
		want:        map[int64]float64{1: 0},
		wantSkipped: map[string]int{`no a100 node in partition "small"`: 1},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := partCluster(t, spec)
			got, res := smStarts(t, tt.jobs, Config{Cluster: c, Policy: smPolicy(t, "fifo", nil)})
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("starts (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantSkipped, res.Skipped, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("skipped (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantSkipped, Unroutable(tt.jobs, c), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("Unroutable (-want +got):\n%s", diff)
			}
		})
	}
}

// TestRun_PartitionsRefused names what a partitioned cluster does not
// model.
func TestRun_PartitionsRefused(t *testing.T) {
	c := partCluster(t, "a:nodes=1,per-node=4")
	jobs := []policy.Job{partJob(1, "a", "", 0, 1, 10, 10)}
	_, err := Run(jobs, Config{Cluster: c, Policy: smPolicy(t, "fifo", nil), Preempt: true})
	if err == nil || !strings.Contains(err.Error(), "preemption on a partitioned cluster") {
		t.Errorf("preempt: err %v, want preemption on a partitioned cluster", err)
	}
	bad := c
	bad.Nodes = 3
	if _, err := Run(jobs, Config{Cluster: bad, Policy: smPolicy(t, "fifo", nil)}); err == nil || !strings.Contains(err.Error(), "does not match its layout") {
		t.Errorf("mismatched cluster: err %v, want does not match its layout", err)
	}
}

func TestParseLayout(t *testing.T) {
	tests := []struct {
		spec, want string
	}{
		{"gpu:nodes=120,per-node=8,type=v100;debug:nodes=4,per-node=8", "gpu:nodes=120,per-node=8,type=v100;debug:nodes=4,per-node=8"},
		{"gpu:nodes=2,per-node=8,type=v100\ngpu:nodes=1,per-node=4,type=a100 # small\n\n  debug:nodes=1,per-node=8 ;",
			"gpu:nodes=2,per-node=8,type=v100;gpu:nodes=1,per-node=4,type=a100;debug:nodes=1,per-node=8"},
		{"a:nodes=1,per-node=4;b:nodes=2,per-node=4;all:of=a+b", "a+all:nodes=1,per-node=4;b+all:nodes=2,per-node=4"},
		{"a+b:nodes=1, per-node = 4", "a+b:nodes=1,per-node=4"},
	}
	for _, tt := range tests {
		l, err := ParseLayout(tt.spec)
		if err != nil {
			t.Errorf("ParseLayout(%q): %v", tt.spec, err)
			continue
		}
		if got := l.String(); got != tt.want {
			t.Errorf("ParseLayout(%q) = %q, want %q", tt.spec, got, tt.want)
		}
	}
	l, err := ParseLayout("b:nodes=1,per-node=4;a:nodes=1,per-node=8")
	if err != nil {
		t.Fatal(err)
	}
	if c := (Cluster{Unit: GPUs}).WithLayout(l); c.Capacity() != 12 || c.Nodes != 2 || c.PerNode != 8 || l.Partitions[0] != "b" {
		t.Errorf("cluster %d × %d (capacity %d), partitions %v: want 2 × 8 (12), the default b first", c.Nodes, c.PerNode, c.Capacity(), l.Partitions)
	}
}

// TestParseLayout_UnionOrder: an of= union takes the nodes its partitions
// were given by nodes= entries, whatever the order of the entries, so a
// union on a partition another union adds to reads the same either way.
func TestParseLayout_UnionOrder(t *testing.T) {
	tests := []struct {
		name  string
		specs []string
		want  string
	}{{
		name: "union of a partition that is itself widened",
		specs: []string{
			"a:nodes=1,per-node=4;b:nodes=1,per-node=8;a:of=b;c:of=a",
			"a:nodes=1,per-node=4;b:nodes=1,per-node=8;c:of=a;a:of=b",
		},
		want: "a+c:nodes=1,per-node=4;a+b:nodes=1,per-node=8",
	}, {
		name: "unions of each other",
		specs: []string{
			"a:nodes=1,per-node=4;b:nodes=1,per-node=8;a:of=b;b:of=a",
			"a:nodes=1,per-node=4;b:nodes=1,per-node=8;b:of=a;a:of=b",
		},
		want: "a+b:nodes=1,per-node=4;a+b:nodes=1,per-node=8",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, spec := range tt.specs {
				l, err := ParseLayout(spec)
				if err != nil {
					t.Fatalf("ParseLayout(%q): %v", spec, err)
				}
				if got := l.String(); got != tt.want {
					t.Errorf("ParseLayout(%q) = %q, want %q", spec, got, tt.want)
				}
			}
		})
	}
}

// TestLayoutString_KeepsDefault: a union named first is the default, and
// the text a report prints for the layout reads back with that default.
// It named the union after its members' own partition ("gpu+all"), which
// read back with gpu for the default; where the first node is not in the
// default at all, a union of the default with itself now leads.
func TestLayoutString_KeepsDefault(t *testing.T) {
	tests := []struct{ spec, want string }{
		{"all:of=gpu+debug\ngpu:nodes=3,per-node=8\ndebug:nodes=1,per-node=2", "all+gpu:nodes=3,per-node=8;all+debug:nodes=1,per-node=2"},
		{"dbg:of=b;a:nodes=1,per-node=4;b:nodes=2,per-node=8", "dbg:of=dbg;a:nodes=1,per-node=4;dbg+b:nodes=2,per-node=8"},
	}
	for _, tt := range tests {
		l, err := ParseLayout(tt.spec)
		if err != nil {
			t.Fatalf("ParseLayout(%q): %v", tt.spec, err)
		}
		text := l.String()
		if text != tt.want {
			t.Errorf("ParseLayout(%q) = %q, want %q", tt.spec, text, tt.want)
		}
		back, err := ParseLayout(text)
		if err != nil {
			t.Fatalf("ParseLayout(%q): %v", text, err)
		}
		if diff := cmp.Diff(l.Nodes, back.Nodes, cmpopts.IgnoreFields(Node{}, "Partitions")); diff != "" || back.Partitions[0] != l.Partitions[0] {
			t.Errorf("%q read back with default %q (want %q), nodes (-want +got):\n%s", text, back.Partitions[0], l.Partitions[0], diff)
		}
	}
}

func TestParseLayout_Errors(t *testing.T) {
	tests := []struct{ spec, want string }{
		{"", "empty"},
		{" ; # nothing", "empty"},
		{"gpu", `entry 1 "gpu": want NAME:nodes=N`},
		{"gpu:nodes=2", `entry 1 "gpu:nodes=2": want both nodes= and per-node=`},
		{"a:nodes=1,per-node=8;gpu:nodes=x,per-node=8", `entry 2 "gpu:nodes=x,per-node=8": nodes=x: want a whole number`},
		{"gpu:nodes=0,per-node=8", "nodes=0: want a whole number"},
		{"gpu:nodes=1,per-node=8,colour=red", `unknown key "colour"`},
		{"gpu:nodes=1,nodes=2,per-node=8", "nodes given twice"},
		{"g pu:nodes=1,per-node=8", `partition name "g pu"`},
		{"gpu:nodes=1,per-node=8,type=", `"type=": want KEY=VALUE`},
		{"gpu:nodes=1,per-node=8;all:of=gpu+cpu", `of=gpu+cpu: no nodes= entry for partition "cpu"`},
		{"gpu:nodes=1,per-node=8;all:of=gpu,nodes=2", "of= takes no other key"},
		{"all:of=gpu", `no nodes= entry for partition "gpu"`},
	}
	for _, tt := range tests {
		_, err := ParseLayout(tt.spec)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("ParseLayout(%q): err %v, want one containing %q", tt.spec, err, tt.want)
		}
	}
}

// TestRun_OnePartitionIsOnePool replays the synthetic workload under
// several policies on one pool and on a layout of one partition of the
// same nodes: every job starts and ends at the same instant.
func TestRun_OnePartitionIsOnePool(t *testing.T) {
	w, err := SynthWorkload("synthetic", 3, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	w = w.FirstJobs(600)
	l, err := ParseLayout("vc1:nodes=8,per-node=8")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"fifo", "fairshare", "sjf-oracle", policy.Default} {
		for _, bf := range []Backfill{EASY, NoBackfill} {
			t.Run(name+"/"+string(bf), func(t *testing.T) {
				pool, err := Run(w.Jobs, Config{Cluster: w.Cluster, Policy: smPolicy(t, name, nil), Backfill: bf})
				if err != nil {
					t.Fatal(err)
				}
				parted, err := Run(w.Jobs, Config{Cluster: w.Cluster.WithLayout(l), Policy: smPolicy(t, name, nil), Backfill: bf})
				if err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(pool.Jobs, parted.Jobs); diff != "" {
					t.Errorf("jobs (-one pool +one partition):\n%s", diff)
				}
				if pool.Cycles != parted.Cycles {
					t.Errorf("%d cycles on one pool, %d on one partition", pool.Cycles, parted.Cycles)
				}
			})
		}
	}
}

// TestUnroutable counts the jobs a replay on a layout would leave out,
// under the reasons it names them by, before any replay.
func TestUnroutable(t *testing.T) {
	l, err := ParseLayout("gpu:nodes=2,per-node=4,type=h100;debug:nodes=1,per-node=2")
	if err != nil {
		t.Fatal(err)
	}
	c := Cluster{Unit: GPUs}.WithLayout(l)
	jobs := []policy.Job{
		{ID: 1, Partition: "gpu", GPUType: "h100", GPUs: 4},
		{ID: 2, Partition: "", GPUs: 8},                     // the default, gpu: 2 whole nodes
		{ID: 3, Partition: "gpu", GPUType: "a100", GPUs: 1}, // no such type
		{ID: 4, Partition: "cpu", GPUs: 1},                  // no such partition
		{ID: 5, Partition: "debug", GPUs: 3},                // larger than debug
		{ID: 6, Partition: "debug", GPUs: 0, CPUs: 4},       // no units: not a routing matter
		{ID: 7, Partition: "nope,debug", GPUs: 2},           // the first the layout has
		{ID: 8, Partition: "gpu", GPUType: "a100", GPUs: 2},
	}
	want := map[string]int{`no a100 node in partition "gpu"`: 2, `partition "cpu" not in the cluster`: 1, `larger than partition "debug"`: 1}
	if diff := cmp.Diff(want, Unroutable(jobs, c)); diff != "" {
		t.Errorf("Unroutable (-want +got):\n%s", diff)
	}
	if got := Unroutable(jobs, Cluster{Nodes: 1, PerNode: 1, Unit: GPUs}); got != nil {
		t.Errorf("no layout: %v, want nil", got)
	}
}

// TestCluster_TRES: the totals the slurm policy divides a job's TRES by,
// per partition of a layout (a node in two partitions counts in both,
// typed GPUs also under their type), "" the default partition's; without
// a layout, the whole cluster's.
func TestCluster_TRES(t *testing.T) {
	l := &Layout{Partitions: []string{"gpu", "big"}, Nodes: []Node{
		{Units: 4, Type: "H100", Partitions: []int{0, 1}},
		{Units: 8, Type: "a100", Partitions: []int{1}},
		{Units: 2, Partitions: []int{0}},
	}}
	got := Cluster{Unit: GPUs}.WithLayout(l).TRES()
	gpu := map[string]float64{"node": 2, "gres/gpu": 6, "gres/gpu:h100": 4}
	want := map[string]map[string]float64{
		"":    gpu,
		"gpu": gpu,
		"big": {"node": 2, "gres/gpu": 12, "gres/gpu:h100": 4, "gres/gpu:a100": 8},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("GPU layout (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]map[string]float64{"": {"node": 3, "cpu": 96}}, Cluster{Nodes: 3, PerNode: 32, Unit: CPUs}.TRES()); diff != "" {
		t.Errorf("CPU cluster (-want +got):\n%s", diff)
	}
}
