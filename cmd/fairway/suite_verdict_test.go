package main

import (
	"strings"
	"testing"

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
	def, good, tie := scoreOnSuite(res, "fair-sjf"), scoreOnSuite(res, "good"), scoreOnSuite(res, "tie")
	if def.AllMet != 1 || def.Checks != 14 || def.ChecksJudged != 16 || good.AllMet != 2 || good.Checks != 16 {
		t.Errorf("scores: fair-sjf %+v, good %+v; want 1 row and 14 of 16 checks, 2 rows and 16", def, good)
	}
	if !good.better(def) || tie.better(def) || def.better(tie) {
		t.Errorf("better: good %v (want true), tie %v and its reverse %v (want false)", good.better(def), tie.better(def), def.better(tie))
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
