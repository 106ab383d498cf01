package report_test

import (
	"bytes"
	"encoding/csv"
	"errors"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fairway-hpc/fairway/accounting"
	"github.com/fairway-hpc/fairway/accounting/report"
	"github.com/fairway-hpc/fairway/policy"
	"github.com/fairway-hpc/fairway/policy/sim"
	"github.com/google/go-cmp/cmp"
)

func at(day, hour int) time.Time { return time.Date(2026, 10, day, hour, 0, 0, 0, time.UTC) }

// handData is a month small enough to work out by hand (4 GPUs, October
// 2026, 744 hours):
//
//	A alice/a  2 GPUs  submit 10-01 00h, ran 01h–11h       COMPLETED  20 GPU-h, wait 1 h
//	B bob/b    1 GPU   submit 10-02 00h, ran 00h–05h       CANCELLED   5 GPU-h, wait 0
//	C bob/b    1 GPU   submit 09-30 20h, ran 22h–10-01 02h FAILED      2 GPU-h in October, wait 2 h
//	D alice/a  4 GPUs  submit 10-31 20h, ran 22h–11-01 04h COMPLETED   8 GPU-h in October, ends in November
//	E carol/c  1 GPU   submit 10-10 00h, cancelled pending at 01h       0 GPU-h, no wait
func handData() *report.Data {
	job := func(id int64, user, acct string, gpus int, submit, start, end time.Time, st policy.State) policy.Job {
		return policy.Job{ID: id, ArrayTask: -1, User: user, Account: acct, Partition: "gpu", GPUs: gpus,
			Submit: submit, Start: start, End: end, State: st, TimeLimit: 12 * time.Hour}
	}
	return &report.Data{
		Cluster: "hand",
		Month:   report.Month{Year: 2026, Month: time.October},
		Jobs: []policy.Job{
			job(3, "bob", "b", 1, at(0, 20), at(0, 22), at(1, 2), policy.StateFailed),
			job(1, "alice", "a", 2, at(1, 0), at(1, 1), at(1, 11), policy.StateCompleted),
			job(2, "bob", "b", 1, at(2, 0), at(2, 0), at(2, 5), policy.StateCancelled),
			job(5, "carol", "c", 1, at(10, 0), time.Time{}, at(10, 1), policy.StateCancelled),
			job(4, "alice", "a", 4, at(31, 20), at(31, 22), at(32, 4), policy.StateCompleted),
		},
		Outcomes: []report.Outcome{
			{JobID: 1, Partition: "gpu", Predictor: "fairway", Predicted: 9 * 3600, Actual: 10 * 3600},
			{JobID: 2, Partition: "gpu", Predictor: "fairway", Predicted: 1 * 3600, Actual: 5 * 3600},
			{JobID: 3, Partition: "gpu", Predictor: "fairway", Predicted: 3 * 3600, Actual: 4 * 3600},
		},
		Decisions: []report.JobDecisions{
			{JobID: 1, Rows: 2, Written: 2, Policy: "fair-qssf", Predictor: "fairway"},
			{JobID: 2, Rows: 1, Written: 1, Policy: "fair-qssf", Predictor: "fairway"},
			{JobID: 3, Rows: 1, Planned: 1, Policy: "fair-qssf", Predictor: "fairway"},
		},
	}
}

func handOptions() report.Options {
	return report.Options{Cluster: sim.Cluster{Nodes: 1, PerNode: 4, Unit: sim.GPUs}}
}

// TestBuild_HandComputed checks the figures of handData against values
// worked out by hand.
func TestBuild_HandComputed(t *testing.T) {
	r, err := report.Build(handData(), nil, handOptions())
	if err != nil {
		t.Fatal(err)
	}
	s := r.Summary
	type figures struct {
		Jobs, Accounts, Users                  int
		Hours, Available, Util, Jain           float64
		MedianWait, P95Wait, Cancelled, Failed float64
		Lost                                   float64
	}
	// Jain over x = used/entitled = (0.8, 0.2, 0)/(1/3): (Σx)²/(n·Σx²) = 9/18.36.
	want := figures{Jobs: 4, Accounts: 3, Users: 3, Hours: 35, Available: 4 * 744, Util: 35.0 / 2976, Jain: 9 / 18.36,
		MedianWait: 3600, P95Wait: 3600 + 0.9*3600, Cancelled: 5, Failed: 2, Lost: 7.0 / 35}
	got := figures{s.Jobs, s.Accounts, s.Users, float64(s.Hours), float64(s.Available), float64(s.Utilization), float64(s.Jain),
		float64(s.MedianWait), float64(s.P95Wait), float64(s.CancelledHours), float64(s.FailedHours), float64(s.Lost)}
	if diff := cmp.Diff(want, got, cmp.Comparer(approx)); diff != "" {
		t.Errorf("summary (-want +got):\n%s", diff)
	}

	type acct struct {
		Account           string
		Hours, Used, Ent  float64
		Jobs              int
		MedianWait, Rho   float64
		Cancelled, Failed float64
	}
	// ρ of A: N = (11 h of alice + 2 h of bob)/11 h; 2·N/4 < 1, so T = run
	// and ρ = 11 h / 10 h.
	wantA := []acct{
		{"a", 28, 0.8, 1.0 / 3, 1, 3600, 1.1, 0, 0},
		{"b", 7, 0.2, 1.0 / 3, 2, 3600, math.NaN(), 5, 2},
		{"c", 0, 0, 1.0 / 3, 1, math.NaN(), math.NaN(), 0, 0},
	}
	// b's ρ: B ran 5 h from submission (ρ 1); C waited 2 h for a 4-h run
	// while alice was active for 2 of its 6 h: N = 8/6, ρ = 6/4 = 1.5; the
	// median of (1, 1.5) is 1.25.
	wantA[1].Rho = 1.25
	var gotA []acct
	for _, a := range r.Accounts {
		gotA = append(gotA, acct{a.Account, float64(a.Hours), float64(a.Used), float64(a.Entitled), a.Jobs,
			float64(a.MedianWait), float64(a.MedianRho), float64(a.Cancelled), float64(a.Failed)})
	}
	if diff := cmp.Diff(wantA, gotA, cmp.Comparer(approxNaN)); diff != "" {
		t.Errorf("accounts (-want +got):\n%s", diff)
	}

	days := map[string]float64{}
	for _, d := range r.Daily {
		if d.Hours > 0 {
			days[d.Date] = float64(d.Hours)
		}
	}
	if diff := cmp.Diff(map[string]float64{"2026-10-01": 22, "2026-10-02": 5, "2026-10-31": 8}, days, cmp.Comparer(approx)); diff != "" {
		t.Errorf("daily GPU-hours (-want +got):\n%s", diff)
	}
	if len(r.Daily) != 31 {
		t.Errorf("%d days, want 31", len(r.Daily))
	}

	// Predictions: errors 1 h, 4 h, 1 h → MedAE 1 h; within ±50%: A and
	// C. Time limits (12 h) vs runs 10, 5, 4 h (D ends in November, E
	// never ran): errors 2, 7, 8 h, within ±50% only A.
	type pred struct {
		Predictor       string
		Jobs            int
		MedAE, Within50 float64
	}
	var gotP []pred
	for _, p := range r.Predictions {
		gotP = append(gotP, pred{p.Predictor, p.Jobs, float64(p.MedAE), float64(p.Within50)})
	}
	wantP := []pred{{"fairway", 3, 3600, 2.0 / 3}, {"time limit", 3, 7 * 3600, 1.0 / 3}}
	if diff := cmp.Diff(wantP, gotP, cmp.Comparer(approx)); diff != "" {
		t.Errorf("predictions (-want +got):\n%s", diff)
	}

	c := r.Changes
	if c.Jobs != 2 || c.Reranked != 1 || c.Planned != 1 || c.Policy != "fair-qssf" || c.Rows != 4 {
		t.Errorf("changes = %+v, want 2 ranked, 1 re-ranked, 1 dry run only, fair-qssf, 4 rows", c)
	}
	if r.Capacity.Estimated || r.Capacity.Units != 4 {
		t.Errorf("capacity = %+v, want 4 GPUs as configured", r.Capacity)
	}
}

// TestBuild_UserInTwoAccounts: alice ran jobs in accounts a and b, bob in
// b. The summary counts 2 users with jobs (people, not associations) in 2
// accounts, while the users table keeps a row per user and account (3).
func TestBuild_UserInTwoAccounts(t *testing.T) {
	job := func(id int64, user, acct string, day int) policy.Job {
		return policy.Job{ID: id, ArrayTask: -1, User: user, Account: acct, Partition: "gpu", GPUs: 1,
			Submit: at(day, 0), Start: at(day, 0), End: at(day, 1), State: policy.StateCompleted}
	}
	d := &report.Data{Cluster: "hand", Month: report.Month{Year: 2026, Month: time.October},
		Jobs: []policy.Job{job(1, "alice", "a", 1), job(2, "alice", "b", 2), job(3, "bob", "b", 3)}}
	r, err := report.Build(d, nil, handOptions())
	if err != nil {
		t.Fatal(err)
	}
	type counts struct{ Users, Accounts, UserRows int }
	want := counts{Users: 2, Accounts: 2, UserRows: 3}
	got := counts{r.Summary.Users, r.Summary.Accounts, len(r.Users)}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("counts (-want +got):\n%s", diff)
	}
}

// TestBuild_CPUUnitCountsProcessors: on a report in processors (--unit
// cpu), a job holding 2 GPUs and 8 CPUs for 10 h uses 80 processor-hours,
// not 20 (its GPUs), beside a CPU-only job of 4 CPUs for 5 h (20): 100
// processor-hours of 64 × 744 available.
func TestBuild_CPUUnitCountsProcessors(t *testing.T) {
	d := &report.Data{Cluster: "mixed", Month: report.Month{Year: 2026, Month: time.October}, Jobs: []policy.Job{
		{ID: 1, ArrayTask: -1, User: "alice", Account: "a", GPUs: 2, CPUs: 8, Submit: at(1, 0), Start: at(1, 1), End: at(1, 11), State: policy.StateCompleted},
		{ID: 2, ArrayTask: -1, User: "bob", Account: "b", CPUs: 4, Submit: at(2, 0), Start: at(2, 0), End: at(2, 5), State: policy.StateCompleted},
	}}
	r, err := report.Build(d, nil, report.Options{Cluster: sim.Cluster{Nodes: 1, PerNode: 64, Unit: sim.CPUs}})
	if err != nil {
		t.Fatal(err)
	}
	type figures struct{ Hours, Util, AliceHours float64 }
	want := figures{Hours: 100, Util: 100.0 / (64 * 744), AliceHours: 80}
	got := figures{float64(r.Summary.Hours), float64(r.Summary.Utilization), float64(r.Accounts[0].Hours)}
	if diff := cmp.Diff(want, got, cmp.Comparer(approx)); diff != "" {
		t.Errorf("processor-hours (-want +got):\n%s", diff)
	}
}

// TestBuild_EstimatedCapacity: without a size, capacity is the most GPUs in
// use at once (A's 2 and C's 1 overlap on 10-01 01h–02h: 3, less than D's
// 4), and the report says so.
func TestBuild_EstimatedCapacity(t *testing.T) {
	r, err := report.Build(handData(), nil, report.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !r.Capacity.Estimated || r.Capacity.Units != 4 {
		t.Errorf("capacity = %+v, want estimated 4", r.Capacity)
	}
	if len(r.Notes) == 0 || !strings.Contains(r.Notes[0], "--nodes") {
		t.Errorf("notes = %q, want one saying how to give the size", r.Notes)
	}
}

// TestBuild_EstimatedCapacityPreviousMonth: without a size, September
// (4 GPUs busy from the 1st to the 30th, 4 × 696 = 2784 GPU-hours) is
// compared with an October that used 1 GPU for 10 h. The capacity holds
// both months' peaks, 4 GPUs: September's utilization is 2784 ÷ (4 × 720),
// not 2784 ÷ (1 × 720) = 387% against October's peak alone, and
// October's is 10 ÷ (4 × 744).
func TestBuild_EstimatedCapacityPreviousMonth(t *testing.T) {
	sep := func(day, hour int) time.Time { return time.Date(2026, 9, day, hour, 0, 0, 0, time.UTC) }
	cur := &report.Data{Cluster: "hand", Month: report.Month{Year: 2026, Month: time.October}, Jobs: []policy.Job{
		{ID: 2, ArrayTask: -1, User: "alice", Account: "a", GPUs: 1, Submit: at(2, 0), Start: at(2, 0), End: at(2, 10), State: policy.StateCompleted}}}
	prev := &report.Data{Cluster: "hand", Month: report.Month{Year: 2026, Month: time.September}, Jobs: []policy.Job{
		{ID: 1, ArrayTask: -1, User: "alice", Account: "a", GPUs: 4, Submit: sep(1, 0), Start: sep(1, 0), End: sep(30, 0), State: policy.StateCompleted}}}
	r, err := report.Build(cur, prev, report.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if r.Previous == nil {
		t.Fatal("no previous month")
	}
	type figures struct{ Capacity, Util, PrevUtil float64 }
	want := figures{Capacity: 4, Util: 10.0 / (4 * 744), PrevUtil: 2784.0 / (4 * 720)}
	got := figures{r.Capacity.Units, float64(r.Summary.Utilization), float64(r.Previous.Utilization)}
	if diff := cmp.Diff(want, got, cmp.Comparer(approx)); diff != "" {
		t.Errorf("estimated capacity and utilization (-want +got):\n%s", diff)
	}
}

// TestBuild_RetentionNote: a month older than what the retention kept says
// so; a month inside it does not.
func TestBuild_RetentionNote(t *testing.T) {
	d := handData()
	for _, tt := range []struct {
		kept time.Time
		note bool
	}{{time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC), true}, {d.Month.Start(), false}, {time.Time{}, false}} {
		d.KeptSince = tt.kept
		r, err := report.Build(d, nil, handOptions())
		if err != nil {
			t.Fatal(err)
		}
		got := strings.Contains(strings.Join(r.Notes, "\n"), "keeps jobs from November 2026 on")
		if got != tt.note {
			t.Errorf("kept since %s: notes %q, want the retention note %v", tt.kept, r.Notes, tt.note)
		}
	}
}

// TestBuild_MonthNotOver counts a month in progress up to Now.
func TestBuild_MonthNotOver(t *testing.T) {
	opt := handOptions()
	opt.Now = at(2, 12)
	r, err := report.Build(handData(), nil, opt)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := float64(r.Summary.Available), 4*36.0; !approx(got, want) {
		t.Errorf("available = %v, want %v (4 GPUs × 36 h)", got, want)
	}
	if got := float64(r.Summary.Hours); !approx(got, 27) {
		t.Errorf("hours = %v, want 27 (D ran after Now)", got)
	}
	if len(r.Daily) != 2 {
		t.Errorf("%d days, want 2", len(r.Daily))
	}
}

// TestBuild_StillRunningAtMonthEnd: the database holds a job once it
// ends, so a report made on the 1st lacks the hours in the month of jobs
// still running then. serve's last cycle of the month saw how many ran;
// those that have ended since are in the data (D); the others are named
// in a note, for the report to be made again.
func TestBuild_StillRunningAtMonthEnd(t *testing.T) {
	for _, tc := range []struct {
		name    string
		last    time.Time // serve's last cycle; zero: 10-31 23h
		running int
		now     time.Time
		want    string // "": no such note
	}{
		{"two of three still running", time.Time{}, 3, time.Time{},
			"serve's last cycle of the month (2026-10-31 23:00 UTC) saw 3 jobs running, of which up to 2 had not ended when this report was made: their GPU-hours in the month are not counted. Make the report again once they have ended."},
		{"the one running has ended", time.Time{}, 1, time.Time{}, ""},
		{"the month not over", time.Time{}, 3, at(31, 23).Add(30 * time.Minute), ""},
		// serve stopped on the 2nd: B, running then, ended that day.
		{"serve stopped early, the one running has ended", at(2, 3), 1, time.Time{}, ""},
		{"serve stopped early, one of two still running", at(2, 3), 2, time.Time{},
			"serve's last cycle of the month (2026-10-02 03:00 UTC) saw 2 jobs running, of which up to 1 had not ended when this report was made: their GPU-hours in the month are not counted. Make the report again once they have ended."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := handData()
			last := tc.last
			if last.IsZero() {
				last = at(31, 23)
			}
			d.Cycles = report.CycleStats{Cycles: 1, LastAt: last, LastRunning: tc.running}
			opt := handOptions()
			opt.Now = tc.now
			r, err := report.Build(d, nil, opt)
			if err != nil {
				t.Fatal(err)
			}
			var got string
			for _, n := range r.Notes {
				if strings.HasPrefix(n, "serve's last cycle") {
					got = n
				}
			}
			if got != tc.want {
				t.Errorf("note %q, want %q (notes %q)", got, tc.want, r.Notes)
			}
		})
	}
}

// TestBuild_Counterfactual simulates the hand month: three scenarios over
// the jobs submitted in October that ran (A, B, D).
func TestBuild_Counterfactual(t *testing.T) {
	opt := handOptions()
	opt.Counterfactual = true
	r, err := report.Build(handData(), nil, opt)
	if err != nil {
		t.Fatal(err)
	}
	cf := r.Counterfactual
	if cf == nil {
		t.Fatal("no counterfactual")
	}
	var names []string
	for _, s := range cf.Scenarios {
		names = append(names, s.Name)
	}
	if diff := cmp.Diff([]string{report.ScenarioActual, report.ScenarioFairshare, report.ScenarioFairway}, names); diff != "" {
		t.Errorf("scenarios (-want +got):\n%s", diff)
	}
	if cf.Jobs != 3 {
		t.Errorf("%d jobs simulated, want 3", cf.Jobs)
	}
	// What happened: A waited 1 h, B and D 2 h and 0: median 1 h.
	if got := float64(cf.Scenarios[0].MedianWait); !approx(got, 3600) {
		t.Errorf("actual median wait %v, want 3600", got)
	}
	// On an idle 4-GPU cluster with no overlap every job starts at once.
	for _, s := range cf.Scenarios[1:] {
		if s.MedianWait != 0 {
			t.Errorf("%s: median wait %v, want 0", s.Name, s.MedianWait)
		}
	}
	if !strings.Contains(cf.Scenarios[2].Label, "fair-qssf") || !strings.Contains(cf.Scenarios[2].Label, "fairway") {
		t.Errorf("Fairway scenario %q, want the policy and predictor of the decision log", cf.Scenarios[2].Label)
	}
}

// TestWrite_SameNumbers renders every format and checks that each CSV
// cell of the accounts table appears, as is or with thousands separators,
// in the Markdown and the HTML, and that the HTML loads nothing.
func TestWrite_SameNumbers(t *testing.T) {
	opt := handOptions()
	opt.Counterfactual = true
	r, err := report.Build(handData(), nil, opt)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	files, err := report.Write(dir, r, report.Formats)
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 10 {
		t.Fatalf("wrote %q, want the HTML, Markdown, SVG, CSV and JSON files", files)
	}
	read := func(name string) string {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	md, page := read("report.md"), read("report.html")
	recs, err := csv.NewReader(strings.NewReader(read("accounts.csv"))).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 4 {
		t.Fatalf("accounts.csv has %d lines, want a header and 3 accounts", len(recs))
	}
	for _, rec := range recs[1:] {
		mdRow := "| " + strings.Join(rec, " | ") + " |"
		if !strings.Contains(md, mdRow) {
			t.Errorf("Markdown lacks the row %q", mdRow)
		}
		for _, cell := range rec {
			if !strings.Contains(page, ">"+cell+"<") {
				t.Errorf("HTML lacks the cell %q", cell)
			}
		}
	}
	for _, bad := range []string{"<script", "src=\"http", "href=\"http", "@import", "url("} {
		if strings.Contains(page, bad) {
			t.Errorf("HTML contains %q: it must be self-contained", bad)
		}
	}
	// Every plot but GPU efficiency: the hand month has no epilog record.
	if n := strings.Count(page, "<svg"); n != 4 {
		t.Errorf("HTML has %d inline SVGs, want 4", n)
	}
	if !strings.Contains(page, "No epilog record") {
		t.Errorf("HTML does not say why the efficiency tables are empty")
	}
	var js bytes.Buffer
	if err := report.WriteJSON(&js, r); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(js.String(), `"median_wait_s": null`) {
		t.Errorf("JSON: want null for carol's missing median wait")
	}
}

func approxNaN(a, b float64) bool {
	if math.IsNaN(a) || math.IsNaN(b) {
		return math.IsNaN(a) && math.IsNaN(b)
	}
	return approx(a, b)
}

// TestBuild_PowerSection: serve's power actions become the power table in
// every format: node-hours off, energy from the idle watts, lack.
func TestBuild_PowerSection(t *testing.T) {
	d := handData()
	start := d.Month.Start()
	d.PowerActions = []accounting.PowerAction{
		{At: start.Add(time.Hour), Node: "gpu2", Action: "power-down"},
		{At: start.Add(11 * time.Hour), Node: "gpu2", Action: "power-up"},
		{At: start.Add(11 * time.Hour), Action: "lack", LackNodes: 1, Span: 30 * time.Minute},
	}
	opt := handOptions()
	opt.IdleWatts = 300
	r, err := report.Build(d, nil, opt)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Power) != 1 || r.Power[0].Planned || math.Abs(r.Power[0].NodeHoursOff-10) > 1e-9 || math.Abs(r.Power[0].EnergyKWh-3) > 1e-9 ||
		math.Abs(r.Power[0].LackNodeHours-0.5) > 1e-9 {
		t.Fatalf("power = %+v, want 10 node-hours off, 3 kWh, 0.5 node-hours of lack", r.Power)
	}
	var md bytes.Buffer
	if err := report.WriteMarkdown(&md, r, nil); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"## Power saving", "| Node-hours powered off | 10.0 |", "| Estimated energy saved (kWh) | 3.0 |"} {
		if !strings.Contains(md.String(), want) {
			t.Errorf("Markdown lacks %q:\n%s", want, md.String()[strings.Index(md.String(), "## Power saving"):])
		}
	}
}

// TestBuild_CounterfactualLayout replays a month on the cluster's
// partitions (Options.Layout): three 4-GPU jobs of partition gpu that
// overlapped, and one of a partition the layout lacks. On gpu's one node
// of 4 the three queue (waits 0, 2 h, 4 h); on the same 8 GPUs as one
// pool two run at once. The job of partition cpu is left out and named,
// the capacity is the layout's, and a note says which cluster the month
// was replayed on.
func TestBuild_CounterfactualLayout(t *testing.T) {
	job := func(id int64, part string, gpus int, submit time.Time) policy.Job {
		return policy.Job{ID: id, ArrayTask: -1, User: "alice", Account: "a", Partition: part, GPUs: gpus,
			Submit: submit, Start: submit, End: submit.Add(2 * time.Hour), State: policy.StateCompleted, TimeLimit: 3 * time.Hour}
	}
	d := &report.Data{Cluster: "parts", Month: report.Month{Year: 2026, Month: time.October},
		Jobs: []policy.Job{job(1, "gpu", 4, at(5, 0)), job(2, "gpu", 4, at(5, 0)), job(3, "gpu", 4, at(5, 0)), job(4, "cpu", 1, at(6, 0))}}
	layout, err := sim.ParseLayout("gpu:nodes=1,per-node=4;gpuhi:nodes=1,per-node=4")
	if err != nil {
		t.Fatal(err)
	}
	medianWait := func(r *report.Report) float64 {
		t.Helper()
		if r.Counterfactual == nil || len(r.Counterfactual.Scenarios) != 3 {
			t.Fatalf("counterfactual %+v, want three scenarios", r.Counterfactual)
		}
		return float64(r.Counterfactual.Scenarios[1].MedianWait)
	}

	r, err := report.Build(d, nil, report.Options{Layout: layout, Counterfactual: true, SimPolicy: "fifo", SimPredictor: "none"})
	if err != nil {
		t.Fatal(err)
	}
	cf := r.Counterfactual
	if got := medianWait(r); !approx(got, 7200) {
		t.Errorf("on the partitions: fair-share median wait %v, want 7200 (gpu's three jobs queue on its one node)", got)
	}
	if cf.Cluster.Layout != layout || cf.Jobs != 3 {
		t.Errorf("counterfactual on %+v with %d jobs, want the layout and 3 jobs", cf.Cluster, cf.Jobs)
	}
	skip := `partition "cpu" not in the cluster`
	if diff := cmp.Diff(map[string]int{skip: 1}, cf.Skipped); diff != "" {
		t.Errorf("left out (-want +got):\n%s", diff)
	}
	if r.Capacity.Units != 8 || r.Capacity.Estimated {
		t.Errorf("capacity %+v, want the layout's 8 GPUs, not estimated", r.Capacity)
	}
	note := "The counterfactual replayed the month on the cluster's partitions (report --partitions): 2 nodes of gpus in partitions gpu:nodes=1,per-node=4;gpuhi:nodes=1,per-node=4; each job ran only in its recorded partition and on its GPU type. 1 job left out, no node of the cluster can run them: " + skip + "."
	if !slices.Contains(r.Notes, note) {
		t.Errorf("notes %q lack %q", r.Notes, note)
	}

	// The same 8 GPUs as one pool: two of the three run at once.
	r, err = report.Build(d, nil, report.Options{Cluster: sim.Cluster{Nodes: 2, PerNode: 4}, Counterfactual: true, SimPolicy: "fifo", SimPredictor: "none"})
	if err != nil {
		t.Fatal(err)
	}
	if got := medianWait(r); got != 0 {
		t.Errorf("one pool: fair-share median wait %v, want 0", got)
	}
	if r.Counterfactual.Cluster.Layout != nil || slices.ContainsFunc(r.Notes, func(n string) bool { return strings.Contains(n, "partitions") }) {
		t.Errorf("one pool: counterfactual on %+v, notes %q; want no layout and no note of it", r.Counterfactual.Cluster, r.Notes)
	}

	if _, err := report.Build(d, nil, report.Options{Layout: layout, Cluster: sim.Cluster{Nodes: 2, PerNode: 4}}); !errors.Is(err, report.ErrBadOptions) {
		t.Errorf("layout and nodes: err %v, want ErrBadOptions", err)
	}
}

// TestWrite_OneAccountJain: a month whose jobs are all one account's has no
// Jain's index over accounts, and says why ("one account") in the summary
// table and the HTML card instead of "nothing ran"; a month where nothing
// ran still says that.
func TestWrite_OneAccountJain(t *testing.T) {
	one := handData()
	for i := range one.Jobs {
		one.Jobs[i].Account = "a"
	}
	none := handData()
	none.Jobs = nil
	none.Outcomes, none.Decisions = nil, nil
	for _, tt := range []struct {
		name string
		d    *report.Data
		want string
	}{{"one account", one, "one account"}, {"no job", none, "nothing ran"}} {
		t.Run(tt.name, func(t *testing.T) {
			r, err := report.Build(tt.d, nil, handOptions())
			if err != nil {
				t.Fatal(err)
			}
			if !math.IsNaN(float64(r.Summary.Jain)) {
				t.Fatalf("Jain %v, want none", r.Summary.Jain)
			}
			dir := t.TempDir()
			if _, err := report.Write(dir, r, []string{"md", "html"}); err != nil {
				t.Fatal(err)
			}
			md, err := os.ReadFile(filepath.Join(dir, "report.md"))
			if err != nil {
				t.Fatal(err)
			}
			if row := "| Jain's index over accounts[^jain] | " + tt.want + " |"; !strings.Contains(string(md), row) {
				t.Errorf("report.md lacks the row %q", row)
			}
			page, err := os.ReadFile(filepath.Join(dir, "report.html"))
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(page), ">"+tt.want+"<") {
				t.Errorf("report.html's card does not say %q", tt.want)
			}
		})
	}
}

// TestBuild_CounterfactualNothingRan: a month whose jobs held no GPU for
// any time (one cancelled while pending, one that ended as it started,
// one that asked for no GPU) still has a report, the counterfactual left
// out with a note, as for a month with no job to simulate; its estimated
// capacity of 0 GPUs is no machine to size from the history.
func TestBuild_CounterfactualNothingRan(t *testing.T) {
	job := func(id int64, gpus int, start, end time.Time, st policy.State) policy.Job {
		return policy.Job{ID: id, ArrayTask: -1, User: "alice", Account: "a", Partition: "gpu", GPUs: gpus,
			Submit: at(3, 0), Start: start, End: end, State: st, TimeLimit: time.Hour}
	}
	for name, jobs := range map[string][]policy.Job{
		"cancelled while pending": {job(1, 1, time.Time{}, at(3, 1), policy.StateCancelled)},
		"zero-length":             {job(2, 1, at(3, 1), at(3, 1), policy.StateFailed)},
		"end before start":        {job(3, 1, at(3, 2), at(3, 1), policy.StateCompleted)},
		"no GPU asked":            {job(4, 0, at(3, 1), at(3, 2), policy.StateCompleted)},
	} {
		t.Run(name, func(t *testing.T) {
			d := &report.Data{Cluster: "c", Month: report.Month{Year: 2026, Month: time.October}, Jobs: jobs}
			r, err := report.Build(d, nil, report.Options{Counterfactual: true, Cluster: sim.Cluster{Unit: sim.GPUs}})
			if err != nil {
				t.Fatalf("Build: %v", err)
			}
			if r.Counterfactual != nil || !slices.ContainsFunc(r.Notes, func(n string) bool { return strings.Contains(n, "No job of the month could be simulated") }) {
				t.Errorf("counterfactual %+v, notes %q: want none, and the note saying so", r.Counterfactual, r.Notes)
			}
		})
	}
}

// TestBuild_CounterfactualCutNote checks that a month whose job ran
// longer than a replay lets a job without a limit run says so in a note.
func TestBuild_CounterfactualCutNote(t *testing.T) {
	opt := handOptions()
	opt.Counterfactual = true
	for _, tc := range []struct {
		name string
		cut  bool
	}{{"every job has a limit", false}, {"alice's job has none and ran 9 days", true}} {
		t.Run(tc.name, func(t *testing.T) {
			d := handData()
			if tc.cut {
				j := &d.Jobs[1]
				j.TimeLimit, j.End = 0, j.Start.Add(9*24*time.Hour)
			}
			r, err := report.Build(d, nil, opt)
			if err != nil {
				t.Fatal(err)
			}
			want := 0
			if tc.cut {
				want = 1
			}
			if r.Counterfactual == nil || r.Counterfactual.CutAtLimit != want {
				t.Fatalf("counterfactual %+v, want %d jobs cut at the default limit", r.Counterfactual, want)
			}
			note := slices.ContainsFunc(r.Notes, func(n string) bool {
				return strings.HasPrefix(n, "1 job without a time limit ran longer than 7 days: the simulated scenarios cut them there")
			})
			if note != tc.cut {
				t.Errorf("notes %q: a note of the cut job = %v, want %v", r.Notes, note, tc.cut)
			}
		})
	}
}
