package main

import (
	"testing"

	"github.com/fairway-hpc/fairway/policy/predeval"
	"github.com/fairway-hpc/fairway/policy/sim"
)

// The packages name their settings by Go field; the CLI says the flag, in
// the words it always used.
func TestFieldErrorsNameFlags(t *testing.T) {
	_, choice := sim.ParseChoice("fifo", "", "conservative", "none")
	_, loads := sim.ParseLoads("1,x")
	_, preds := predeval.ParsePredictors(" , ")
	for _, tc := range []struct {
		err  error
		want string
	}{
		{simFlagError(sim.RunConfig{Nodes: -1, PerNode: 4, Predictor: "none", Parallel: 1, Load: 1}.Validate()), "--nodes -1, --per-node 4: want >= 0"},
		{simFlagError(sim.RunConfig{Predictor: "none", Parallel: 0, Load: 1}.Validate()), "--parallel 0: want >= 1"},
		{simFlagError(sim.RunConfig{Predictor: "none", Parallel: 1, Load: 0.5e-9}.Validate()), ""},
		{simFlagError(sim.RunConfig{Predictor: "none", Parallel: 1, Load: 2000}.Validate()), "--load 2000: want a factor > 0 (1 replays the trace as it arrived)"},
		{simFlagError(choice), `--backfill: unknown backfill "conservative": want easy or none`},
		{simFlagError(loads), `--loads: "x": want positive numbers like 0.8,1.0,1.2`},
		{predevalFlagError(preds), "--predictors: empty"},
	} {
		got := ""
		if tc.err != nil {
			got = tc.err.Error()
		}
		if got != tc.want {
			t.Errorf("got %q, want %q", got, tc.want)
		}
	}
}
