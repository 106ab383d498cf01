package sim

import (
	"context"
	"os"
	"testing"

	"github.com/fairway-hpc/fairway/policy"
)

// TestSuite_DefaultDominatesFairshare is the cheap part of the policy suite
// that runs in CI: the first 3000 jobs of CTC and KTH at 1.0 and 1.2 times
// their own offered load, replayed under the default policy and the
// baselines its criteria name. A change that makes the default wait longer
// on average, or give a higher average bounded slowdown, than Slurm's
// fair-share on any of the four fails here, instead of regenerating a
// golden file. The other criteria are logged, not enforced: on these rows
// the default does not meet all of them (docs/POLICY.md has the whole
// suite, `fairway simulate --suite`, and the trade-offs).
func TestSuite_DefaultDominatesFairshare(t *testing.T) {
	if testing.Short() && os.Getenv("CI") != "true" {
		t.Skip("-short: replays 24 simulations of 3000 jobs")
	}
	dir := tracesDir(t)
	var traces []SuiteTrace
	for _, tr := range SuiteTraces(dir) {
		if tr.Name == CTCFile || tr.Name == KTHFile {
			traces = append(traces, tr)
		}
	}
	res, err := RunSuite(context.Background(), SuiteConfig{
		Traces:   traces,
		Loads:    []float64{1.0, 1.2},
		Policies: []string{"fifo", "fairshare", "vtc", "qssf", "sjf-oracle", policy.Default},
		MaxJobs:  3000,
		Parallel: 2,
	})
	if err != nil {
		t.Fatal(err)
	}
	gated := map[string]bool{"avg wait < fairshare": true, "avg bsld < fairshare": true}
	for _, r := range res.Rows {
		for _, c := range r.Checks {
			switch {
			case c.Met:
			case gated[c.Name]:
				t.Errorf("%s × %.1f: %s loses to fairshare: %s fails, %.4g vs %.4g (%s)", r.Trace, r.Load, res.Default, c.Name, c.Default, c.Bound, c.Miss())
			default:
				t.Logf("%s × %.1f: %s misses %s: %.4g vs %.4g (%s)", r.Trace, r.Load, res.Default, c.Name, c.Default, c.Bound, c.Miss())
			}
		}
		t.Logf("%s × %.1f (offered %.2f): %s beaten by %s", r.Trace, r.Load, r.Offered, res.Default, beatenText(r.Beaten))
	}
}
