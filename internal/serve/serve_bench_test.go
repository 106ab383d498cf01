package serve

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fairway-hpc/fairway/policy"
	"github.com/fairway-hpc/fairway/policy/predict"
	"github.com/fairway-hpc/fairway/slurmctl"
)

// capturedCluster decodes the responses captured from the lab's slurmrestd
// (slurmctl/testdata) through a real slurmctl.Client.
func capturedCluster(tb testing.TB) *slurmctl.Cluster {
	tb.Helper()
	dir := filepath.Join("..", "..", "slurmctl", "testdata", "v0.0.38")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name := ""
		switch {
		case strings.HasSuffix(r.URL.Path, "/jobs"):
			name = "jobs.200.json"
		case strings.HasSuffix(r.URL.Path, "/nodes"):
			name = "nodes.200.json"
		case strings.HasSuffix(r.URL.Path, "/partitions"):
			name = "partitions.200.json"
		case strings.HasSuffix(r.URL.Path, "/ping"):
			name = "ping.200.json"
		default:
			http.NotFound(w, r)
			return
		}
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			http.Error(w, err.Error(), 500)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write(b)
	}))
	defer srv.Close()
	ctx := context.Background()
	c, err := slurmctl.New(ctx, slurmctl.Config{URL: srv.URL, User: "root", Token: slurmctl.StaticToken("eyJhbGciOiJIUzI1NiJ9.eyJleHAiOjQxMDI0NDQ4MDB9.c2ln"), Version: "v0.0.38"}, quietLogger())
	if err != nil {
		tb.Fatal(err)
	}
	cl, err := c.Read(ctx)
	if err != nil {
		tb.Fatal(err)
	}
	return cl
}

// scaledCluster replicates the captured pending jobs to nPending records
// (distinct ids, users spread over nUsers and 50 accounts, submit times
// spread over a day) and the captured nodes to nNodes.
func scaledCluster(tb testing.TB, nPending, nUsers, nNodes int) *slurmctl.Cluster {
	tb.Helper()
	base := capturedCluster(tb)
	var pend []slurmctl.Job
	for _, j := range base.Jobs {
		if j.Pending() && !j.Held && !j.HetJob {
			pend = append(pend, j)
		}
	}
	if len(pend) == 0 || len(base.Nodes) == 0 {
		tb.Fatal("capture has no pending job or no node")
	}
	out := &slurmctl.Cluster{Version: base.Version, Slurm: base.Slurm, Partitions: base.Partitions}
	t0 := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	for i := range nPending {
		j := pend[i%len(pend)]
		j.ID = int64(1_000_000 + i)
		j.ArrayJob, j.ArrayTask, j.ArrayTasks, j.TaskCount = 0, -1, "", 1
		j.User = fmt.Sprintf("u%d", i%nUsers)
		j.Account = fmt.Sprintf("a%d", (i%nUsers)%50)
		j.Submit = t0.Add(time.Duration(i%86400) * time.Second)
		out.Jobs = append(out.Jobs, j)
	}
	for i := range nNodes {
		n := base.Nodes[i%len(base.Nodes)]
		n.Name = fmt.Sprintf("gpu%05d", i)
		out.Nodes = append(out.Nodes, n)
	}
	return out
}

type fixedReader struct{ cl *slurmctl.Cluster }

func (f fixedReader) Read(context.Context) (*slurmctl.Cluster, error) { return f.cl, nil }

func benchRunner(tb testing.TB, cl *slurmctl.Cluster) *Runner {
	tb.Helper()
	pol, err := policy.New(policy.Default, nil)
	if err != nil {
		tb.Fatal(err)
	}
	pred, err := predict.New("fairway", predict.Params{})
	if err != nil {
		tb.Fatal(err)
	}
	eng, err := policy.NewEngine(policy.EngineParams{Policy: pol, Predictor: pred, GPUs: float64(cl.GPUs())})
	if err != nil {
		tb.Fatal(err)
	}
	cfg := Config{Cluster: "bench", Policy: policy.Default, Predictor: "fairway",
		Range: policy.SiteFactorRange(), Field: "site_factor"}
	r := New(cfg, Parts{Source: fixedReader{cl}, Sink: NewPlanner(nil, nil), Leader: AlwaysLeader{}, Engine: eng}, quietLogger())
	return r
}

// BenchmarkServeCycle is one full serve cycle — observation diff, engine
// (prediction, ledger, rank), value assignment, diff against the previous
// values, decision-log batch, metrics — on 100,000 pending jobs and 10,000
// nodes built from responses captured from the lab's slurmrestd. Slurm's
// own response time (and decoding it) is outside the loop. "first" is a
// cold cycle in which every job gets a new value and a decision row;
// "steady" is the next cycle of the same queue, which changes nothing.
func BenchmarkServeCycle(b *testing.B) {
	cl := scaledCluster(b, 100_000, 5_000, 10_000)
	ctx := context.Background()
	b.Run("first/jobs=100000/nodes=10000", func(b *testing.B) {
		for b.Loop() {
			b.StopTimer()
			r := benchRunner(b, cl)
			b.StartTimer()
			res, err := r.RunCycle(ctx)
			if err != nil {
				b.Fatal(err)
			}
			if len(res.Ranked) != 100_000 || len(res.Changed) != 100_000 {
				b.Fatalf("ranked %d, changed %d; want 100000 each", len(res.Ranked), len(res.Changed))
			}
		}
	})
	b.Run("steady/jobs=100000/nodes=10000", func(b *testing.B) {
		r := benchRunner(b, cl)
		if _, err := r.RunCycle(ctx); err != nil {
			b.Fatal(err)
		}
		for b.Loop() {
			res, err := r.RunCycle(ctx)
			if err != nil {
				b.Fatal(err)
			}
			if len(res.Ranked) != 100_000 {
				b.Fatalf("ranked %d", len(res.Ranked))
			}
		}
	})
	// The same with the start-time forecast serve makes for its job API
	// (--http-addr), played in the cycle rather than beside it as serve
	// does: what the forecast costs.
	b.Run("steady+forecast/jobs=100000/nodes=10000", func(b *testing.B) {
		r := benchRunner(b, cl)
		r.cfg.Forecast = true
		if _, err := r.RunCycle(ctx); err != nil {
			b.Fatal(err)
		}
		for b.Loop() {
			res, err := r.RunCycle(ctx)
			if err != nil {
				b.Fatal(err)
			}
			if res.Forecast == nil || len(res.Forecast.Jobs) != 100_000 {
				b.Fatalf("no forecast of the 100000 ranked jobs")
			}
		}
	})
}
