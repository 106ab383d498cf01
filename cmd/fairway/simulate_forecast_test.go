package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/fairway-hpc/fairway/policy"
	"github.com/fairway-hpc/fairway/policy/sim"
)

// TestSimulateForecast measures forecasts on the bundled workload: JSON
// with every moment measured, and the table for people.
func TestSimulateForecast(t *testing.T) {
	out, err := runApp(t, "simulate", "--forecast", "--predictor", "tsafrir", "--json")
	if err != nil {
		t.Fatal(err)
	}
	var rep sim.ForecastSummary
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("decode %q: %v", out, err)
	}
	if rep.Policy != policy.Default || len(rep.Moments) != 3 {
		t.Fatalf("policy %q with %d moments, want the default policy and 3", rep.Policy, len(rep.Moments))
	}
	for _, m := range rep.Moments {
		if m.Forecasts == 0 {
			t.Errorf("%s: no forecasts", m.Moment)
		}
		if m.Moment == sim.MomentSubmit && m.Forecasts != rep.Jobs {
			t.Errorf("%d submit-time forecasts for %d jobs", m.Forecasts, rep.Jobs)
		}
	}
	table, err := runApp(t, "simulate", "--forecast", "--predictor", "tsafrir")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"after each hour waited", "| | | limits |", "policy " + policy.Default + ", EASY backfill"} {
		if !strings.Contains(table, want) {
			t.Errorf("table lacks %q:\n%s", want, table)
		}
	}
	if strings.Contains(table, "oracle") {
		t.Errorf("table without --forecast-oracle has oracle rows:\n%s", table)
	}
	table, err = runApp(t, "simulate", "--forecast", "--forecast-oracle", "--predictor", "tsafrir")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"| | | oracle: true run times of running jobs |", "| | | oracle: true run times of all jobs |"} {
		if got := strings.Count(table, want); got != len(rep.Moments) {
			t.Errorf("table has %d rows %q, want one per moment (%d):\n%s", got, want, len(rep.Moments), table)
		}
	}
	for _, args := range [][]string{{"--policies", "fifo,vtc"}, {"--policies", "tiresias"}} {
		if _, err := runApp(t, append([]string{"simulate", "--forecast"}, args...)...); err == nil {
			t.Errorf("simulate --forecast %v: no error", args)
		}
	}
}
