package slurmctl

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fairway-hpc/fairway/internal/shareddata"
	"github.com/google/go-cmp/cmp"
)

// TestResizeWriter_Invariants plans resizes for every captured role: only
// pending, writable, non-array records change; a GPU count only for a
// single-node whole-GPU request; the batch keeps the request's GPU type.
func TestResizeWriter_Invariants(t *testing.T) {
	jobs, by := fixtureJobs(t)
	id := func(r string) int64 { return by[r][0].ID }
	want := []Resize{
		{JobID: id("pend-untyped"), CPUs: 3, MemoryMB: 4000, GPUs: 2},
		{JobID: id("pend-multinode"), CPUs: 6, GPUs: 1, MemoryMB: 99}, // CPUs only
		{JobID: id("pend-shard"), CPUs: 2, GPUs: 1},                   // CPUs only: shards stay shards
		{JobID: id("held"), CPUs: 4},
		{JobID: id("het"), CPUs: 4},
		{JobID: id("array"), CPUs: 4}, // the unsplit pending record, or a running task
		{JobID: id("run-excl"), CPUs: 1},
		{JobID: 999999999, CPUs: 1},
		{JobID: id("pend-pertask"), CPUs: by["pend-pertask"][0].CPUs}, // unchanged
	}
	fake := &fakeRunner{}
	w, err := NewResizeWriter(ResizeConfig{Runner: fake}, nil)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := w.Resize(context.Background(), jobs, want)
	if err != nil {
		t.Fatal(err)
	}
	var planned []string
	for _, c := range rep.Applied {
		planned = append(planned, c.Target)
	}
	wantTargets := []string{fmt.Sprint(id("pend-multinode")), fmt.Sprint(id("pend-untyped")), fmt.Sprint(id("pend-shard"))}
	if d := cmp.Diff(sorted(wantTargets), sorted(planned)); d != "" {
		t.Errorf("applied targets (-want +got):\n%s", d)
	}
	if len(fake.stdin) != 1 || len(fake.calls) != 1 || fake.calls[0] != "scontrol" {
		t.Fatalf("want one scontrol process, got %q", fake.calls)
	}
	batch := string(fake.stdin[0])
	for _, line := range []string{
		fmt.Sprintf("update jobid=%d NumCPUs=3 MinMemoryNode=4000 gres=gpu:2\n", id("pend-untyped")),
		fmt.Sprintf("update jobid=%d NumCPUs=6\n", id("pend-multinode")),
		fmt.Sprintf("update jobid=%d NumCPUs=2\n", id("pend-shard")),
	} {
		if !strings.Contains(batch, line) {
			t.Errorf("batch lacks %q:\n%s", line, batch)
		}
	}
	for _, bad := range []string{"hold", "release", "cancel", "shard"} {
		if strings.Contains(strings.ToLower(batch), bad) {
			t.Errorf("batch mentions %q:\n%s", bad, batch)
		}
	}
	reasons := map[int64]string{}
	for _, s := range rep.Skipped {
		reasons[s.JobID] += s.Reason + ";"
	}
	for r, why := range map[string]string{"held": "held", "het": "heterogeneous", "run-excl": "not pending",
		"pend-pertask": "unchanged", "pend-multinode": "GPU count", "pend-shard": "GPU count"} {
		if !strings.Contains(reasons[id(r)], why) {
			t.Errorf("%s: skip reasons %q, want %q", r, reasons[id(r)], why)
		}
	}
	if !strings.Contains(reasons[999999999], "not in the jobs read") {
		t.Errorf("unknown job: %q", reasons[999999999])
	}
}

func sorted(s []string) []string {
	out := append([]string(nil), s...)
	for i := range out {
		for j := i + 1; j < len(out); j++ {
			if out[j] < out[i] {
				out[i], out[j] = out[j], out[i]
			}
		}
	}
	return out
}

// TestPlanResize_PlansFromTheRead: the plan alone, what a dry run
// reports, names each change with the value read and applies none.
func TestPlanResize_PlansFromTheRead(t *testing.T) {
	jobs, by := fixtureJobs(t)
	rep, err := PlanResize(jobs, []Resize{{JobID: by["pend-untyped"][0].ID, CPUs: 5}})
	if err != nil || len(rep.Planned) != 1 || len(rep.Applied) != 0 || rep.Calls != 0 {
		t.Fatalf("plan: %v, %+v", err, rep)
	}
	if rep.Planned[0].CPUs != 5 || rep.Planned[0].From.CPUs != by["pend-untyped"][0].CPUs {
		t.Errorf("planned %+v", rep.Planned[0])
	}
}

func TestResizeWriter_Failures(t *testing.T) {
	jobs, by := fixtureJobs(t)
	a, b := by["pend-untyped"][0].ID, by["pend-pertask"][0].ID
	want := []Resize{{JobID: a, CPUs: 7}, {JobID: b, CPUs: 7}}
	tests := []struct {
		name    string
		stderr  string
		err     error
		applied int
	}{
		{"one job refused", fmt.Sprintf("Requested partition configuration not available now for job %d\n", a), exitError(t), 1},
		{"unattributable output", "slurm_update error: Socket timed out\n", exitError(t), 0},
		{"not started", "", errors.New("exec: scontrol: not found"), 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w, err := NewResizeWriter(ResizeConfig{Runner: &fakeRunner{stderr: []byte(tt.stderr), err: tt.err}}, nil)
			if err != nil {
				t.Fatal(err)
			}
			rep, err := w.Resize(context.Background(), jobs, want)
			if err == nil || len(rep.Applied) != tt.applied || len(rep.Failed) != 2-tt.applied {
				t.Errorf("err %v, applied %d, failed %d", err, len(rep.Applied), len(rep.Failed))
			}
		})
	}
	w, _ := NewResizeWriter(ResizeConfig{Runner: &fakeRunner{}}, nil)
	if _, err := w.Resize(context.Background(), jobs, []Resize{{JobID: a, CPUs: -1}}); err == nil {
		t.Error("a negative value was accepted")
	}
}

// TestParseComments replays real `squeue --json` output. The 22.05 lab
// capture has held jobs whose comments carry newlines and a line
// "<other job id> fairway:elastic=1-8" (job 8's names job 7, bob's, which
// has no comment) and a line "boom", which the old text parser read as
// job 7's opt-in and as a fatal error for every job.
func TestParseComments(t *testing.T) {
	b, err := os.ReadFile("testdata/squeue-22.05.8/squeue.json")
	if err != nil {
		t.Fatal(err)
	}
	got, skipped, err := parseComments(b)
	if err != nil || skipped != 0 {
		t.Fatalf("skipped %d, err %v", skipped, err)
	}
	want := map[int64]string{6: "line1\n4 fairway:elastic=1-8\nboom", 8: "mine\n7 fairway:elastic=1-8\nboom"}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("comments (-want +got):\n%s", d)
	}
	for _, rel := range []string{"slurm-24.11.7", "slurm-26.05.3"} {
		t.Run(rel, func(t *testing.T) {
			b, err := os.ReadFile(filepath.Join(shareddata.Captures(t), rel, "cli", "squeue.json"))
			if err != nil {
				t.Fatal(err)
			}
			got, skipped, err := parseComments(b)
			want := map[int64]string{13: "needs a whole node", 20: "ablation run 7"} // pending ones only; 9 runs
			if d := cmp.Diff(want, got); d != "" || err != nil || skipped != 0 {
				t.Errorf("%s: skipped %d, err %v, comments (-want +got):\n%s", rel, skipped, err, d)
			}
		})
	}

	// One malformed record (its job_id a string of letters) is skipped and
	// counted; the others are read.
	var doc map[string]any
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	jobs := doc["jobs"].([]any)
	jobs[0].(map[string]any)["job_id"] = "boom"
	bad, _ := json.Marshal(doc)
	got, skipped, err = parseComments(bad)
	if err != nil || skipped != 1 || len(got) != 2 {
		t.Errorf("one bad record: %v, skipped %d, err %v", got, skipped, err)
	}
	if _, _, err := parseComments([]byte("8 mine\n")); err == nil {
		t.Error("text output accepted as JSON")
	}

	fake := &fakeRunner{stdout: b}
	w, _ := NewResizeWriter(ResizeConfig{Runner: fake}, nil)
	if got, err := w.Comments(context.Background()); err != nil || len(got) != 2 || fake.calls[0] != "squeue --json -a -t PENDING" {
		t.Errorf("Comments: %v, %v, %q", got, err, fake.calls)
	}
}

// TestResizeWriter_GPUTypeChecked: a GPU type that is not a GRES type name
// never reaches scontrol's input; that job is left alone with a reason
// naming the type, the others are written.
func TestResizeWriter_GPUTypeChecked(t *testing.T) {
	tests := []struct {
		name, typ string
		ok        bool
	}{
		{"plain", "h100", true},
		{"underscore dash dot", "a100_80g-sxm.v2", true},
		{"newline adds a command", "h100:1\nupdate jobid=1 Priority=1", false},
		{"space adds a field", "h100 Priority=1", false},
		{"equals", "h100=1", false},
		{"colon", "h100:8", false},
		{"comma adds a gres", "h100,shard", false},
		{"non-ASCII letter", "h100é", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			jobs, by := fixtureJobs(t)
			victim, other := by["pend-untyped"][0], by["pend-pertask"][0]
			victim.GPUType = tt.typ
			fake := &fakeRunner{}
			w, err := NewResizeWriter(ResizeConfig{Runner: fake}, nil)
			if err != nil {
				t.Fatal(err)
			}
			rep, err := w.Resize(context.Background(), jobs, []Resize{{JobID: victim.ID, GPUs: victim.GPUs + 1}, {JobID: other.ID, CPUs: other.CPUs + 1}})
			if err != nil {
				t.Fatal(err)
			}
			batch := ""
			if len(fake.stdin) == 1 {
				batch = string(fake.stdin[0])
			}
			if !strings.Contains(batch, fmt.Sprintf("update jobid=%d NumCPUs=%d\n", other.ID, other.CPUs+1)) {
				t.Errorf("the other job was not written:\n%s", batch)
			}
			written := strings.Contains(batch, fmt.Sprintf("jobid=%d ", victim.ID))
			if tt.ok {
				if want := fmt.Sprintf("update jobid=%d gres=gpu:%s:%d\n", victim.ID, tt.typ, victim.GPUs+1); !strings.Contains(batch, want) {
					t.Errorf("batch lacks %q:\n%s", want, batch)
				}
				return
			}
			if written || strings.Count(batch, "\n") != 1 {
				t.Errorf("type %q reached scontrol:\n%s", tt.typ, batch)
			}
			if len(rep.Skipped) != 1 || rep.Skipped[0].JobID != victim.ID || !strings.Contains(rep.Skipped[0].Reason, fmt.Sprintf("GPU type %q", tt.typ)) {
				t.Errorf("skipped %+v, want job %d with a reason naming the type", rep.Skipped, victim.ID)
			}
		})
	}
}
