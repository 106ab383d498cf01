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
// sequence and checks what docs/POWER.md reports: the forecaster beats
// both seasonal-naive baselines a day ahead, and the predictive rule at
// every buffer has less lack than the idle-time rule at every SuspendTime.
// The dominance asked for in issue 30 (as many node-hours off with less
// lack) does not hold on this sequence; the test pins the verdict so that
// a change that makes it hold, or a table that claims it, is noticed.
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
	s, err := Resample(samples, 10*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	res, err := Evaluate(s, DefaultEvalConfig())
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
	var predMax, idleMin = -1.0, -1.0
	for _, r := range res.Rules {
		switch r.Kind {
		case "predictive":
			predMax = max(predMax, r.LackNodeMinutes)
		case "idle-time":
			if idleMin < 0 || r.LackNodeMinutes < idleMin {
				idleMin = r.LackNodeMinutes
			}
		}
	}
	if predMax < 0 || idleMin < 0 || predMax >= idleMin {
		t.Errorf("most lack of a predictive setting %.0f node-min, least of an idle-time one %.0f: want the first below", predMax, idleMin)
	}
	if res.Dominates {
		t.Errorf("the predictive rule now dominates the idle-time rule; update docs/POWER.md and this test")
	}
}
