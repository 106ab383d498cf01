package main

import (
	"strings"
	"testing"

	"github.com/fairway-hpc/fairway/accounting"
	"github.com/fairway-hpc/fairway/accounting/report"
	"github.com/fairway-hpc/fairway/policy"
	"github.com/fairway-hpc/fairway/policy/predict"

	"github.com/fairway-hpc/fairway/policy/predeval"
	"github.com/fairway-hpc/fairway/policy/sim"
)

// The packages name their settings by Go field; the CLI says the flag, in
// the words it always used.
func TestFieldErrorsNameFlags(t *testing.T) {
	_, choice := sim.ParseChoice("fifo", "", "conservative", "none")
	_, loads := sim.ParseLoads("1,x")
	_, preds := predeval.ParsePredictors(" , ")
	_, unit := report.ParseUnit("gpus")
	_, formats := report.ParseFormats("html,pdf")
	_, noFormat := report.ParseFormats(" , ")
	_, since := accounting.ParseSince("yesterday")
	for _, tc := range []struct {
		err  error
		want string
	}{
		{simFlagError(sim.RunConfig{Nodes: -1, PerNode: 4, Predictor: "none", Parallel: 1, Load: 1}.Validate()), "--nodes -1, --per-node 4: want >= 0"},
		{simFlagError(sim.RunConfig{Predictor: "none", Parallel: 0, Load: 1}.Validate()), "--parallel 0: want >= 1"},
		{simFlagError(sim.RunConfig{Predictor: "none", Parallel: 1, Load: 0.5e-9}.Validate()), ""},
		{simFlagError(sim.RunConfig{Predictor: "none", Parallel: 1, Load: 2000}.Validate()), "--load 2000: want a factor > 0 and at most 1000 (1 replays the trace as it arrived)"},
		{simFlagError(choice), `--backfill: unknown backfill "conservative": want easy or none`},
		{simFlagError(loads), `--loads: "x": want positive numbers like 0.8,1.0,1.2`},
		{predevalFlagError(preds), "--predictors: empty"},
		{ingestFlagError(accounting.IngestConfig{From: "csv", NArgs: 1}.Validate()), `--from "csv": want one of ` + strings.Join(accounting.IngestSources, ", ")},
		{ingestFlagError(accounting.IngestConfig{From: accounting.FromSlurmdbd, Cluster: "c", Overlap: -1}.Validate()), "--overlap: must not be negative"},
		{ingestFlagError(since), `--since "yesterday": want RFC 3339 (2026-10-01T00:00:00Z) or YYYY-MM-DD`},
		{reportFlagError(unit), `--unit "gpus": want gpu or cpu`},
		{reportFlagError(formats), `--format "pdf": want some of html, md, csv, json`},
		{reportFlagError(noFormat), "--format: empty"},
		{reportFlagError(report.Options{Cluster: sim.Cluster{Nodes: 2}}.Validate()), "--nodes 2, --per-node 0: give both (positive) or neither"},
		{reportFlagError(report.Options{ShardsPerGPU: -1}.Validate()), "--shards-per-gpu -1: want >= 0"},
		{reportFlagError(report.Options{SimPolicy: "lottery"}.Validate()), `--sim-policy "lottery": want one of ` + strings.Join(policy.Names(), ", ")},
		{reportFlagError(report.Options{SimPredictor: "oracle"}.Validate()), `--sim-predictor "oracle": want one of ` + strings.Join(predict.Names(), ", ") + ", or none"},
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
