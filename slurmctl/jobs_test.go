package slurmctl

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/fairway-hpc/fairway/policy"
)

// fixture reads a file captured by `make record`.
func fixture(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", V0038, name))
	if err != nil {
		t.Fatalf("fixture %s: %v (capture it with make record)", name, err)
	}
	return b
}

// role is the part of a recorded job's name after the run's tag.
func role(name string) string {
	if i := strings.LastIndexByte(name, '-'); i >= 0 {
		// tags end in -<pid>-<n>-<role>; roles may contain one dash
		parts := strings.Split(name, "-")
		for k := len(parts) - 1; k > 0; k-- {
			if _, err := fmt.Sscanf(parts[k], "%d", new(int)); err == nil {
				return strings.Join(parts[k+1:], "-")
			}
		}
		return name[i+1:]
	}
	return name
}

// waiting stands for the pending reasons Resources and Priority.
const waiting = "Resources|Priority"

// view is what TestParseJobs_Fixture checks of each job; ids and times are
// checked through relations, since a new capture changes them.
type view struct {
	State      policy.State
	Reason     string
	User       string
	Account    string
	Partition  string
	QOS        string
	Nodes      int
	CPUs       int
	MemoryMB   int64
	GPUs       int
	GPUType    string
	Shards     int
	TimeLimit  time.Duration
	IsArray    bool
	ArrayTask  int
	ArrayTasks string
	TaskCount  int
	HetJob     bool
	Held       bool
	Started    bool
}

func TestParseJobs_Fixture(t *testing.T) {
	jobs, env, err := parseJobs(fixture(t, "jobs.200.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(env.Errors) != 0 {
		t.Fatalf("errors in fixture: %v", env.Errors)
	}
	pend := func(user, acct string, nodes, cpus int, mem int64, gpus int, typ string, shards int, tl int, reason string) view {
		return view{State: policy.StatePending, Reason: reason, User: user, Account: acct, Partition: "gpu", QOS: "normal",
			Nodes: nodes, CPUs: cpus, MemoryMB: mem, GPUs: gpus, GPUType: typ, Shards: shards,
			TimeLimit: time.Duration(tl) * time.Minute, ArrayTask: -1, TaskCount: 1}
	}
	arrayTask := func(task int) view {
		v := view{State: policy.StateRunning, Reason: "None", User: "alice", Account: "physics", Partition: "gpu", QOS: "normal",
			Nodes: 1, CPUs: 3, MemoryMB: 3000, GPUs: 1, GPUType: "h100", TimeLimit: 20 * time.Minute,
			IsArray: true, ArrayTask: task, TaskCount: 1, Started: true}
		return v
	}
	want := map[string][]view{
		"run-shard": {{State: policy.StateRunning, Reason: "None", User: "bob", Account: "physics", Partition: "gpu", QOS: "normal",
			Nodes: 1, CPUs: 2, MemoryMB: 2000, Shards: 3, TimeLimit: 20 * time.Minute, ArrayTask: -1, TaskCount: 1, Started: true}},
		// carol asked for 1 CPU but --exclusive gave her all 8 and 8000M:
		// a running job reports what it holds.
		"run-excl": {{State: policy.StateRunning, Reason: "None", User: "carol", Account: "chem", Partition: "gpu", QOS: "normal",
			Nodes: 1, CPUs: 8, MemoryMB: 8000, GPUs: 4, GPUType: "h100", TimeLimit: 20 * time.Minute, ArrayTask: -1, TaskCount: 1, Started: true}},
		"array": {
			arrayTask(0), arrayTask(1),
			{State: policy.StatePending, User: "alice", Account: "physics", Partition: "gpu", QOS: "normal",
				Nodes: 1, CPUs: 3, MemoryMB: 3000, GPUs: 1, GPUType: "h100", TimeLimit: 20 * time.Minute,
				IsArray: true, ArrayTask: -1, ArrayTasks: "2-4", TaskCount: 3, Reason: waiting},
		},
		"pend-multinode": {pend("alice", "physics", 2, 2, 4096, 4, "h100", 0, 30, waiting)},
		"pend-untyped":   {pend("bob", "physics", 1, 1, 1000, 1, "", 0, 15, waiting)},
		"pend-shard":     {pend("carol", "chem", 1, 1, 1000, 0, "", 5, 10, waiting)},
		"pend-gpus":      {pend("carol", "chem", 1, 1, 1000, 2, "", 0, 10, waiting)},
		"pend-pertask":   {pend("bob", "physics", 1, 2, 2000, 2, "", 0, 10, waiting)},
		"het": {
			func() view { v := pend("bob", "physics", 1, 1, 1000, 1, "", 0, 10, waiting); v.HetJob = true; return v }(),
			func() view { v := pend("bob", "physics", 1, 1, 1000, 0, "", 0, 10, waiting); v.HetJob = true; return v }(),
		},
		"array-limited": {func() view {
			v := pend("bob", "physics", 1, 1, 1000, 1, "", 0, 5, waiting)
			v.IsArray, v.ArrayTasks, v.TaskCount = true, "0-9", 10
			return v
		}()},
		"held": {func() view {
			v := pend("carol", "chem", 1, 1, 1000, 0, "", 5, 10, "JobHeldUser")
			v.Held = true
			return v
		}()},
		"begin":      {pend("alice", "physics", 1, 1, 1000, 0, "", 0, 5, "BeginTime")},
		"dependency": {pend("alice", "physics", 1, 1, 1000, 0, "", 0, 5, "Dependency")},
	}
	got := map[string][]view{}
	byID := map[int64]*Job{}
	for i := range jobs {
		j := &jobs[i]
		byID[j.ID] = j
		reason := j.Reason
		if j.State == policy.StatePending && (reason == "Resources" || reason == "Priority") {
			reason = waiting // which of the two the scheduler gives depends on the moment of capture
		}
		got[role(j.Name)] = append(got[role(j.Name)], view{
			State: j.State, Reason: reason, User: j.User, Account: j.Account, Partition: j.Partition, QOS: j.QOS,
			Nodes: j.Nodes, CPUs: j.CPUs, MemoryMB: j.MemoryMB, GPUs: j.GPUs, GPUType: j.GPUType, Shards: j.Shards,
			TimeLimit: j.TimeLimit, IsArray: j.ArrayJob != 0, ArrayTask: j.ArrayTask, ArrayTasks: j.ArrayTasks,
			TaskCount: j.TaskCount, HetJob: j.HetJob, Held: j.Held, Started: !j.Start.IsZero(),
		})
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("parseJobs (-want +got):\n%s", diff)
	}

	for i := range jobs {
		j := &jobs[i]
		if j.Submit.IsZero() || j.Cluster != "fairwaylab" || !j.End.IsZero() {
			t.Errorf("job %d: submit %v, cluster %q, end %v: want a submit time, cluster fairwaylab, no end", j.ID, j.Submit, j.Cluster, j.End)
		}
		if j.Pending() != (j.State == policy.StatePending && !j.Held) || (j.Held && j.Priority != 0) {
			t.Errorf("job %d: Pending %v, Held %v, priority %d", j.ID, j.Pending(), j.Held, j.Priority)
		}
		switch {
		case j.ArrayTasks != "":
			if j.ArrayJob != j.ID || j.Target() != fmt.Sprintf("%d_[%s]", j.ID, j.ArrayTasks) {
				t.Errorf("array record %d: ArrayJob %d, Target %s", j.ID, j.ArrayJob, j.Target())
			}
		case j.ArrayJob != 0:
			if m := byID[j.ArrayJob]; m == nil || m.ArrayTasks == "" || j.Target() != fmt.Sprint(j.ID) {
				t.Errorf("array task %d: array %d is not the pending record, or Target %s", j.ID, j.ArrayJob, j.Target())
			}
		}
	}
	// Running GPU jobs keep their device indices from gres_detail.
	for i := range jobs {
		if j := &jobs[i]; role(j.Name) == "run-excl" {
			if diff := cmp.Diff([]GRES{{Name: "gpu", Type: "h100", Count: 4, Index: []int{0, 1, 2, 3}}}, j.GRESAlloc); diff != "" {
				t.Errorf("run-excl GRESAlloc (-want +got):\n%s", diff)
			}
		}
	}
}

func TestParseJobs_Malformed(t *testing.T) {
	body := fixture(t, "jobs.200.json")
	for name, b := range map[string][]byte{
		"truncated": body[:len(body)/2],
		"text":      fixture(t, "jobs-no-auth.401.txt"),
		"empty":     {},
		"no jobs":   fixture(t, "nodes.200.json"),
	} {
		t.Run(name, func(t *testing.T) {
			if _, _, err := parseJobs(b); err == nil || !strings.Contains(err.Error(), "malformed") {
				t.Errorf("parseJobs: %v, want a malformed-response error", err)
			}
		})
	}
}

func TestParseNodesPartitions_Fixture(t *testing.T) {
	nodes, _, err := parseNodes(fixture(t, "nodes.200.json"))
	if err != nil {
		t.Fatal(err)
	}
	for i := range nodes {
		nodes[i].Reason = ""
	}
	wantNodes := []Node{
		{Name: "gpu1", State: []string{"ALLOCATED"}, Partitions: []string{"gpu"}, CPUs: 8, AllocCPUs: 8, MemoryMB: 16000, AllocMemMB: 8000,
			GPUs: 4, GPUType: "h100", Shards: 16, AllocGPUs: 2, AllocShards: 1},
		{Name: "gpu2", State: []string{"ALLOCATED"}, Partitions: []string{"gpu"}, CPUs: 8, AllocCPUs: 8, MemoryMB: 16000, AllocMemMB: 8000,
			GPUs: 4, GPUType: "h100", Shards: 16, AllocGPUs: 4},
	}
	if diff := cmp.Diff(wantNodes, nodes); diff != "" {
		t.Errorf("parseNodes (-want +got):\n%s", diff)
	}
	parts, _, err := parsePartitions(fixture(t, "partitions.200.json"), V0038)
	if err != nil {
		t.Fatal(err)
	}
	wantParts := []Partition{{Name: "gpu", Nodes: "gpu[1-2]", State: "UP", TotalCPUs: 16, TotalNode: 2, GPUs: 8, Shards: 32, MaxTime: 24 * time.Hour, Default: true}}
	if diff := cmp.Diff(wantParts, parts); diff != "" {
		t.Errorf("parsePartitions (-want +got):\n%s", diff)
	}
	cl := &Cluster{Nodes: nodes, Partitions: parts}
	if g := cl.GPUs("gpu"); g != 8 {
		t.Errorf("GPUs(gpu) = %d, want 8", g)
	}
	if g := cl.GPUs("cpu"); g != 0 {
		t.Errorf("GPUs(cpu) = %d, want 0", g)
	}
}
