package accounting_test

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/fairway-hpc/fairway/accounting"
	"github.com/fairway-hpc/fairway/policy"
	"github.com/google/go-cmp/cmp"
)

func TestRecordDecisions_Idempotent(t *testing.T) {
	store, pool := freshStore(t)
	ctx := context.Background()
	at := time.Date(2026, 10, 31, 23, 59, 50, 0, time.UTC)
	prev := int64(100)
	ds := []accounting.Decision{
		{Cluster: "c", At: at, Cycle: 7, JobID: 11, Policy: "fair-qssf", Rank: 1, Score: 2.5,
			Parts: map[string]float64{"fairshare": 0.7, "service": -1.2}, Predicted: 90 * time.Second, Predictor: "fairway",
			Field: "site_factor", Value: 4000, Previous: &prev},
		{Cluster: "c", At: at, Cycle: 7, JobID: 12, Policy: "fair-qssf", Rank: 2, Score: 1, Field: "site_factor", Value: 3000, Planned: true},
		{Cluster: "c", At: at, Cycle: 7, JobID: 13, Policy: "fair-qssf", Rank: 3, Score: 0.5, Field: "site_factor", Value: 2000,
			Parts: map[string]float64{"service": math.Inf(1)}},
		// The next cycle falls in November: a second partition.
		{Cluster: "c", At: at.Add(30 * time.Second), Cycle: 8, JobID: 11, Policy: "fair-qssf", Rank: 1, Score: 2, Field: "site_factor", Value: 4100},
	}
	n, err := store.RecordDecisions(ctx, ds)
	if err != nil || n != 4 {
		t.Fatalf("RecordDecisions = %d, %v; want 4", n, err)
	}
	if n, err = store.RecordDecisions(ctx, ds); err != nil || n != 0 {
		t.Fatalf("replayed RecordDecisions = %d, %v; want 0 new", n, err)
	}
	var parts string
	var pred *float64
	var previous *int64
	if err := pool.QueryRow(ctx, `SELECT parts::text, predicted_run_s, previous FROM decision WHERE job_id = 11 AND cycle = 7`).Scan(&parts, &pred, &previous); err != nil {
		t.Fatal(err)
	}
	if parts != `{"service": -1.2, "fairshare": 0.7}` || pred == nil || *pred != 90 || previous == nil || *previous != 100 {
		t.Errorf("stored parts %s, predicted %v, previous %v", parts, pred, previous)
	}
	if n := countRows(t, pool, `SELECT count(*) FROM decision WHERE job_id = 12 AND predicted_run_s IS NULL AND previous IS NULL AND parts = '{}'`); n != 1 {
		t.Errorf("decision without prediction/previous/parts not stored as NULL/NULL/{}")
	}
	if n := countRows(t, pool, `SELECT count(*) FROM decision WHERE job_id = 13 AND parts = '{"service": null}'`); n != 1 {
		t.Errorf("an infinite score part is not stored as null")
	}
	if n := countRows(t, pool, `SELECT count(*) FROM pg_inherits WHERE inhparent = 'decision'::regclass`); n != 2 {
		t.Errorf("decision has %d partitions, want 2 (October, November)", n)
	}
	if _, err := store.RecordDecisions(ctx, []accounting.Decision{{JobID: 1}}); err == nil {
		t.Error("a decision without cluster/time/policy/field was accepted")
	}
}

func TestRecordPredictions_Outcome(t *testing.T) {
	store, pool := freshStore(t)
	ctx := context.Background()
	submit := time.Date(2026, 10, 1, 8, 0, 0, 0, time.UTC)
	job := policy.Job{Cluster: "c", ID: 5, ArrayTask: -1, User: "alice", Account: "physics", Partition: "gpu",
		Submit: submit, Start: submit.Add(10 * time.Minute), End: submit.Add(70 * time.Minute), GPUs: 1, State: policy.StateCompleted}
	pred := func(at time.Duration, run time.Duration) accounting.Prediction {
		return accounting.Prediction{Cluster: "c", JobID: 5, ArrayTask: -1, Submit: submit, Predictor: "alea",
			At: submit.Add(at), Run: run, Rule: "user-mean", Partition: "gpu"}
	}
	// Two cycles predicted while the job waited; the later one stands,
	// even when an older batch is replayed afterwards.
	if err := store.RecordPredictions(ctx, []accounting.Prediction{pred(time.Minute, 30*time.Minute)}); err != nil {
		t.Fatal(err)
	}
	if err := store.RecordPredictions(ctx, []accounting.Prediction{pred(2*time.Minute, 50*time.Minute)}); err != nil {
		t.Fatal(err)
	}
	if err := store.RecordPredictions(ctx, []accounting.Prediction{pred(time.Minute, 30*time.Minute)}); err != nil {
		t.Fatal(err)
	}
	if _, err := store.RecordFinished(ctx, "slurmctld", []policy.Job{job}); err != nil {
		t.Fatal(err)
	}
	var predicted, actual, errS float64
	if err := pool.QueryRow(ctx, `SELECT predicted_s, actual_s, error_s FROM prediction_outcome WHERE job_id = 5`).Scan(&predicted, &actual, &errS); err != nil {
		t.Fatal(err)
	}
	if predicted != 3000 || actual != 3600 || errS != -600 {
		t.Errorf("outcome: predicted %v actual %v error %v; want 3000, 3600, -600", predicted, actual, errS)
	}
}

func TestRecordGPUUsage_Idempotent(t *testing.T) {
	store, pool := freshStore(t)
	ctx := context.Background()
	end := time.Date(2026, 10, 2, 3, 4, 5, 0, time.UTC)
	util, mem := 87.5, int64(40960)
	us := []accounting.GPUUsage{
		{Cluster: "c", JobID: 9, Node: "gpu1", GPUMinor: 0, Started: end.Add(-time.Hour), Ended: end, UUID: "GPU-aaa", Model: "H100", UtilAvgPct: &util, MemPeakMB: &mem},
		{Cluster: "c", JobID: 9, Node: "gpu1", GPUMinor: 1, Ended: end, Shards: 3},
	}
	for i, want := range []int{2, 0} {
		n, err := store.RecordGPUUsage(ctx, us)
		if err != nil || n != want {
			t.Fatalf("RecordGPUUsage #%d = %d, %v; want %d new", i+1, n, err, want)
		}
	}
	if n := countRows(t, pool, `SELECT count(*) FROM job_gpu_usage WHERE util_avg_pct = 87.5 AND energy_joules IS NULL AND started_at IS NOT NULL`); n != 1 {
		t.Errorf("usage row with utilization, no energy: %d rows, want 1", n)
	}
}

// TestRecordGPUUsage_DriverTextNotText: a UUID or model string the driver
// reported with bytes PostgreSQL text refuses (invalid UTF-8, NUL) is
// stored with U+FFFD in their place; before, the whole batch was refused,
// and the spool shipped in order stayed stuck behind it.
func TestRecordGPUUsage_DriverTextNotText(t *testing.T) {
	store, pool := freshStore(t)
	ctx := context.Background()
	end := time.Date(2026, 10, 2, 3, 4, 5, 0, time.UTC)
	us := []accounting.GPUUsage{
		{Cluster: "c", JobID: 9, Node: "gpu1", GPUMinor: 0, Ended: end, UUID: "GPU-\x00aa", Model: "H100 \xff\xfe"},
		{Cluster: "c", JobID: 10, Node: "gpu1", GPUMinor: 1, Ended: end, UUID: "GPU-bbb", Model: "H100"},
	}
	if n, err := store.RecordGPUUsage(ctx, us); err != nil || n != 2 {
		t.Fatalf("RecordGPUUsage = %d, %v; want 2 new", n, err)
	}
	var uuid, model string
	if err := pool.QueryRow(ctx, `SELECT gpu_uuid, gpu_model FROM job_gpu_usage WHERE job_id = 9`).Scan(&uuid, &model); err != nil {
		t.Fatal(err)
	}
	if uuid != "GPU-\uFFFDaa" || model != "H100 \uFFFD" {
		t.Errorf("stored uuid %q, model %q; want %q, %q", uuid, model, "GPU-\uFFFDaa", "H100 \uFFFD")
	}
}

func TestRecordCycle_AndPrune(t *testing.T) {
	store, pool := freshStore(t)
	ctx := context.Background()
	start := time.Date(2026, 10, 2, 3, 4, 5, 0, time.UTC)
	c := accounting.Cycle{Cluster: "c", Cycle: 1, Started: start, Policy: "fifo", Leader: true, Pending: 10, Running: 3,
		Written: 4, Read: 20 * time.Millisecond, Rank: 5 * time.Millisecond, Total: 40 * time.Millisecond}
	for range 2 {
		if err := store.RecordCycle(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	c.Cycle, c.Started = 2, start.Add(30*time.Second)
	if err := store.RecordCycle(ctx, c); err != nil {
		t.Fatal(err)
	}
	if n := countRows(t, pool, `SELECT count(*) FROM cycle WHERE read_seconds = 0.02 AND total_seconds = 0.04`); n != 2 {
		t.Errorf("%d cycle rows, want 2", n)
	}
	n, err := store.PruneCycles(ctx, start.Add(time.Second))
	if err != nil || n != 1 {
		t.Errorf("PruneCycles = %d, %v; want 1", n, err)
	}
}

func TestDropMonthsBefore_Retention(t *testing.T) {
	store, pool := freshStore(t)
	ctx := context.Background()
	var jobs []policy.Job
	for i, m := range []time.Month{time.January, time.February, time.March} {
		s := time.Date(2026, m, 15, 0, 0, 0, 0, time.UTC)
		jobs = append(jobs, policy.Job{Cluster: "c", ID: int64(i + 1), ArrayTask: -1, Submit: s, Start: s, End: s.Add(time.Hour), State: policy.StateCompleted})
	}
	if _, err := store.RecordFinished(ctx, "slurmctld", jobs); err != nil {
		t.Fatal(err)
	}
	got, err := store.DropMonthsBefore(ctx, "job", time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"job_p202601", "job_p202602"}, got); diff != "" {
		t.Errorf("dropped (-want +got):\n%s", diff)
	}
	if n := countRows(t, pool, `SELECT count(*) FROM job`); n != 1 {
		t.Errorf("%d jobs left, want 1 (March)", n)
	}
	// A month dropped can be written again: the partition comes back.
	if _, err := store.RecordFinished(ctx, "slurmctld", jobs[:1]); err != nil {
		t.Fatalf("re-record January after retention: %v", err)
	}
	if _, err := store.DropMonthsBefore(ctx, "cycle", time.Now()); err == nil || !strings.Contains(err.Error(), "not partitioned") {
		t.Errorf("DropMonthsBefore(cycle) err = %v, want not partitioned", err)
	}
}

func TestShares_SyncAndLoad(t *testing.T) {
	store, _ := freshStore(t)
	ctx := context.Background()
	fromDBD := []accounting.ShareNode{
		{Account: "chem", Shares: 40}, {Account: "physics", Shares: 60},
		{Account: "chem", User: "carol", Shares: 1}, {Account: "physics", User: "alice", Shares: 1},
	}
	if before, after, err := store.SyncShares(ctx, "c", accounting.SharesFromSlurmdbd, fromDBD); err != nil || before != 0 || after != 4 {
		t.Fatalf("SyncShares(slurmdbd) = %d, %d, %v", before, after, err)
	}
	fromConfig := []accounting.ShareNode{{Account: "physics", Shares: 80}, {Account: "physics", User: "bob", Shares: 0}}
	if _, _, err := store.SyncShares(ctx, "c", accounting.SharesFromConfig, fromConfig); err != nil {
		t.Fatal(err)
	}
	// A second slurmdbd sync replaces slurmdbd's rows only.
	if before, after, err := store.SyncShares(ctx, "c", accounting.SharesFromSlurmdbd, fromDBD[:3]); err != nil || before != 4 || after != 3 {
		t.Fatalf("second SyncShares(slurmdbd) = %d, %d, %v", before, after, err)
	}
	tree, err := store.LoadShares(ctx, "c")
	if err != nil {
		t.Fatal(err)
	}
	wantNodes := []accounting.ShareNode{
		{Account: "chem", Shares: 40}, {Account: "physics", Shares: 80},
		{Account: "chem", User: "carol", Shares: 1}, {Account: "physics", User: "bob", Shares: 0},
	}
	if diff := cmp.Diff(wantNodes, tree.Nodes); diff != "" {
		t.Errorf("nodes (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"slurmdbd", "config", "slurmdbd", "config"}, tree.Source); diff != "" {
		t.Errorf("sources (-want +got):\n%s", diff)
	}
	if _, _, err := store.SyncShares(ctx, "c", "ldap", nil); err == nil {
		t.Error("unknown share source accepted")
	}
}

// TestFrozenPriorities_NewestWrittenPriorityRow: the decision log tells a
// later serve which jobs hold an admin priority Fairway wrote, and the
// nice each had: a job whose newest row written to Slurm set a priority.
// A later site-factor row (handed back), a dry-run row (never written) and
// another cluster do not count; the nice survives the replay path too.
func TestFrozenPriorities_NewestWrittenPriorityRow(t *testing.T) {
	store, _ := freshStore(t)
	ctx := context.Background()
	at := time.Date(2026, 11, 3, 10, 0, 0, 0, time.UTC)
	nice := func(n int64) *int64 { return &n }
	d := func(cycle, job int64, field string, v int64, n *int64, dry bool) accounting.Decision {
		return accounting.Decision{Cluster: "c", At: at.Add(time.Duration(cycle) * time.Minute), Cycle: cycle, JobID: job, Policy: "fifo",
			Rank: 1, Field: field, Value: v, Nice: n, Planned: dry}
	}
	first := []accounting.Decision{
		d(1, 21, "priority", 500000, nice(100), false),
		d(1, 22, "priority", 400000, nice(0), false),
		d(1, 23, "priority", 300000, nice(5), false),
		d(1, 24, "priority", 200000, nil, false), // before the nice column
	}
	if _, err := store.RecordDecisions(ctx, first); err != nil {
		t.Fatal(err)
	}
	later := []accounting.Decision{
		d(2, 21, "priority", 510000, nice(100), false), // the newest priority counts
		d(2, 22, "site_factor", 4000, nil, false),      // handed back since
		d(2, 23, "priority", 999999, nice(5), true),    // a dry run wrote nothing
		{Cluster: "other", At: at, Cycle: 1, JobID: 25, Policy: "fifo", Rank: 1, Field: "priority", Value: 7, Nice: nice(3)},
	}
	// Replay path: one row of the batch is stored already.
	if _, err := store.RecordDecisions(ctx, append(later, first[0])); err != nil {
		t.Fatal(err)
	}
	got, err := store.FrozenPriorities(ctx, "c", []int64{21, 22, 23, 24, 25, 26})
	if err != nil {
		t.Fatal(err)
	}
	want := map[int64]accounting.FrozenPriority{21: {510000, 100}, 23: {300000, 5}, 24: {200000, 0}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("FrozenPriorities (-want +got):\n%s", diff)
	}
}

// TestRecordCycle_ErrorNotText: a cycle's error (and a power action's
// reason and error) is free text from
// outside (a non-JSON error answer slurmctl cuts at 200 bytes, perhaps
// inside a character; a command's stderr). Bytes PostgreSQL text refuses
// used to fail the row on every retry, and serve's buffer, which ships
// cycle rows in order and its spill files oldest first, then never
// shipped anything recorded after it.
func TestRecordCycle_ErrorNotText(t *testing.T) {
	store, pool := freshStore(t)
	ctx := context.Background()
	c := accounting.Cycle{Cluster: "c", Cycle: 1, Started: time.Date(2026, 10, 2, 3, 4, 5, 0, time.UTC), Policy: "fifo",
		Error: "write: HTTP 502: bad gateway: \xc3\x28 \x00 \xe2\x80"}
	if err := store.RecordCycle(ctx, c); err != nil {
		t.Fatal(err)
	}
	var got string
	if err := pool.QueryRow(ctx, `SELECT error FROM cycle WHERE cycle = 1`).Scan(&got); err != nil {
		t.Fatal(err)
	}
	if want := "write: HTTP 502: bad gateway: \uFFFD( \uFFFD \uFFFD"; got != want {
		t.Errorf("error stored as %q, want %q", got, want)
	}
	a := accounting.PowerAction{Cluster: "c", At: c.Started, Cycle: 1, Node: "gpu1", Action: "power-down",
		Reason: "idle \xff", Error: "scontrol: \x00"}
	if _, err := store.RecordPowerActions(ctx, []accounting.PowerAction{a}); err != nil {
		t.Fatal(err)
	}
	as, err := store.PowerActions(ctx, "c", "", c.Started, c.Started.Add(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if len(as) != 1 || as[0].Reason != "idle \uFFFD" || as[0].Error != "scontrol: \uFFFD" {
		t.Errorf("power actions stored as %+v, want one with reason %q and error %q", as, "idle \uFFFD", "scontrol: \uFFFD")
	}
}

// TestShares_SyncRefusesBadTree: a share tree that cannot be right (an
// account that is its own ancestor, through one source or across both; a
// share that is not a number; a node twice) is refused with an error that
// names the problem, and the stored tree is kept as it was.
func TestShares_SyncRefusesBadTree(t *testing.T) {
	store, _ := freshStore(t)
	ctx := context.Background()
	fromDBD := []accounting.ShareNode{
		{Account: "physics", Shares: 60}, {Account: "hep", Parent: "physics", Shares: 10},
		{Account: "hep", User: "alice", Shares: 1},
	}
	if _, _, err := store.SyncShares(ctx, "c", accounting.SharesFromSlurmdbd, fromDBD); err != nil {
		t.Fatal(err)
	}
	fromConfig := []accounting.ShareNode{{Account: "chem", Shares: 40}}
	if _, _, err := store.SyncShares(ctx, "c", accounting.SharesFromConfig, fromConfig); err != nil {
		t.Fatal(err)
	}
	stored, err := store.LoadShares(ctx, "c")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		source  string
		nodes   []accounting.ShareNode
		wantErr string
	}{
		{"cycle in config", accounting.SharesFromConfig,
			[]accounting.ShareNode{{Account: "a", Parent: "b", Shares: 1}, {Account: "b", Parent: "a", Shares: 1}},
			"sync shares of c: account a is its own ancestor (a → b → a)"},
		{"cycle above an account", accounting.SharesFromConfig,
			[]accounting.ShareNode{{Account: "a", Parent: "b", Shares: 1}, {Account: "b", Parent: "c", Shares: 1}, {Account: "c", Parent: "b", Shares: 1}},
			"sync shares of c: account b is its own ancestor (b → c → b)"},
		{"own parent", accounting.SharesFromConfig,
			[]accounting.ShareNode{{Account: "a", Parent: "a", Shares: 1}},
			"sync shares of c: account a is its own ancestor (a → a)"},
		{"cycle across sources", accounting.SharesFromConfig,
			[]accounting.ShareNode{{Account: "chem", Shares: 40}, {Account: "physics", Parent: "hep", Shares: 60}},
			"sync shares of c: account hep is its own ancestor (hep → physics → hep)"},
		{"NaN share", accounting.SharesFromSlurmdbd,
			[]accounting.ShareNode{{Account: "physics", Shares: math.NaN()}},
			"sync shares of c: account physics: share NaN is not a non-negative number"},
		{"infinite share", accounting.SharesFromSlurmdbd,
			[]accounting.ShareNode{{Account: "physics", User: "alice", Shares: math.Inf(1)}},
			"sync shares of c: physics:alice: share +Inf is not a non-negative number"},
		{"node twice", accounting.SharesFromSlurmdbd,
			[]accounting.ShareNode{{Account: "physics", Shares: 60}, {Account: "physics", Shares: 50}},
			"sync shares of c: account physics is listed twice"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := store.SyncShares(ctx, "c", tc.source, tc.nodes)
			if err == nil || err.Error() != tc.wantErr {
				t.Fatalf("SyncShares = %v, want %q", err, tc.wantErr)
			}
			now, err := store.LoadShares(ctx, "c")
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(stored, now, cmp.AllowUnexported(accounting.ShareTree{})); diff != "" {
				t.Errorf("stored tree changed by a refused sync (-before +after):\n%s", diff)
			}
		})
	}
}

// TestStore_RecordGPUUsage_PoisonedRecord: a record PostgreSQL cannot store
// (a data exception, not a refusal of the node function) is reported as
// refused and the records around it are stored. Failing the whole call
// would hold up, at every retry, every record spooled behind it.
func TestStore_RecordGPUUsage_PoisonedRecord(t *testing.T) {
	end := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	for _, tt := range []struct {
		name   string
		poison accounting.GPUUsage
		reason string
	}{
		{"NUL in the node name", accounting.GPUUsage{Cluster: "c", JobID: 2, Node: "gpu\x001", Ended: end}, "invalid byte sequence"},
		{"NUL in the cluster name", accounting.GPUUsage{Cluster: "c\x00", JobID: 2, Node: "gpu1", Ended: end}, "invalid byte sequence"},
		{"invalid UTF-8 in the node name", accounting.GPUUsage{Cluster: "c", JobID: 2, Node: "gpu\xff", Ended: end}, "invalid byte sequence"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			store, pool := freshStore(t)
			us := []accounting.GPUUsage{
				{Cluster: "c", JobID: 1, Node: "gpu1", Ended: end},
				tt.poison,
				{Cluster: "c", JobID: 3, Node: "gpu1", Ended: end},
			}
			n, err := store.RecordGPUUsage(context.Background(), us)
			var re *accounting.UsageRefusedError
			if n != 2 || !errors.As(err, &re) || len(re.Refused) != 1 || re.Refused[0].Index != 1 ||
				!strings.Contains(re.Refused[0].Reason, tt.reason) {
				t.Fatalf("RecordGPUUsage = %d, %v; want 2 stored and record 1 refused: %s", n, err, tt.reason)
			}
			if got := countRows(t, pool, `SELECT count(*) FROM job_gpu_usage WHERE job_id IN (1, 3)`); got != 2 {
				t.Errorf("%d of the good records stored, want 2", got)
			}
		})
	}
}
