package main

import (
	"errors"
	"fmt"
	"strings"

	"github.com/fairway-hpc/fairway/accounting"
	"github.com/fairway-hpc/fairway/policy/predeval"
	"github.com/fairway-hpc/fairway/policy/sim"
)

// simFlagOf names policy/sim's settings, as its typed field errors name
// them, by the flags of simulate and tune.
var simFlagOf = map[string]string{"Nodes": "--nodes", "PerNode": "--per-node", "Parallel": "--parallel",
	"Load": "--load", "Loads": "--loads", "Predictor": "--predictor", "Policies": "--policies",
	"Preempt": "--preempt", "Backfill": "--backfill", "Share.ShardsPerGPU": "--share-shards",
	"Share.Interference": "--share-interference", "Share.Model.LightFraction": "--share-light"}

// reportFlagOf names accounting/report's settings (report.Options and
// the formats), as its sim.FieldErrors name them, by report's flags.
var reportFlagOf = map[string]string{"Cluster.Nodes": "--nodes", "Cluster.PerNode": "--per-node", "Cluster.Unit": "--unit",
	"Layout": "--partitions", "ShardsPerGPU": "--shards-per-gpu", "SimPolicy": "--sim-policy", "SimPredictor": "--sim-predictor", "Formats": "--format"}

// simFlagError names the settings of a sim.FieldError by simulate's and
// tune's flags.
func simFlagError(err error) error { return flagsOf(err, simFlagOf) }

// reportFlagError names the settings of report's sim.FieldError by
// report's flags.
func reportFlagError(err error) error { return flagsOf(err, reportFlagOf) }

// flagsOf names the settings of a sim.FieldError by their flags in flag;
// an error naming a setting flag lacks is left as it is.
func flagsOf(err error, flag map[string]string) error {
	var fe *sim.FieldError
	if !errors.As(err, &fe) {
		return err
	}
	parts := make([]string, len(fe.Fields))
	for i, s := range fe.Fields {
		f, ok := flag[s.Field]
		if !ok {
			return err
		}
		parts[i] = f
		if s.Value != "" {
			parts[i] += " " + s.Value
		}
	}
	return fmt.Errorf("%s: %w", strings.Join(parts, ", "), fe.Err)
}

// simWorkload is sim's workload, a bad setting named by its flag.
func simWorkload(w *sim.Workload, err error) (*sim.Workload, error) { return w, simFlagError(err) }

// simChoice is sim.ParseChoice's choice, a bad setting named by its flag.
func simChoice(ch sim.Choice, err error) (sim.Choice, error) { return ch, simFlagError(err) }

// simLoads is sim.ParseLoads's loads, a bad one named by its flag.
func simLoads(l []float64, err error) ([]float64, error) { return l, simFlagError(err) }

// predevalFlagError names the setting of a predeval.FieldError by its flag
// of predict eval.
func predevalFlagError(err error) error {
	var fe *predeval.FieldError
	if errors.As(err, &fe) && fe.Field == "Predictors" {
		return fmt.Errorf("--predictors: %w", fe.Err)
	}
	return err
}

// ingestFlagOf names accounting.IngestConfig's settings, as its typed
// field errors name them, by the flags of ingest (and tune --from-db).
var ingestFlagOf = map[string]string{"From": "--from", "Overlap": "--overlap", "Since": "--since"}

// ingestFlagError names the setting of an accounting.FieldError by its
// flag of ingest.
func ingestFlagError(err error) error {
	var fe *accounting.FieldError
	if !errors.As(err, &fe) {
		return err
	}
	f, ok := ingestFlagOf[fe.Field]
	switch {
	case !ok:
		return err
	case fe.Value != "":
		return fmt.Errorf("%s %s: %w", f, fe.Value, fe.Err)
	}
	return fmt.Errorf("%s: %w", f, fe.Err)
}
