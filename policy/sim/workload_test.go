package sim

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fairway-hpc/fairway/internal/trace"
	"github.com/fairway-hpc/fairway/policy"
)

// TestOfferedLoad_Partitions: on a partitioned cluster the offered load
// counts only the jobs the replay runs, not those it leaves out because
// no node of their partition (and GPU type) can run them.
func TestOfferedLoad_Partitions(t *testing.T) {
	c := partCluster(t, "gpu:nodes=1,per-node=8,type=v100;small:nodes=1,per-node=2")
	tests := []struct {
		name string
		jobs []policy.Job
		want float64
	}{{
		// 4 GPUs × 10 s and 2 × 10 s over 10 GPUs × 10 s of submits.
		name: "all run",
		jobs: []policy.Job{partJob(1, "gpu", "", 0, 4, 10, 10), partJob(2, "small", "", 10, 2, 10, 10)},
		want: 0.6,
	}, {
		name: "left out",
		jobs: []policy.Job{
			partJob(1, "gpu", "", 0, 4, 10, 10),
			partJob(2, "nope", "", 5, 8, 100, 100),    // no such partition
			partJob(3, "small", "", 6, 8, 100, 100),   // larger than small
			partJob(4, "gpu", "h100", 7, 8, 100, 100), // no h100 node
			partJob(5, "small", "", 10, 2, 10, 10),
			partJob(6, "nope,other", "", 20, 1, 100, 100), // no such partitions, after the last replayed submit
		},
		want: 0.6,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := OfferedLoad(tt.jobs, c); math.Abs(got-tt.want) > 1e-12 {
				t.Errorf("OfferedLoad = %g, want %g", got, tt.want)
			}
		})
	}
}

func TestScaleLoad(t *testing.T) {
	t0 := time.Date(2020, 4, 1, 0, 0, 0, 0, time.UTC)
	job := func(id int64, submit, wait, run int) policy.Job {
		s := t0.Add(time.Duration(submit) * time.Second)
		st := s.Add(time.Duration(wait) * time.Second)
		return policy.Job{ID: id, Submit: s, Start: st, End: st.Add(time.Duration(run) * time.Second), CPUs: 2, TimeLimit: time.Hour}
	}
	jobs := []policy.Job{job(1, 100, 5, 50), job(2, 300, 0, 100), job(3, 700, 20, 10)}
	c := Cluster{Nodes: 1, PerNode: 4, Unit: CPUs}
	own := OfferedLoad(jobs, c)
	// 2 CPUs × 160 s over 4 CPUs × 600 s.
	if want := 2.0 * 160 / (4 * 600); math.Abs(own-want) > 1e-12 {
		t.Fatalf("OfferedLoad = %g, want %g", own, want)
	}
	tests := []struct {
		x       float64
		submits []int // seconds after t0
	}{
		{1, []int{100, 300, 700}},
		{2, []int{100, 200, 400}},
		{0.5, []int{100, 500, 1300}},
	}
	for _, tt := range tests {
		got, err := ScaleLoad(jobs, tt.x)
		if err != nil {
			t.Fatal(err)
		}
		for i := range got {
			if s := int(got[i].Submit.Sub(t0).Seconds()); s != tt.submits[i] {
				t.Errorf("x=%g job %d: submit %d, want %d", tt.x, got[i].ID, s, tt.submits[i])
			}
			if got[i].RunTime() != jobs[i].RunTime() || got[i].Wait() != jobs[i].Wait() || got[i].TimeLimit != jobs[i].TimeLimit {
				t.Errorf("x=%g job %d: run %v wait %v limit %v, want %v %v %v", tt.x, got[i].ID, got[i].RunTime(), got[i].Wait(),
					got[i].TimeLimit, jobs[i].RunTime(), jobs[i].Wait(), jobs[i].TimeLimit)
			}
		}
		if l := OfferedLoad(got, c); math.Abs(l-tt.x*own) > 1e-9 {
			t.Errorf("x=%g: offered load %g, want %g", tt.x, l, tt.x*own)
		}
	}
	if jobs[1].Submit != t0.Add(300*time.Second) {
		t.Error("ScaleLoad modified its input")
	}
	// 1e-300 would stretch 600 s of submits past what a time.Duration holds,
	// and the conversion would wrap instead of failing.
	for _, x := range []float64{0, -1, math.NaN(), 1e-300} {
		if _, err := ScaleLoad(jobs, x); err == nil {
			t.Errorf("ScaleLoad(%g): want error", x)
		}
	}
	if _, err := ScaleLoadFrom(jobs, 0, 1e-300); err == nil || !strings.Contains(err.Error(), "beyond 146 years") {
		t.Errorf("ScaleLoadFrom(1e-300) = %v, want the stretch refused", err)
	}
}

func TestCriteria(t *testing.T) {
	def := Metrics{Name: "d", AvgWait: 100, AvgBSLD: 5, Jain: 0.50, MaxRho: 10, AvgJCT: 1150}
	others := map[string]Metrics{
		"fifo":       {AvgWait: 200},
		"fairshare":  {AvgWait: 150, AvgBSLD: 4, Jain: 0.505, MaxRho: 20},
		"vtc":        {AvgWait: 100},
		"qssf":       {MaxRho: 11},
		"sjf-oracle": {AvgJCT: 1000},
	}
	var got []string
	for _, c := range Criteria(def, others) {
		if !c.Met {
			got = append(got, c.Name+" "+c.Miss())
		}
	}
	want := []string{"avg wait < vtc +0.0%", "avg bsld < fairshare +25.0%"}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("missed %q, want %q", got, want)
	}
}

func TestSuiteResult_WriteText(t *testing.T) {
	row := SuiteRow{Trace: "t", Load: 1, Offered: 0.5, Cluster: Cluster{Nodes: 1, PerNode: 4, Unit: CPUs},
		Metrics: []Metrics{
			{Name: "fairshare", Jobs: 3, AvgWait: 50, AvgBSLD: 2, Jain: 0.6, MaxRho: 9, AvgJCT: 100},
			{Name: "d", Jobs: 3, AvgWait: 60, AvgBSLD: 1, Jain: 0.6, MaxRho: 9, AvgJCT: 110},
		}}
	row.judge("d")
	var b strings.Builder
	res := &SuiteResult{Default: "d", Predictor: "fairway", MaxJobs: 3, Rows: []SuiteRow{row}}
	if err := res.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		"Policy suite: default d, predictor fairway, EASY backfill, first 3 jobs of each trace.",
		"== t × load 1.0: offered load 0.50, 3 jobs on 1 × 4 cpus, left out: none",
		"d is beaten by: fairshare on avg wait (50 vs 60), avg JCT (100 vs 110)",
		"criteria: 2 of 4 met; MISSED: avg wait < fairshare (60 vs 50, +20.0%); TIED (not met; identical schedules): max ρ < fairshare (both 9)",
		"Summary: d meets every criterion on 0 of 1 trace × load rows.",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

func TestScaleLoadFrom(t *testing.T) {
	t0 := time.Date(2020, 4, 1, 0, 0, 0, 0, time.UTC)
	job := func(id int64, submit, wait, run, gpus int) policy.Job {
		s := t0.Add(time.Duration(submit) * time.Second)
		st := s.Add(time.Duration(wait) * time.Second)
		return policy.Job{ID: id, Submit: s, Eligible: s, Start: st, End: st.Add(time.Duration(run) * time.Second),
			GPUs: gpus, Nodes: 1, CPUs: 4 * gpus, TimeLimit: time.Duration(2*run) * time.Second}
	}
	// The window starts at job 3 (submit 400); jobs 1 and 2 are its history.
	jobs := []policy.Job{job(1, 100, 5, 50, 1), job(2, 300, 0, 600, 2), job(3, 400, 20, 10, 4),
		job(4, 400, 0, 30, 1), job(5, 700, 3, 90, 8), job(6, 1000, 0, 5, 2)}
	tests := []struct {
		name    string
		from    int
		x       float64
		submits []int // seconds after t0
	}{
		{"as recorded", 2, 1, []int{100, 300, 400, 400, 700, 1000}},
		{"x1.5 about the window start", 2, 1.5, []int{100, 300, 400, 400, 600, 800}},
		{"x2", 2, 2, []int{100, 300, 400, 400, 550, 700}},
		{"lighter", 2, 0.5, []int{100, 300, 400, 400, 1000, 1600}},
		{"whole trace", 0, 3, []int{100, 166, 200, 200, 300, 400}},
		{"last job only", 5, 4, []int{100, 300, 400, 400, 700, 1000}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ScaleLoadFrom(jobs, tt.from, tt.x)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(jobs) {
				t.Fatalf("%d jobs, want %d", len(got), len(jobs))
			}
			for i := range got {
				g, j := got[i], jobs[i]
				if s := int(g.Submit.Sub(t0).Seconds()); s != tt.submits[i] {
					t.Errorf("job %d: submit %d s, want %d", j.ID, s, tt.submits[i])
				}
				if g.ID != j.ID {
					t.Errorf("position %d: job %d, want %d (order kept)", i, g.ID, j.ID)
				}
				if g.RunTime() != j.RunTime() || g.Wait() != j.Wait() || g.TimeLimit != j.TimeLimit ||
					g.GPUs != j.GPUs || g.CPUs != j.CPUs || g.Nodes != j.Nodes || g.Eligible.Sub(g.Submit) != j.Eligible.Sub(j.Submit) {
					t.Errorf("job %d: run %v wait %v limit %v size %d/%d/%d, want %v %v %v %d/%d/%d", j.ID,
						g.RunTime(), g.Wait(), g.TimeLimit, g.GPUs, g.CPUs, g.Nodes, j.RunTime(), j.Wait(), j.TimeLimit, j.GPUs, j.CPUs, j.Nodes)
				}
				if i < tt.from && g != j {
					t.Errorf("job %d before the window changed: %+v, want %+v", j.ID, g, j)
				}
				if i > 0 && g.Submit.Before(got[i-1].Submit) {
					t.Errorf("job %d submitted before job %d: order not kept", g.ID, got[i-1].ID)
				}
			}
		})
	}
	if jobs[4].Submit != t0.Add(700*time.Second) {
		t.Error("ScaleLoadFrom modified its input")
	}
	bad := []struct {
		name string
		jobs []policy.Job
		from int
		x    float64
		want string
	}{
		{"zero factor", jobs, 2, 0, "load 0: want a finite factor > 0"},
		{"negative factor", jobs, 2, -1.5, "load -1.5: want a finite factor > 0"},
		{"NaN", jobs, 2, math.NaN(), "load NaN: want a finite factor > 0"},
		{"+Inf", jobs, 2, math.Inf(1), "load +Inf: want a finite factor > 0"},
		{"-Inf", jobs, 2, math.Inf(-1), "load -Inf: want a finite factor > 0"},
		{"from past the end", jobs, 6, 1.5, "from job 6: want a job of the 6"},
		{"negative from", jobs, -1, 1.5, "from job -1: want a job of the 6"},
		{"no jobs", nil, 0, 1.5, "want a job of the 0"},
		{"not in submit order", []policy.Job{jobs[1], jobs[0]}, 0, 1.5, "jobs not in submit order"},
	}
	for _, tt := range bad {
		_, err := ScaleLoadFrom(tt.jobs, tt.from, tt.x)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: error %v, want one containing %q", tt.name, err, tt.want)
		}
	}
}

// TestLoadTrace_SWFSize checks how --nodes and --per-node size an SWF
// trace's machine: one given alone splits the header's processors (never
// shrinks the machine to one node of --per-node), both given replace it.
func TestLoadTrace_SWFSize(t *testing.T) {
	path := filepath.Join(t.TempDir(), "t.swf")
	swf := "; MaxNodes: 100\n; MaxProcs: 100\n" +
		"    1        0     10    300   32     -1    -1   32    600    -1  1   1   1  -1 -1 -1 -1 -1\n" +
		"    2       60     10    300    1     -1    -1    1    600    -1  1   2   2  -1 -1 -1 -1 -1\n"
	if err := os.WriteFile(path, []byte(swf), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		nodes, perNode int
		want           Cluster
	}{
		{0, 0, Cluster{Nodes: 1, PerNode: 100, Unit: CPUs}},
		{0, 1, Cluster{Nodes: 100, PerNode: 1, Unit: CPUs}},
		{0, 8, Cluster{Nodes: 13, PerNode: 8, Unit: CPUs}},
		{4, 0, Cluster{Nodes: 4, PerNode: 25, Unit: CPUs}},
		{3, 0, Cluster{Nodes: 3, PerNode: 34, Unit: CPUs}},
		{2, 10, Cluster{Nodes: 2, PerNode: 10, Unit: CPUs}},
	} {
		w, err := LoadTrace(path, trace.SWF, tc.nodes, tc.perNode)
		if err != nil {
			t.Fatalf("nodes %d per-node %d: %v", tc.nodes, tc.perNode, err)
		}
		if w.Cluster != tc.want {
			t.Errorf("nodes %d per-node %d: cluster %+v, want %+v", tc.nodes, tc.perNode, w.Cluster, tc.want)
		}
	}
}

// TestLoadTrace_NoJobs: a trace whose reader kept no job is ErrNoJobs,
// naming what the reader left out, not a replay of nothing.
func TestLoadTrace_NoJobs(t *testing.T) {
	const header = "; MaxProcs: 100\n"
	tests := []struct {
		name, swf, want string
	}{
		{"header only", header, "no job to simulate (left out: none)"},
		{"unknown run times", header +
			"    1        0     10     -1   32     -1    -1   32    600    -1  1   1   1  -1 -1 -1 -1 -1\n" +
			"    2       60     10     -1    1     -1    -1    1    600    -1  1   2   2  -1 -1 -1 -1 -1\n",
			"no job to simulate (left out: 2 records with unknown run time)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "t.swf")
			if err := os.WriteFile(path, []byte(tt.swf), 0o600); err != nil {
				t.Fatal(err)
			}
			_, err := LoadTrace(path, trace.SWF, 0, 0)
			if !errors.Is(err, ErrNoJobs) || !strings.HasSuffix(err.Error(), tt.want) {
				t.Errorf("err %v, want ErrNoJobs ending %q", err, tt.want)
			}
		})
	}
}
