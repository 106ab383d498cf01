package rewrite

import (
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/fairway-hpc/fairway/policy"
)

func mustRewriter(t *testing.T, p Params) *Rules {
	t.Helper()
	r, err := New(p)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestParseElastic_Markers(t *testing.T) {
	tests := []struct {
		comment string
		lo, hi  int
		ok      bool
		bad     bool
	}{
		{comment: "", ok: false},
		{comment: "my run fairway:elastic=1-4 seed 3", lo: 1, hi: 4, ok: true},
		{comment: "fairway:elastic=2-2", lo: 2, hi: 2, ok: true},
		{comment: "fairway:elastic=0-4", ok: true, bad: true},
		{comment: "fairway:elastic=4-2", ok: true, bad: true},
		{comment: "fairway:elastic", ok: true, bad: true},
		{comment: "fairway:elastic=0001-0008", lo: 1, hi: 8, ok: true},
		{comment: "fairway:elastic=1-4, seed 3", lo: 1, hi: 4, ok: true},
		// A range longer than four digits was read in part (1-9999),
		// one followed by a decimal or a third number up to them (1-4),
		// and a malformed first marker was passed over for a later one.
		{comment: "fairway:elastic=1-99999", ok: true, bad: true},
		{comment: "fairway:elastic=99999999999999999999-1", ok: true, bad: true},
		{comment: "fairway:elastic=1-4.5", ok: true, bad: true},
		{comment: "fairway:elastic=1-4-8", ok: true, bad: true},
		{comment: "fairway:elastic=x fairway:elastic=1-2", ok: true, bad: true},
	}
	for _, tt := range tests {
		t.Run(tt.comment, func(t *testing.T) {
			lo, hi, ok, err := ParseElastic(tt.comment)
			if ok != tt.ok || (err != nil) != tt.bad || lo != tt.lo || hi != tt.hi {
				t.Errorf("ParseElastic(%q) = %d, %d, %v, %v; want %d, %d, %v, bad %v", tt.comment, lo, hi, ok, err, tt.lo, tt.hi, tt.ok, tt.bad)
			}
			if tt.bad && !errors.Is(err, ErrBadElastic) {
				t.Errorf("error %v does not wrap ErrBadElastic", err)
			}
		})
	}
	if !OptedOut("please fairway:no-rewrite thanks") || OptedOut("fairway:elastic=1-2") {
		t.Error("OptedOut does not find the marker exactly")
	}
}

// TestParseElastic_ErrorIsShort: the error quoted the whole comment, which
// any user writes and serve logs each cycle (FuzzParseElastic found a
// 93-byte comment of control bytes quoted to 301); it quotes the marker
// and what follows it, cut to 24 bytes.
func TestParseElastic_ErrorIsShort(t *testing.T) {
	for _, tc := range []struct{ comment, want string }{
		{"fairway:elastic" + strings.Repeat("\x81", 1<<20), `bad elastic range: "fairway:elastic\x81\x81`},
		{"run " + "fairway:elastic=" + strings.Repeat("é", 1<<20), `bad elastic range: "fairway:elastic=ééééééééééé…": want fairway:elastic=MIN-MAX`},
		{"fairway:elastic=1-" + strings.Repeat("9", 1<<20), `bad elastic range: "fairway:elastic=1-999999999999999999999…": want MIN and MAX at most 9999`},
	} {
		_, _, ok, err := ParseElastic(tc.comment)
		if !ok || err == nil || !strings.HasPrefix(err.Error(), tc.want) || len(err.Error()) > 200 {
			t.Errorf("comment of %d bytes: ok %v, err %q; want one under 200 bytes starting %q", len(tc.comment), ok, err, tc.want)
		}
	}
}

func TestNewRewriter_Validation(t *testing.T) {
	bad := []Params{
		{ShardsPerGPU: -1},
		{ShareMaxUtilPct: 120},
		{Headroom: 0.5},
		{ElasticParallel: 1.5},
		{CPUsPerGPU: 4, MaxCPUsPerGPU: 2},
	}
	for _, p := range bad {
		if _, err := New(p); err == nil {
			t.Errorf("New(%+v) accepted", p)
		}
	}
	r := mustRewriter(t, Params{ShardsPerGPU: 4, CPUsPerGPU: 2})
	got := r.p
	want := Params{ShardsPerGPU: 4, Window: 20, MinHistory: 3, ShareMaxUtilPct: 50, Headroom: 1.25,
		CPUsPerGPU: 2, MaxCPUsPerGPU: 4, ElasticParallel: 0.9}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("defaults (-want +got):\n%s", d)
	}
}

var rwT0 = time.Date(2025, 3, 1, 0, 0, 0, 0, time.UTC)

// sample is a measured whole-GPU run of alice's "train".
func sample(id int64, util float64, memMB int64) UsageSample {
	return UsageSample{JobID: id, User: "alice", Name: "train", End: rwT0.Add(time.Duration(id) * time.Hour),
		State: policy.StateCompleted, GPUs: 1, CPUs: 2, Run: time.Hour, GPUUtilPct: util, GPUMemPeakMB: memMB,
		GPUMemTotalMB: 81920, CPUsUsed: -1}
}

func TestRewriter_Profiles(t *testing.T) {
	// A window of 3 per measurement: the newest shard run does not push
	// a whole-GPU run out of the GPU window.
	r := mustRewriter(t, Params{ShardsPerGPU: 8, Window: 3})
	ss := []UsageSample{
		sample(1, 90, 70000), // oldest whole-GPU run: out of the window of 3
		sample(2, 10, 4000),
		sample(3, 20, 6000),
		sample(4, 15, 5000),
		// A shard run: its (device-wide) utilization is not the job's.
		{JobID: 5, User: "alice", Name: "train", End: rwT0.Add(5 * time.Hour), State: policy.StateCompleted, Shards: 2,
			CPUs: 1, Run: time.Hour, GPUUtilPct: 95, GPUMemPeakMB: 80000, GPUMemTotalMB: 81920, CPUsUsed: 0.5, MemUsedMB: 3000},
		{JobID: 6, User: "bob", Name: "train", End: rwT0, GPUs: 2, GPUUtilPct: -1, CPUsUsed: 3, Run: time.Hour, State: policy.StateCompleted},
	}
	// Any input order gives the same profiles.
	for range 5 {
		rand.Shuffle(len(ss), func(i, j int) { ss[i], ss[j] = ss[j], ss[i] })
		got := r.Profiles(ss)
		want := map[ProfileKey]*UsageProfile{
			{"alice", "train"}: {User: "alice", Name: "train", GPUJobs: 3, GPUUtilPct: 20, GPUMemPeakMB: 6000, GPUMemTotalMB: 81920,
				CPUJobs: 1, CPUsPerGPU: 2, MemJobs: 1, MemPerGPUMB: 12000, RunByGPUs: map[int]time.Duration{1: time.Hour}},
			{"bob", "train"}: {User: "bob", Name: "train", CPUJobs: 1, CPUsPerGPU: 1.5, RunByGPUs: map[int]time.Duration{2: time.Hour}},
		}
		if d := cmp.Diff(want, got); d != "" {
			t.Fatalf("profiles (-want +got):\n%s", d)
		}
	}
}

func TestRewriter_Share(t *testing.T) {
	prof := func(jobs int, util float64, peak, total int64) *UsageProfile {
		return &UsageProfile{User: "alice", Name: "train", GPUJobs: jobs, GPUUtilPct: util, GPUMemPeakMB: peak, GPUMemTotalMB: total}
	}
	tests := []struct {
		name   string
		shards int
		prof   *UsageProfile
		want   int // 0: no rule
		reason string
	}{
		// 20% × 1.25 = 0.25 of 8 shards = 2; memory 8/80 × 1.25 = 0.125.
		{"low utilization", 8, prof(5, 20, 8192, 81920), 2, "2 of 8 shards"},
		// Memory decides: 30 GiB of 80 × 1.25 = 0.47 → 4 of 8.
		{"memory bound", 8, prof(5, 10, 30720, 81920), 4, "4 of 8 shards"},
		{"too little history", 8, prof(2, 5, 1000, 81920), 0, "2 whole-GPU runs measured, 3 needed"},
		{"busy", 8, prof(5, 60, 1000, 81920), 0, "above 50%"},
		{"memory unknown", 8, prof(5, 10, 0, 81920), 0, "not measured"},
		// 45% × 1.25 = 0.5625 of 4 → 3 shards of 4: still shared.
		{"coarse shards", 4, prof(5, 45, 1000, 81920), 3, "3 of 4 shards"},
		// Guard rail: 72 GiB of 80 × 1.25 > 1 would be 9 of 8 shards: the
		// whole GPU, so no rule, and never more shards than a GPU has.
		{"never more shards than a GPU has", 8, prof(5, 10, 73728, 81920), 0, "the whole GPU"},
		{"sharing off", 0, prof(5, 10, 1000, 81920), 0, "sharing off"},
		// A tiny job still gets one shard, never zero.
		{"at least one shard", 16, prof(5, 0, 1, 81920), 1, "1 of 16 shards"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := mustRewriter(t, Params{ShardsPerGPU: tt.shards})
			got, ok := r.Share(tt.prof)
			if ok != (tt.want > 0) || got.Shards != tt.want {
				t.Fatalf("Share = %+v, %v; want %d shards", got, ok, tt.want)
			}
			if !strings.Contains(got.Reason, tt.reason) {
				t.Errorf("reason %q, want it to say %q", got.Reason, tt.reason)
			}
			if got.Shards >= max(tt.shards, 1) {
				t.Errorf("%d shards: a GPU has %d", got.Shards, tt.shards)
			}
		})
	}
}

// TestRewriter_ShareNeverExceedsGPU checks the guard rail on random
// profiles: a rule never asks for as many shards as a whole GPU, nor none.
func TestRewriter_ShareNeverExceedsGPU(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 5000 {
		s := 2 + rng.IntN(30)
		r := mustRewriter(t, Params{ShardsPerGPU: s, Headroom: 1 + 2*rng.Float64()})
		total := int64(1000 + rng.IntN(100000))
		p := &UsageProfile{GPUJobs: 3 + rng.IntN(5), GPUUtilPct: 100 * rng.Float64(), GPUMemPeakMB: 1 + rng.Int64N(total), GPUMemTotalMB: total}
		got, ok := r.Share(p)
		if ok && (got.Shards < 1 || got.Shards >= s) {
			t.Fatalf("case %d: %d shards of %d for %+v", i, got.Shards, s, p)
		}
	}
}

func TestRewriter_Resources(t *testing.T) {
	job := func(gpus, shards, cpus int, mem int64) *policy.Job {
		return &policy.Job{ID: 7, User: "alice", Name: "train", GPUs: gpus, Shards: shards, CPUs: cpus, MemoryMB: mem, Nodes: 1}
	}
	hist := func(cpusPerGPU float64, memPerGPU int64) *UsageProfile {
		return &UsageProfile{CPUJobs: 5, CPUsPerGPU: cpusPerGPU, MemJobs: 5, MemPerGPUMB: memPerGPU}
	}
	params := Params{ShardsPerGPU: 4, CPUsPerGPU: 2, MemPerGPUMB: 4000, NodeCPUs: 8, NodeMemMB: 16000}
	tests := []struct {
		name string
		job  *policy.Job
		prof *UsageProfile
		want []Proposal
	}{{
		name: "no history: raised to the proportional share",
		job:  job(2, 0, 1, 1000),
		want: []Proposal{{JobID: 7, Rule: RuleCPUs, CPUs: 4, From: 1}, {JobID: 7, Rule: RuleMemory, MemoryMB: 8000, From: 1000}},
	}, {
		// Guard rail: without history, never fewer CPUs (or less memory)
		// than asked, even far above the proportional share.
		name: "no history: never below what was asked",
		job:  job(1, 0, 6, 9000),
	}, {
		name: "history shows it needs less",
		job:  job(2, 0, 8, 8000),
		prof: hist(0.4, 1000), // 0.4×2×1.25 = 1 CPU; 1000×2×1.25 = 2500 MB
		want: []Proposal{{JobID: 7, Rule: RuleCPUs, CPUs: 1, From: 8}, {JobID: 7, Rule: RuleMemory, MemoryMB: 2500, From: 8000}},
	}, {
		name: "history shows it needs more, capped at twice the share",
		job:  job(1, 0, 2, 4000),
		prof: hist(5, 3000), // 5×1.25 = 6.25 → cap 4; 3750 MB
		want: []Proposal{{JobID: 7, Rule: RuleCPUs, CPUs: 4, From: 2}, {JobID: 7, Rule: RuleMemory, MemoryMB: 3750, From: 4000}},
	}, {
		name: "too little history counts as none",
		job:  job(1, 0, 1, 4000),
		prof: &UsageProfile{CPUJobs: 2, CPUsPerGPU: 0.1},
		want: []Proposal{{JobID: 7, Rule: RuleCPUs, CPUs: 2, From: 1}},
	}, {
		name: "shards count as a fraction of a GPU",
		job:  job(0, 2, 1, 1000), // half a GPU: 1 CPU, 2000 MB
		want: []Proposal{{JobID: 7, Rule: RuleMemory, MemoryMB: 2000, From: 1000}},
	}, {
		name: "capped at the node",
		job:  job(4, 0, 2, 4000),
		prof: hist(3, 5000), // 3×4×1.25 = 15 → cap 16 → node 8; 25000 → node 16000
		want: []Proposal{{JobID: 7, Rule: RuleCPUs, CPUs: 8, From: 2}, {JobID: 7, Rule: RuleMemory, MemoryMB: 16000, From: 4000}},
	}, {
		name: "CPU-only jobs are left alone",
		job:  job(0, 0, 1, 100),
	}}
	r := mustRewriter(t, params)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := r.Resources(tt.job, Asked{}, tt.prof)
			for i := range got {
				if got[i].Reason == "" {
					t.Errorf("proposal %d has no reason", i)
				}
				got[i].Reason = ""
			}
			if d := cmp.Diff(tt.want, got); d != "" {
				t.Errorf("Resources (-want +got):\n%s", d)
			}
		})
	}
	if got := mustRewriter(t, Params{}).Resources(job(1, 0, 1, 100), Asked{}, nil); got != nil {
		t.Errorf("rules off: got %+v", got)
	}
}

// TestRewriter_ResourcesNoHistoryGuard: on random jobs without history the
// CPU and memory proposals never go below the request.
func TestRewriter_ResourcesNoHistoryGuard(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	r := mustRewriter(t, Params{ShardsPerGPU: 8, CPUsPerGPU: 3, MemPerGPUMB: 2000})
	for range 5000 {
		j := &policy.Job{ID: 1, GPUs: rng.IntN(9), Shards: rng.IntN(8), CPUs: 1 + rng.IntN(64), MemoryMB: 1 + rng.Int64N(64000)}
		var p *UsageProfile
		if rng.IntN(2) == 0 {
			p = &UsageProfile{CPUJobs: rng.IntN(3), CPUsPerGPU: rng.Float64(), MemJobs: rng.IntN(3), MemPerGPUMB: 1}
		}
		for _, pr := range r.Resources(j, Asked{}, p) {
			if (pr.Rule == RuleCPUs && pr.CPUs < j.CPUs) || (pr.Rule == RuleMemory && pr.MemoryMB < j.MemoryMB) {
				t.Fatalf("job %+v without history: %+v below the request", j, pr)
			}
		}
	}
}

func TestRewriter_Elastic(t *testing.T) {
	r := mustRewriter(t, Params{GPUsPerNode: 4})
	job := func(id int64, gpus int, limit time.Duration) *policy.Job {
		return &policy.Job{ID: id, GPUs: gpus, Nodes: 1, TimeLimit: limit}
	}
	linear := &UsageProfile{RunByGPUs: map[int]time.Duration{1: 4 * time.Hour, 2: 2 * time.Hour, 4: time.Hour}} // p = 1
	serial := &UsageProfile{RunByGPUs: map[int]time.Duration{1: time.Hour, 4: time.Hour}}                       // p = 0
	tests := []struct {
		name string
		jobs []ElasticJob
		free int
		want map[int64]int // job → GPUs proposed
	}{{
		name: "nothing free: nothing changes",
		jobs: []ElasticJob{{Job: job(1, 2, time.Hour), Min: 1, Max: 4}},
		free: 0,
	}, {
		name: "shrinks to start now",
		jobs: []ElasticJob{{Job: job(1, 4, time.Hour), Min: 1, Max: 4}},
		free: 2,
		want: map[int64]int{1: 2},
	}, {
		name: "grows into idle GPUs, up to the node",
		jobs: []ElasticJob{{Job: job(1, 1, time.Hour), Min: 1, Max: 8}},
		free: 8,
		want: map[int64]int{1: 4},
	}, {
		// Both get their minimum first (weight 1), then the spare GPUs go to
		// the job that scales: linear gains more than serial.
		name: "marginal gain decides",
		jobs: []ElasticJob{{Job: job(1, 2, time.Hour), Min: 1, Max: 4, Profile: serial}, {Job: job(2, 2, time.Hour), Min: 1, Max: 4, Profile: linear}},
		free: 5,
		want: map[int64]int{1: 1, 2: 4},
	}, {
		// Too few GPUs for both minimums: the shorter job first (AFS at
		// zero GPUs), the other keeps its request.
		name: "shortest first at zero",
		jobs: []ElasticJob{{Job: job(1, 2, 5*time.Hour), Min: 2, Max: 2}, {Job: job(2, 3, time.Hour), Min: 2, Max: 3, Predicted: 30 * time.Minute}},
		free: 2,
		want: map[int64]int{2: 2},
	}, {
		// A job that is not elastic ranked between the two takes its 2
		// GPUs before the second, not before the first.
		name: "jobs ranked ahead take theirs first",
		jobs: []ElasticJob{{Job: job(1, 4, time.Hour), Min: 1, Max: 4}, {Job: job(2, 4, time.Hour), Min: 1, Max: 4, Ahead: 2}},
		free: 3,
		want: map[int64]int{1: 3},
	}, {
		name: "what is ahead leaves the rest",
		jobs: []ElasticJob{{Job: job(1, 4, time.Hour), Min: 1, Max: 4, Ahead: 1}},
		free: 3,
		want: map[int64]int{1: 2},
	}, {
		name: "multi-node and empty ranges are left out",
		jobs: []ElasticJob{{Job: &policy.Job{ID: 1, GPUs: 2, Nodes: 2}, Min: 1, Max: 4}, {Job: job(2, 1, 0), Min: 5, Max: 6}},
		free: 8,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := map[int64]int{}
			for _, p := range r.Elastic(tt.jobs, tt.free) {
				if p.Rule != RuleElastic || p.Reason == "" || int64(p.GPUs) == p.From {
					t.Errorf("bad proposal %+v", p)
				}
				got[p.JobID] = p.GPUs
			}
			if tt.want == nil {
				tt.want = map[int64]int{}
			}
			if d := cmp.Diff(tt.want, got); d != "" {
				t.Errorf("Elastic (-want +got):\n%s", d)
			}
		})
	}
}

func TestAmdahlFit_Recovers(t *testing.T) {
	for _, p := range []float64{0, 0.5, 0.9, 1} {
		prof := &UsageProfile{RunByGPUs: map[int]time.Duration{}}
		for _, g := range []int{1, 2, 4, 8} {
			prof.RunByGPUs[g] = time.Duration(3600 * amdahlTime(p, g) * float64(time.Second))
		}
		got, ok := amdahlFit(prof)
		if !ok || math.Abs(got-p) > 1e-3 {
			t.Errorf("fit of p=%g: %g, %v", p, got, ok)
		}
	}
	if _, ok := amdahlFit(&UsageProfile{RunByGPUs: map[int]time.Duration{2: time.Hour}}); ok {
		t.Error("one GPU count cannot be fitted")
	}
}

// TestRewriter_ElasticReasonNamesTheCap: a count capped by the GPUs free on
// one node is not called the job's maximum ("gives its maximum 2" for a
// job of range 1-4).
func TestRewriter_ElasticReasonNamesTheCap(t *testing.T) {
	r := mustRewriter(t, Params{GPUsPerNode: 2})
	ps := r.Elastic([]ElasticJob{{Job: &policy.Job{ID: 1, GPUs: 4, Nodes: 1, TimeLimit: time.Hour}, Min: 1, Max: 4}}, 4)
	if len(ps) != 1 || ps[0].GPUs != 2 {
		t.Fatalf("proposals %+v, want job 1 at 2 GPUs", ps)
	}
	if want := "gives 2, the most GPUs free on one node"; !strings.Contains(ps[0].Reason, want) || strings.Contains(ps[0].Reason, "maximum") {
		t.Errorf("reason %q, want it to say %q", ps[0].Reason, want)
	}
}
