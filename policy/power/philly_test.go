package power

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/fairway-hpc/fairway/internal/shareddata"
)

// TestEvaluate_Philly runs the artifact's protocol on the Philly node
// sequence, every rule replayed against the demand of each minute, and
// checks what docs/POWER.md reports: the forecaster beats both
// seasonal-naive baselines a day ahead; the artifact's rule at every
// buffer has less lack than the idle-time rule at every SuspendTime; the
// idle-time rule at SuspendTime 10m keeps fewer node-hours off than the
// minute demand allows (per minute it holds idle nodes for their 10
// minutes, which on 10-minute maxima it did not, so no rule could match
// it there); the family's setting is chosen on the validation days and
// reads the forecast. The dominance asked for in issue 30 (as many
// node-hours off with less lack) does not hold on this sequence, on the
// validation days or the test days: the test pins the verdict so that a
// change that makes it hold, or a table that claims it, is noticed.
func TestEvaluate_Philly(t *testing.T) {
	dir := shareddata.Dir(t, "data", "power")
	f, err := os.Open(filepath.Join(dir, "philly_node_sequence.csv.gz"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	samples, err := ReadSequence(f, "philly_node_sequence.csv.gz")
	if err != nil {
		t.Fatal(err)
	}
	if len(samples) != 105644 {
		t.Errorf("%d samples, want the README's 105,644", len(samples))
	}
	res, err := Evaluate(samples, DefaultEvalConfig())
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := res.WriteText(&out); err != nil {
		t.Fatal(err)
	}
	t.Log("\n" + out.String())
	if res.TestSteps != 14*144 {
		t.Errorf("%d test steps, want 14 days × 144", res.TestSteps)
	}
	rmse := map[string]float64{}
	for _, f := range res.Forecasts {
		if f.Lead == "1d" {
			rmse[f.Forecaster] = f.RMSE
		}
	}
	for _, naive := range []string{"same time yesterday", "same time last week"} {
		if rmse["gbt"] >= rmse[naive] {
			t.Errorf("gbt RMSE %.2f a day ahead, not below %s's %.2f", rmse["gbt"], naive, rmse[naive])
		}
	}
	artifact := ArtifactSetting(2, 30, 10).String()
	var predMax, idleMin = -1.0, -1.0
	var chosenRows int
	for _, r := range res.Rules {
		switch {
		case r.Kind == "predictive" && r.Setting == artifact:
			predMax = max(predMax, r.LackNodeMinutes)
		case r.Kind == "predictive" && r.Setting == res.Chosen.String():
			chosenRows++
		case r.Kind == "idle-time":
			if idleMin < 0 || r.LackNodeMinutes < idleMin {
				idleMin = r.LackNodeMinutes
			}
			if r.Suspend == 10*time.Minute && r.NodeHoursOff > 0.99*res.MaxNodeHoursOff {
				t.Errorf("idle-time 10m keeps %.1f node-hours off, want below 99 %% of the most possible %.1f", r.NodeHoursOff, res.MaxNodeHoursOff)
			}
			if r.Steps != 14*1440 {
				t.Errorf("%s: %d minutes replayed, want 14 days × 1440", r.Rule, r.Steps)
			}
		}
	}
	if predMax < 0 || idleMin < 0 || predMax >= idleMin {
		t.Errorf("most lack of an artifact setting %.0f node-min, least of an idle-time one %.0f: want the first below", predMax, idleMin)
	}
	if res.Chosen == ArtifactSetting(2, 30, 10) || chosenRows != len(DefaultEvalConfig().Buffers) {
		t.Errorf("chosen %s with %d test rows: want a family setting other than the artifact's at every buffer", res.Chosen, chosenRows)
	}
	if !res.Chosen.ReadsForecast() {
		t.Errorf("chosen %s reads no forecast", res.Chosen)
	}
	if res.Dominates {
		t.Errorf("the predictive rule now dominates the idle-time rule; update docs/POWER.md and this test")
	}
	for _, v := range res.Verdicts {
		if v.ValidWitness != "" {
			t.Errorf("%s: the chosen setting now dominates it on the validation days (%s); update docs/POWER.md and this test", v.Idle, v.ValidWitness)
		}
		if v.ValidHolds {
			t.Errorf("%s: the validation witness %s now dominates on the test days; update docs/POWER.md and this test", v.Idle, v.ValidWitness)
		}
	}
}
