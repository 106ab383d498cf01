package main

import (
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/fairway-hpc/fairway/internal/shareddata"
	"github.com/fairway-hpc/fairway/policy"
	"github.com/fairway-hpc/fairway/policy/sim"
)

// TestSuiteVerdict: a policy file's row is judged by the default's
// criteria, and does better than the default only with more rows where
// every criterion is met, or as many and more checks met; a tie is not
// better, so the default stays.
func TestSuiteVerdict(t *testing.T) {
	m := func(name string, wait, bsld, jain, rho, jct float64) sim.Metrics {
		return sim.Metrics{Name: name, AvgWait: wait, AvgBSLD: bsld, Jain: jain, MaxRho: rho, AvgJCT: jct}
	}
	base := []sim.Metrics{m("fifo", 100, 10, 0.5, 50, 200), m("fairshare", 100, 10, 0.5, 50, 200), m("vtc", 100, 10, 0.5, 50, 200),
		m("qssf", 100, 10, 0.5, 50, 200), m("sjf-oracle", 80, 5, 0.5, 20, 180)}
	row := func(extra ...sim.Metrics) sim.SuiteRow {
		return sim.SuiteRow{Metrics: append(append([]sim.Metrics{}, base...), extra...)}
	}
	res := &sim.SuiteResult{Default: "fair-sjf", Rows: []sim.SuiteRow{
		// fair-sjf meets all 8; "good" too; "tie" is fair-sjf's twin
		row(m("fair-sjf", 90, 9, 0.5, 40, 190), m("good", 90, 9, 0.5, 40, 190), m("tie", 90, 9, 0.5, 40, 190)),
		// fair-sjf misses the max ρ checks; "good" meets all; "tie" misses them too
		row(m("fair-sjf", 90, 9, 0.5, 60, 190), m("good", 90, 9, 0.5, 40, 190), m("tie", 90, 9, 0.5, 60, 190)),
	}}
	score := func(name string) suiteScore {
		sc, err := scoreOnSuite(res, name)
		if err != nil {
			t.Fatal(err)
		}
		return sc
	}
	def, good, tie := score("fair-sjf"), score("good"), score("tie")
	if _, err := scoreOnSuite(res, "absent"); err == nil || !strings.Contains(err.Error(), `has no policy "absent"`) {
		t.Errorf("a policy absent from the rows: err %v, want one naming it", err)
	}
	if def.AllMet != 1 || def.Checks != 14 || def.ChecksJudged != 16 || good.AllMet != 2 || good.Checks != 16 {
		t.Errorf("scores: fair-sjf %+v, good %+v; want 1 row and 14 of 16 checks, 2 rows and 16", def, good)
	}
	if !good.better(def) || tie.better(def) || def.better(tie) {
		t.Errorf("better: good %v (want true), tie %v and its reverse %v (want false)", good.better(def), tie.better(def), def.better(tie))
	}
	// A trade is not better, either way round.
	trade := suiteScore{Name: "trade", AllMet: def.AllMet + 1, Checks: def.Checks - 2}
	if trade.better(def) || def.better(trade) {
		t.Errorf("more rows and fewer checks: better %v, reverse %v; want neither", trade.better(def), def.better(trade))
	}
	if v := trade.verdict(def); v != "does not do better than fair-sjf: more rows where every criterion is met, but fewer checks met" {
		t.Errorf("verdict of a trade: %q", v)
	}
	var b strings.Builder
	if err := writeSuiteVerdict(&b, res, []string{"good", "tie"}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"fair-sjf meets every criterion on 1 of 2 rows, 14 of 16 checks",
		"good: meets every criterion on 2 of 2 rows, 16 of 16 checks: does better than fair-sjf\n",
		"tie: meets every criterion on 1 of 2 rows, 14 of 16 checks: does not do better than fair-sjf\n"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("verdict lacks %q:\n%s", want, b.String())
		}
	}
}

// TestSimulateSuite_PolicyFile: simulate --suite replays a policy file as
// its own row and judges it as the default is; --suite used to ignore the
// flag without a word.
func TestSimulateSuite_PolicyFile(t *testing.T) {
	dir := filepath.Dir(shareddata.Trace(t, sim.KTHFile))
	path := writeLearnedFile(t, t.TempDir(), policy.LearnedParams{Run: 1, Size: 1, Age: 0.25})
	out, err := runApp(t, "simulate", "--suite", "--traces-dir", dir, "--max-jobs", "300", "--loads", "1.0", "--no-predictors",
		"--progress", "never", "--policies", "fifo,fairshare,vtc,qssf,sjf-oracle,fair-sjf", "--policy-file", path)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	for _, re := range []string{`\n +tuned +\d`, `\n== Policy files judged as the default is \(fair-sjf meets every criterion on \d+ of 7 rows, \d+ of 56 checks\)\n`,
		`\ntuned: meets every criterion on \d+ of 7 rows, \d+ of 56 checks: does (not do )?better than fair-sjf\n`} {
		if !regexp.MustCompile(re).MatchString(out) {
			t.Errorf("simulate --suite --policy-file does not match %s:\n%s", re, out)
		}
	}
}
