package slurmctl

import (
	"context"
	"errors"
	"math/rand/v2"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/fairway-hpc/fairway/policy"
)

// fakeRunner plays scontrol/sprio: it records each command and answers
// with canned output.
type fakeRunner struct {
	stdout, stderr []byte
	err            error
	calls          []string
	stdin          [][]byte
}

func (f *fakeRunner) Run(_ context.Context, stdin []byte, name string, args ...string) ([]byte, []byte, error) {
	f.calls = append(f.calls, strings.Join(append([]string{name}, args...), " "))
	f.stdin = append(f.stdin, stdin)
	return f.stdout, f.stderr, f.err
}

// exitError is a real *exec.ExitError (status 1), as scontrol gives when
// some updates failed.
func exitError(t testing.TB) error {
	t.Helper()
	err := exec.Command("false").Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		t.Fatalf("false: %v", err)
	}
	return err
}

// fixtureJobs are the captured jobs by role.
func fixtureJobs(t testing.TB) ([]Job, map[string][]*Job) {
	t.Helper()
	jobs, _, err := parseJobs(fixture(t, "jobs.200.json"))
	if err != nil {
		t.Fatal(err)
	}
	by := map[string][]*Job{}
	for i := range jobs {
		by[role(jobs[i].Name)] = append(by[role(jobs[i].Name)], &jobs[i])
	}
	return jobs, by
}

func siteRange() policy.SlurmRange { return policy.SlurmRange{Min: 1, Max: 1_000_000, Gap: 1} }

func TestWriter_Invariants(t *testing.T) {
	jobs, by := fixtureJobs(t)
	id := func(r string, i int) int64 { return by[r][i].ID }
	want := map[int64]int64{
		id("run-shard", 0):      500,     // running: never touched
		id("array", 0):          501,     // a running array task
		id("array", 2):          502,     // the pending array record: written as A_[2-4]
		id("pend-multinode", 0): 0,       // clamped up to Min: never a 0
		id("pend-untyped", 0):   -7,      // clamped up to Min
		id("pend-shard", 0):     9999999, // clamped down to Max
		id("pend-gpus", 0):      600,
		id("het", 0):            700, // heterogeneous: read, never written
		id("het", 1):            701,
		id("held", 0):           800, // held: never written (a priority would release it)
		id("array-limited", 0):  900, // "0-9%2" is written as A_[0-9]
		424242:                  1,   // not in the jobs read
	}
	fake := &fakeRunner{}
	w, err := NewWriter(WriterConfig{Mode: ModeScontrolSiteFactor, Range: siteRange(), Runner: fake}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := w.Write(context.Background(), jobs, want)
	if err != nil {
		t.Fatal(err)
	}
	arr, lim := id("array", 2), id("array-limited", 0)
	wantPlanned := []Change{
		{JobID: arr, Target: strconv.FormatInt(arr, 10) + "_[2-4]", To: 502},
		{JobID: id("pend-multinode", 0), Target: strconv.FormatInt(id("pend-multinode", 0), 10), To: 1, Clamped: true},
		{JobID: id("pend-untyped", 0), Target: strconv.FormatInt(id("pend-untyped", 0), 10), To: 1, Clamped: true},
		{JobID: id("pend-shard", 0), Target: strconv.FormatInt(id("pend-shard", 0), 10), To: 1_000_000, Clamped: true},
		{JobID: id("pend-gpus", 0), Target: strconv.FormatInt(id("pend-gpus", 0), 10), To: 600},
		{JobID: lim, Target: strconv.FormatInt(lim, 10) + "_[0-9]", To: 900},
	}
	sortChanges := cmpopts.SortSlices(func(a, b Change) bool { return a.JobID < b.JobID })
	if diff := cmp.Diff(wantPlanned, rep.Planned, sortChanges); diff != "" {
		t.Errorf("planned (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(wantPlanned, rep.Applied, sortChanges); diff != "" {
		t.Errorf("applied (-want +got):\n%s", diff)
	}
	wantSkipped := []Skip{
		{id("run-shard", 0), "not pending"}, {id("array", 0), "not pending"},
		{id("het", 0), "heterogeneous job"}, {id("het", 1), "heterogeneous job"},
		{id("held", 0), "held"}, {424242, "not in the jobs read"},
	}
	if diff := cmp.Diff(wantSkipped, rep.Skipped, cmpopts.SortSlices(func(a, b Skip) bool { return a.JobID < b.JobID })); diff != "" {
		t.Errorf("skipped (-want +got):\n%s", diff)
	}
	if len(fake.calls) != 1 || fake.calls[0] != "scontrol" || rep.Calls != 1 {
		t.Fatalf("commands %q, report calls %d: want one scontrol", fake.calls, rep.Calls)
	}
	// The only command ever sent: update jobid=<targets> sitefactor=<positive>.
	line := regexp.MustCompile(`^update jobid=[0-9]+(_\[[0-9,:-]+\])?(,[0-9]+(_\[[0-9,:-]+\])?)* sitefactor=[1-9][0-9]*$`)
	lines := strings.Split(strings.TrimSpace(string(fake.stdin[0])), "\n")
	for _, l := range lines {
		if !line.MatchString(l) {
			t.Errorf("scontrol line %q is not a site factor update", l)
		}
	}
	if len(lines) != 5 { // values 1 (two jobs), 502, 600, 900, 1000000
		t.Errorf("scontrol stdin:\n%s\nwant one line per value (5)", fake.stdin[0])
	}

	// Same values again: nothing to write, no command at all.
	fake.calls = nil
	rep, err = w.Write(context.Background(), jobs, want)
	if err != nil || len(fake.calls) != 0 || rep.Calls != 0 || len(rep.Planned) != 0 {
		t.Errorf("second write: %v, %d commands, %d planned; want none", err, len(fake.calls), len(rep.Planned))
	}
	unchanged := 0
	for _, s := range rep.Skipped {
		if s.Reason == "unchanged" {
			unchanged++
		}
	}
	if unchanged != 6 {
		t.Errorf("%d unchanged skips, want 6", unchanged)
	}
}

// TestWriter_ScontrolAttribution replays the captured stderr of a batch
// with a job that never existed and a finished job: those two fail, the
// others are applied and remembered.
func TestWriter_ScontrolAttribution(t *testing.T) {
	stdin := string(fixture(t, "scontrol-batch.stdin"))
	// The batch's targets and values, read back from the captured stdin.
	var plan []Change
	for _, l := range strings.Split(strings.TrimSpace(stdin), "\n") {
		var targets string
		var v int64
		f := strings.Fields(l)
		targets = strings.TrimPrefix(f[1], "jobid=")
		v, _ = strconv.ParseInt(strings.TrimPrefix(f[2], "sitefactor="), 10, 64)
		for _, tg := range strings.Split(targets, ",") {
			n, _ := strconv.ParseInt(strings.SplitN(tg, "_", 2)[0], 10, 64)
			plan = append(plan, Change{JobID: n, Target: tg, To: v})
		}
	}
	if got := string(scontrolBatch(plan, 200)); got != stdin {
		t.Fatalf("scontrolBatch does not reproduce the captured batch:\n%s\nwant\n%s", got, stdin)
	}
	failed, unattributed := attributeScontrol(fixture(t, "scontrol-batch.stderr"), plan)
	if len(unattributed) != 0 || len(failed) != 2 || failed["4294967000"] != "Invalid job id specified" {
		t.Errorf("failed %v, unattributed %v", failed, unattributed)
	}

	fake := &fakeRunner{stderr: fixture(t, "scontrol-batch.stderr"), err: exitError(t)}
	w, err := NewWriter(WriterConfig{Mode: ModeScontrolSiteFactor, Range: siteRange(), Runner: fake}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	rep := Report{Planned: plan}
	err = w.writeScontrol(context.Background(), &rep)
	if err == nil || len(rep.Applied) != 2 || len(rep.Failed) != 2 {
		t.Fatalf("writeScontrol: %v, applied %v, failed %v", err, rep.Applied, rep.Failed)
	}
	for _, c := range rep.Applied {
		if w.last[c.JobID] != c.To {
			t.Errorf("applied %s not remembered", c.Target)
		}
	}
	for _, f := range rep.Failed {
		if _, ok := w.last[f.JobID]; ok {
			t.Errorf("failed %s remembered", f.Target)
		}
	}
}

func TestWriter_ScontrolUnknownOutcome(t *testing.T) {
	jobs, by := fixtureJobs(t)
	want := map[int64]int64{by["pend-gpus"][0].ID: 10, by["pend-shard"][0].ID: 20}
	for name, fake := range map[string]*fakeRunner{
		"controller down": {stderr: []byte("slurm_update error: Unable to contact slurm controller (connect failure)\n"), err: exitError(t)},
		"no scontrol":     {err: exec.ErrNotFound},
		"silent failure":  {err: exitError(t)},
	} {
		t.Run(name, func(t *testing.T) {
			w, err := NewWriter(WriterConfig{Mode: ModeScontrolSiteFactor, Range: siteRange(), Runner: fake}, nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			rep, err := w.Write(context.Background(), jobs, want)
			if err == nil || len(rep.Applied) != 0 || len(rep.Failed) != 2 || !strings.Contains(err.Error(), "outcome unknown") {
				t.Errorf("Write: %v, applied %d, failed %d", err, len(rep.Applied), len(rep.Failed))
			}
			if len(w.last) != 0 {
				t.Errorf("remembered %v after an unknown outcome", w.last)
			}
		})
	}
}

// TestWriter_RESTPerJobFailureV0038: on Slurm 22.05 the second job's
// update comes back with the captured errors entry (HTTP 200, "Unknown
// key"): that job fails alone and the third is still written.
func TestWriter_RESTPerJobFailureV0038(t *testing.T) {
	jobs, by := fixtureJobs(t)
	a, b, c3 := by["pend-multinode"][0].ID, by["pend-untyped"][0].ID, by["pend-shard"][0].ID
	post := func(id int64) string { return "POST /slurm/v0.0.38/job/" + strconv.FormatInt(id, 10) }
	srv := newReplay(t, map[string][]reply{
		post(a):  {{200, fixture(t, "update-priority.200.json"), 0}},
		post(b):  {{200, fixture(t, "update-site-factor.200.json"), 0}},
		post(c3): {{200, fixture(t, "update-priority.200.json"), 0}},
	})
	c := testClient(t, srv.URL, V0038, nil)
	w, err := NewWriter(WriterConfig{Mode: ModeRESTPriority, Range: policy.PriorityRange()}, c, nil)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := w.Write(context.Background(), jobs, map[int64]int64{a: 100000, b: 90000, c3: 80000})
	if !errors.Is(err, ErrSlurm) {
		t.Fatalf("Write: %v, want ErrSlurm", err)
	}
	if len(rep.Applied) != 2 || len(rep.Failed) != 1 || rep.Failed[0].JobID != b {
		t.Errorf("applied %v, failed %v", rep.Applied, rep.Failed)
	}
	if srv.count(post(c3)) != 1 {
		t.Errorf("the third job was not written after the second was refused")
	}
	for i, body := range srv.bodies {
		if srv.urls[i].Path != "/slurm/v0.0.38/job/"+strconv.FormatInt(a, 10) && !strings.HasPrefix(srv.urls[i].Path, "/slurm/v0.0.38/job/") {
			continue
		}
		if len(body) > 0 && !regexp.MustCompile(`^\{"priority":[1-9][0-9]*\}$`).Match(body) {
			t.Errorf("request %d body %s is not a positive priority", i, body)
		}
	}
}

// TestWriter_PriorityUnchangedReadsPriority: in priority mode the value
// Slurm holds is the priority read, so a job already at its value is not
// written.
func TestWriter_PriorityUnchangedReadsPriority(t *testing.T) {
	jobs, by := fixtureJobs(t)
	j := by["pend-gpus"][0]
	srv := newReplay(t, map[string][]reply{})
	w, err := NewWriter(WriterConfig{Mode: ModeRESTPriority, Range: policy.PriorityRange()}, testClient(t, srv.URL, V0038, nil), nil)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := w.Write(context.Background(), jobs, map[int64]int64{j.ID: j.Priority})
	if err != nil || srv.total() != 0 || len(rep.Skipped) != 1 || rep.Skipped[0].Reason != "unchanged" {
		t.Errorf("Write: %v, %d requests, skipped %v", err, srv.total(), rep.Skipped)
	}
}

func TestWriter_PrimeFromSprio(t *testing.T) {
	jobs, by := fixtureJobs(t)
	fake := &fakeRunner{stdout: fixture(t, "sprio.txt")}
	w, err := NewWriter(WriterConfig{Mode: ModeScontrolSiteFactor, Range: siteRange(), Runner: fake}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	n, err := w.Prime(context.Background())
	if err != nil || n != 3 || fake.calls[0] != "sprio -h -o %i %S" {
		t.Fatalf("Prime: %d, %v, ran %q", n, err, fake.calls)
	}
	// sprio.txt was captured after site factors 1234 (multinode) and 77
	// (untyped): asking for those values writes nothing.
	fake.calls = nil
	rep, err := w.Write(context.Background(), jobs, map[int64]int64{by["pend-multinode"][0].ID: 1234, by["pend-untyped"][0].ID: 77})
	if err != nil || len(fake.calls) != 0 || len(rep.Planned) != 0 {
		t.Errorf("Write after Prime: %v, ran %q, planned %v", err, fake.calls, rep.Planned)
	}
	if _, err := parseSprio([]byte("12 x\n")); err == nil {
		t.Error("parseSprio accepted a bad line")
	}
}

func TestNewWriter_Config(t *testing.T) {
	srv := newReplay(t, map[string][]reply{})
	c38 := testClient(t, srv.URL, V0038, nil)
	c41 := testClient(t, srv.URL, V0041, nil)
	for name, tc := range map[string]struct {
		cfg WriterConfig
		c   *Client
	}{
		"no mode":                {WriterConfig{Range: siteRange()}, c38},
		"min 0 would hold":       {WriterConfig{Mode: ModeRESTPriority, Range: policy.SlurmRange{Min: 0, Max: 10}}, c38},
		"max below min":          {WriterConfig{Mode: ModeScontrolSiteFactor, Range: policy.SlurmRange{Min: 5, Max: 4}}, nil},
		"site factor too big":    {WriterConfig{Mode: ModeScontrolSiteFactor, Range: policy.SlurmRange{Min: 1, Max: 1 << 32}}, nil},
		"priority into NO_VAL":   {WriterConfig{Mode: ModeRESTPriority, Range: policy.SlurmRange{Min: 1, Max: 1<<32 - 2}}, c38},
		"rest site factor on 22": {WriterConfig{Mode: ModeRESTSiteFactor, Range: siteRange()}, c38},
		"rest without a client":  {WriterConfig{Mode: ModeRESTPriority, Range: siteRange()}, nil},
	} {
		if _, err := NewWriter(tc.cfg, tc.c, nil); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if _, err := NewWriter(WriterConfig{Mode: ModeRESTSiteFactor, Range: siteRange()}, c41, nil); err != nil {
		t.Errorf("rest-site-factor on v0.0.41: %v", err)
	}
	for _, m := range []Mode{ModeScontrolSiteFactor, ModeRESTSiteFactor, ModeRESTPriority} {
		if got, err := ParseMode(m.String()); err != nil || got != m {
			t.Errorf("ParseMode(%q) = %v, %v", m, got, err)
		}
	}
	if _, err := ParseMode("hold"); err == nil {
		t.Error("ParseMode accepted an unknown mode")
	}
}

// TestWriter_InvariantsRandom throws random wanted values (any int64, any
// job id of the capture or not) at the Writer, twice, and checks every
// command it sends against the invariants.
func TestWriter_InvariantsRandom(t *testing.T) {
	jobs, _ := fixtureJobs(t)
	byID := map[int64]*Job{}
	var idsIn []int64
	for i := range jobs {
		byID[jobs[i].ID] = &jobs[i]
		idsIn = append(idsIn, jobs[i].ID)
	}
	r := rand.New(rand.NewPCG(1, 2))
	rng := policy.SlurmRange{Min: 1000, Max: 2000, Gap: 1}
	for round := range 200 {
		fake := &fakeRunner{}
		w, err := NewWriter(WriterConfig{Mode: ModeScontrolSiteFactor, Range: rng, Runner: fake}, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		want := map[int64]int64{}
		for range r.IntN(len(jobs) + 3) {
			id := idsIn[r.IntN(len(idsIn))]
			if r.IntN(5) == 0 {
				id = r.Int64N(1 << 40)
			}
			want[id] = r.Int64() - r.Int64()
		}
		for range 2 {
			rep, err := w.Write(context.Background(), jobs, want)
			if err != nil {
				t.Fatalf("round %d: %v", round, err)
			}
			for _, c := range rep.Planned {
				j := byID[c.JobID]
				if j == nil || !j.Pending() || j.HetJob || c.To < rng.Min || c.To > rng.Max || c.Target != j.Target() {
					t.Fatalf("round %d: planned %+v for job %+v", round, c, j)
				}
			}
		}
		if len(fake.calls) > 1 {
			t.Fatalf("round %d: %d commands for the same values twice, want at most 1", round, len(fake.calls))
		}
		for _, in := range fake.stdin {
			for _, l := range strings.Split(strings.TrimSpace(string(in)), "\n") {
				f := strings.Fields(l)
				v, _ := strconv.ParseInt(strings.TrimPrefix(f[len(f)-1], "sitefactor="), 10, 64)
				if len(f) != 3 || f[0] != "update" || v < rng.Min || v > rng.Max {
					t.Fatalf("round %d: command %q", round, l)
				}
			}
		}
	}
}

// TestWriter_PrimeRESTRunsNoCommand: the REST modes run where Slurm's
// commands may be absent (slurmrestd on another host), so Prime must not
// run sprio there; rest-site-factor then writes every wanted value once.
func TestWriter_PrimeRESTRunsNoCommand(t *testing.T) {
	jobs, by := fixtureJobs(t)
	srv := newReplay(t, map[string][]reply{})
	for _, m := range []Mode{ModeRESTSiteFactor, ModeRESTPriority} {
		t.Run(m.String(), func(t *testing.T) {
			// A runner that fails like a host without Slurm's commands.
			fake := &fakeRunner{err: &exec.Error{Name: "sprio", Err: exec.ErrNotFound}}
			w, err := NewWriter(WriterConfig{Mode: m, Range: restRange(m), Runner: fake}, testClient(t, srv.URL, V0041, nil), nil)
			if err != nil {
				t.Fatal(err)
			}
			n, err := w.Prime(context.Background())
			if err != nil || n != 0 || len(fake.calls) != 0 {
				t.Fatalf("Prime: %d, %v, ran %q; want 0, no error, no command", n, err, fake.calls)
			}
			if m != ModeRESTSiteFactor {
				return
			}
			j := by["pend-untyped"][0]
			// The replay answers no write, so the write itself fails:
			// what it planned is what counts here.
			rep, _ := w.Write(context.Background(), jobs, map[int64]int64{j.ID: 77})
			if len(rep.Planned) != 1 || rep.Planned[0].FromKnown {
				t.Errorf("Write after Prime: planned %+v; want the value planned as unknown", rep.Planned)
			}
		})
	}
}
