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
// minute demand allows; the validation days choose a hybrid setting (Slurm's
// idle clock, the forecast holding idle nodes), which reads the forecast.
// The dominance asked for in issue 30, judged by the row validation
// picked for each SuspendTime, holds on the test days for 10m, 30m and
// 1h: 1h's pick resumes ahead of a rise that outran the powered nodes
// (the trend nowcast) and its early power-down does not trust the
// forecast the sequence's 40-minute fall to 0 active nodes on 12-06
// anchored (docs/POWER.md). The test pins the verdicts so that a change
// that moves them, or a table that claims otherwise, is noticed.
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
	if !res.Chosen.Hybrid || chosenRows != len(DefaultEvalConfig().Buffers)*len(DefaultEvalConfig().IdleAfter) {
		t.Errorf("chosen %s with %d test rows: want a hybrid setting at every buffer and idle time", res.Chosen, chosenRows)
	}
	if !res.Chosen.ReadsForecast() {
		t.Errorf("chosen %s reads no forecast", res.Chosen)
	}
	if !res.Dominates {
		t.Errorf("the validation picks no longer dominate the idle-time rule at every SuspendTime; update docs/POWER.md and this test")
	}
	// The verdict is the validation picks' (Pick): for each idle-time
	// setting, the row of any setting that dominated it on validation with
	// the most margin, replayed on the test days.
	want := map[string]bool{"idle-time 10m": true, "idle-time 30m": true, "idle-time 1h": true}
	if len(res.Picks) != len(want) {
		t.Fatalf("%d picks, want one per idle-time setting", len(res.Picks))
	}
	for _, pk := range res.Picks {
		if pk.Valid.Rule == "" || pk.ValidGain < 0 || pk.ValidCut <= 0 {
			t.Errorf("%s: no validation pick that dominates it there (%q, %+.4f, %+.4f)", pk.Idle, pk.Valid.Rule, pk.ValidGain, pk.ValidCut)
		}
		if pk.Test.Rule != pk.Valid.Rule {
			t.Errorf("%s: replayed %q on the test days, want the validation pick %q", pk.Idle, pk.Test.Rule, pk.Valid.Rule)
		}
		if pk.Holds != want[pk.Idle] {
			t.Errorf("%s: the validation pick %s holds %v on the test days (node-h off %+.2f%%, lack cut %+.1f%%), want %v: update docs/POWER.md and this test",
				pk.Idle, pk.Valid.Rule, pk.Holds, 100*pk.Gain, 100*pk.Cut, want[pk.Idle])
		}
	}
}
