package predeval

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/fairway-hpc/fairway/policy"
	"github.com/fairway-hpc/fairway/policy/trace"
)

func TestProfScratch(t *testing.T) {
	name := os.Getenv("PROF")
	if name == "" {
		t.Skip()
	}
	fh, _ := os.Open(filepath.Join("..", "..", "..", "shared", "data", "traces", "CTC-SP2-1996-3.1-cln.swf.gz"))
	tr, _ := trace.ReadAll(fh, trace.SWF, trace.Options{})
	p, _ := policy.NewPredictor(name, policy.PredictorParams{})
	Run(tr.Jobs, []policy.Predictor{p}, Options{Protocol: SubmitOrder})
}
