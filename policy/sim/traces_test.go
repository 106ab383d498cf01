package sim

import (
	"math"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/fairway-hpc/fairway/internal/shareddata"
	"github.com/fairway-hpc/fairway/internal/trace"
	"github.com/fairway-hpc/fairway/policy"
	"github.com/fairway-hpc/fairway/policy/predict"
)

// tracesDir is the shared trace folder ($FAIRWAY_TRACES, else
// shared/data/traces beside the repository). Absent on a fresh clone
// (skip), required under CI=true.
func tracesDir(t testing.TB) string {
	t.Helper()
	return shareddata.Traces(t)
}

// sharedTrace is one shared trace and the cluster it is replayed on.
type sharedTrace struct {
	file    string
	format  trace.Format
	cluster func(trace.Meta) Cluster
}

var (
	swfPool   = func(m trace.Meta) Cluster { return Cluster{Nodes: 1, PerNode: m.MaxProcs, Unit: CPUs} }
	ctcTrace  = sharedTrace{"CTC-SP2-1996-3.1-cln.swf.gz", trace.SWF, swfPool}
	kthTrace  = sharedTrace{"KTH-SP2-filtered.swf.gz", trace.SWF, swfPool}
	phillyMIX = sharedTrace{"Philly-MIX1.csv.gz", trace.PhillyMIX, func(trace.Meta) Cluster {
		return Cluster{Nodes: 120, PerNode: 8, Unit: GPUs} // the Chronus artifact's cluster
	}}
)

// traceCache reads each shared trace once per test binary.
var traceCache sync.Map // file → *trace.Trace

func readShared(t testing.TB, st sharedTrace) ([]policy.Job, Cluster) {
	t.Helper()
	dir := tracesDir(t)
	if v, ok := traceCache.Load(st.file); ok {
		tr := v.(*trace.Trace)
		return tr.Jobs, st.cluster(tr.Meta)
	}
	f, err := os.Open(filepath.Join(dir, st.file))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tr, err := trace.ReadAll(f, st.format, trace.Options{Name: st.file})
	if err != nil {
		t.Fatal(err)
	}
	traceCache.Store(st.file, tr)
	return tr.Jobs, st.cluster(tr.Meta)
}

// TestKTH_FIFOEASYFidelity replays the filtered KTH SP2 log (requested
// times as limits, processors as the resource, run times capped at the
// request, jobs in submit order) under FIFO with EASY backfilling: the
// average bounded slowdown (τ = 10 s, every job) must be within 5% of the
// predictsim artifact's 92.58 on the same file.
func TestKTH_FIFOEASYFidelity(t *testing.T) {
	jobs, cluster := readShared(t, kthTrace)
	res, err := Run(jobs, Config{Cluster: cluster, Policy: smPolicy(t, "fifo", nil)})
	if err != nil {
		t.Fatal(err)
	}
	m := Measure(res, MetricsParams{})
	const published = 92.58
	if m.Jobs != 28481 {
		t.Errorf("%d jobs simulated, want all 28481", m.Jobs)
	}
	if dev := math.Abs(m.AvgBSLD-published) / published; dev > 0.05 {
		t.Errorf("FIFO+EASY average bounded slowdown %.2f, %.1f%% from the published %.2f (want within 5%%)", m.AvgBSLD, 100*dev, published)
	}
	t.Logf("FIFO+EASY on KTH: average bounded slowdown %.2f (published %.2f), average wait %.0f s", m.AvgBSLD, published, m.AvgWait)
}

// TestTraces_FairQSSFAgainstBaselines checks the simulator issue's
// done-when comparisons on the three shared traces, every policy that reads
// predictions with the fairway predictor learning online: fair-qssf gives
// a lower average wait than fifo and than fairshare, an average JCT within
// 15% of sjf-oracle's, and a lower maximum finish-time fairness ρ than
// qssf. It replays the three traces five times (550,000 jobs); -short
// skips it except under CI=true.
func TestTraces_FairQSSFAgainstBaselines(t *testing.T) {
	if testing.Short() && os.Getenv("CI") != "true" {
		t.Skip("-short: the whole-trace comparison replays 550,000 jobs")
	}
	for _, st := range []sharedTrace{kthTrace, ctcTrace, phillyMIX} {
		t.Run(st.file, func(t *testing.T) {
			jobs, cluster := readShared(t, st)
			m := map[string]Metrics{}
			for _, name := range []string{"fifo", "fairshare", "qssf", "sjf-oracle", "fair-qssf"} {
				cfg := Config{Cluster: cluster, Policy: smPolicy(t, name, nil)}
				if name == "qssf" || name == "fair-qssf" {
					// The others read no prediction: they run without a
					// predictor, to the same schedule, faster.
					pred, err := predict.New("fairway", predict.Params{})
					if err != nil {
						t.Fatal(err)
					}
					cfg.Predictor = pred
				}
				res, err := Run(jobs, cfg)
				if err != nil {
					t.Fatal(err)
				}
				m[name] = Measure(res, MetricsParams{})
			}
			fq := m["fair-qssf"]
			for _, base := range []string{"fifo", "fairshare"} {
				if fq.AvgWait >= m[base].AvgWait {
					t.Errorf("average wait: fair-qssf %.0f s, %s %.0f s: want fair-qssf lower", fq.AvgWait, base, m[base].AvgWait)
				}
			}
			if oracle := m["sjf-oracle"].AvgJCT; fq.AvgJCT > 1.15*oracle {
				t.Errorf("average JCT: fair-qssf %.0f s, sjf-oracle %.0f s: want within 15%%", fq.AvgJCT, oracle)
			}
			if fq.MaxRho >= m["qssf"].MaxRho {
				t.Errorf("max ρ: fair-qssf %.1f, qssf %.1f: want fair-qssf lower", fq.MaxRho, m["qssf"].MaxRho)
			}
			t.Logf("average wait (s): fifo %.0f, fairshare %.0f, fair-qssf %.0f; average JCT (s): sjf-oracle %.0f, fair-qssf %.0f (%+.1f%%); max ρ: qssf %.1f, fair-qssf %.1f",
				m["fifo"].AvgWait, m["fairshare"].AvgWait, fq.AvgWait, m["sjf-oracle"].AvgJCT, fq.AvgJCT,
				100*(fq.AvgJCT/m["sjf-oracle"].AvgJCT-1), m["qssf"].MaxRho, fq.MaxRho)
		})
	}
}
