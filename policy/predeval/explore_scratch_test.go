package predeval

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/fairway-hpc/fairway/policy"
	"github.com/fairway-hpc/fairway/policy/trace"
)

func TestExploreScratch(t *testing.T) {
	spec := os.Getenv("EXPLORE")
	if spec == "" {
		t.Skip()
	}
	var ps []policy.FairwayParams
	if err := json.Unmarshal([]byte(spec), &ps); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join("..", "..", "..", "shared", "data", "traces")
	for _, tc := range []struct {
		f  string
		fm trace.Format
	}{{"CTC-SP2-1996-3.1-cln.swf.gz", trace.SWF}, {"KTH-SP2-filtered.swf.gz", trace.SWF}, {"Philly-MIX1.csv.gz", trace.PhillyMIX}} {
		fh, _ := os.Open(filepath.Join(dir, tc.f))
		tr, err := trace.ReadAll(fh, tc.fm, trace.Options{})
		fh.Close()
		if err != nil {
			t.Fatal(err)
		}
		for _, proto := range []Protocol{SubmitOrder, Online} {
			var preds []policy.Predictor
			for _, p := range ps {
				pr, _ := policy.NewFairwayPredictor(p)
				preds = append(preds, pr)
			}
			res, _ := Run(tr.Jobs, preds, Options{Protocol: proto})
			line := fmt.Sprintf("%-8.8s %-12s", tc.f, proto)
			for _, m := range res.Predictors {
				line += fmt.Sprintf(" | %7.1f %6.1f", m.MAE, m.MedAE)
			}
			fmt.Println(line)
		}
	}
}
