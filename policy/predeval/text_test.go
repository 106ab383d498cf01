package predeval

import (
	"strings"
	"testing"

	"github.com/fairway-hpc/fairway/internal/texttest"
)

func TestResult_WriteText(t *testing.T) {
	res := &Result{Trace: "kth", Protocol: SubmitOrder, Jobs: 3, Skipped: 1, LeftOut: map[string]int{"no run time": 2},
		Predictors: []Metrics{
			{Name: "limit", NotApplicable: "needs requested times; the trace has none"},
			{Name: "tsafrir", MAE: 120.04, MedAE: 60, MeanRelErr: 0.5, Within10: 0.25, Within50: 0.5, Within100: 0.75, UnderRate: 0.4, N: 3},
			{Name: "fairway", MAE: 100, MedAE: 60, MeanRelErr: 0.45, Within10: 0.3, Within50: 0.6, Within100: 0.9, UnderRate: 0.3, N: 3},
		}}
	var b strings.Builder
	if err := res.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	texttest.Check(t, b.String(), []string{
		"trace kth, protocol submit-order: 3 jobs replayed (1 without start or end left out)\n",
		"left out: ",
		"  predictor  MAE (s)  MedAE (s)",
		"      limit      n/a        n/a",
		"    tsafrir    120.0       60.0          0.50        25.0%",
		"n/a: limit needs requested times; the trace has none\n",
		"lowest MAE: fairway; lowest MedAE: tsafrir = fairway\n",
	}, nil)
	// a trace with nothing left out says nothing of it
	res.Skipped, res.LeftOut = 0, nil
	b.Reset()
	if err := res.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	texttest.Check(t, b.String(), nil, []string{"left out"})
}
