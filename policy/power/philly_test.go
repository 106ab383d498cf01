package power

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/fairway-hpc/fairway/internal/shareddata"
)

// TestEvaluate_Philly runs the artifact's protocol on the Philly node
// sequence and checks what docs/POWER.md reports: the forecaster beats
// both seasonal-naive baselines a day ahead; the artifact's rule at every
// buffer has less lack than the idle-time rule at every SuspendTime; the
// family's setting is chosen on the validation days and reads the
// forecast. The dominance asked for in issue 30 (as many node-hours off
// with less lack) does not hold on this sequence, not even with the
// family's setting: the test pins the verdict so that a change that makes
// it hold, or a table that claims it, is noticed. At SuspendTime 10m (one
// step) it cannot hold: the idle-time rule powers exactly the demand, the
// most node-hours off any rule keeps, and a rule keeping as many must do
// the same and lack the same.
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
			if r.Suspend == 10*time.Minute && math.Abs(r.NodeHoursOff-res.MaxNodeHoursOff) > 1e-6 {
				t.Errorf("idle-time 10m keeps %.1f node-hours off, want the most possible %.1f", r.NodeHoursOff, res.MaxNodeHoursOff)
			}
		}
	}
	if predMax < 0 || idleMin < 0 || predMax >= idleMin {
		t.Errorf("most lack of an artifact setting %.0f node-min, least of an idle-time one %.0f: want the first below", predMax, idleMin)
	}
	if res.Chosen == ArtifactSetting(2, 30, 10) || chosenRows != len(DefaultEvalConfig().Buffers) {
		t.Errorf("chosen %s with %d test rows: want a family setting other than the artifact's at every buffer", res.Chosen, chosenRows)
	}
	if res.Chosen.Envelope && res.Chosen.Horizon == 0 {
		t.Errorf("chosen %s reads no forecast", res.Chosen)
	}
	if res.Dominates {
		t.Errorf("the predictive rule now dominates the idle-time rule; update docs/POWER.md and this test")
	}
	for _, v := range res.Verdicts {
		if v.ValidHolds {
			t.Errorf("%s: the validation witness %s now dominates on the test days; update docs/POWER.md and this test", v.Idle, v.ValidWitness)
		}
	}
}
