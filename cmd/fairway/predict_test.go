package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fairway-hpc/fairway/contrib/lab"
	"github.com/fairway-hpc/fairway/internal/shareddata"
	"github.com/google/go-cmp/cmp"
)

func kthTrace(t *testing.T) string {
	t.Helper()
	return shareddata.Trace(t, "KTH-SP2-filtered.swf.gz")
}

func runPredictApp(t *testing.T, args ...string) (string, error) {
	t.Helper()
	var out bytes.Buffer
	app := newApp()
	app.Writer = &out
	err := app.Run(append([]string{"fairway"}, args...))
	return out.String(), err
}

func TestPredictEval_JSON(t *testing.T) {
	path := kthTrace(t)
	out, err := runPredictApp(t, "predict", "eval", "--trace", path, "--format", "swf", "--json", "--predictors", "alea,limit")
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Trace      string `json:"trace"`
		Protocol   string `json:"protocol"`
		Predictors []struct {
			Name  string  `json:"name"`
			MAE   float64 `json:"mae_s"`
			MedAE float64 `json:"medae_s"`
			N     int     `json:"n"`
		} `json:"predictors"`
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("output is not JSON: %v\n%s", err, out)
	}
	type row struct {
		Name  string
		MAE   string
		MedAE float64
		N     int
	}
	var rows []row
	for _, p := range got.Predictors {
		rows = append(rows, row{p.Name, fmt.Sprintf("%.1f", p.MAE), p.MedAE, p.N})
	}
	want := []row{{"alea", "3773.8", 182, 28481}, {"limit", "4818.4", 669, 28481}}
	if diff := cmp.Diff(want, rows); diff != "" {
		t.Errorf("predictors (-want +got):\n%s", diff)
	}
	if got.Trace != "KTH-SP2-filtered.swf.gz" || got.Protocol != "submit-order" {
		t.Errorf("trace %q protocol %q", got.Trace, got.Protocol)
	}
}

func TestPredictEval_Table(t *testing.T) {
	path := kthTrace(t)
	out, err := runPredictApp(t, "predict", "eval", "--trace", path, "--format", "swf", "--protocol", "online", "--predictors", "limit")
	if err != nil {
		t.Fatal(err)
	}
	want := "trace KTH-SP2-filtered.swf.gz, protocol online: 28481 jobs replayed\n" +
		"left out: none\n" +
		"  predictor  MAE (s)  MedAE (s)  mean rel err  within ±10%   ±50%  ±100%  under      n\n" +
		"      limit   4818.4      669.0        297.61        21.9%  38.4%  46.0%   0.0%  28481\n" +
		"lowest MAE: limit; lowest MedAE: limit\n"
	if diff := cmp.Diff(want, out); diff != "" {
		t.Errorf("table (-want +got):\n%s", diff)
	}
}

// TestPredictEval_NoJobs: a trace none of whose records can be replayed
// is an error naming why, not a table of zeros with a "lowest MAE".
func TestPredictEval_NoJobs(t *testing.T) {
	const header = "; MaxProcs: 8\n"
	tests := []struct {
		name, trace, wantErr string
	}{
		{"header only", header, "header-only.swf: evaluate 0 jobs: no job to evaluate (left out: none)"},
		{"unknown run times", header + "1 0 5 -1 1 -1 -1 1 60 -1 1 1 1 -1 -1 -1 -1 -1\n2 10 0 -1 2 -1 -1 2 60 -1 1 2 1 -1 -1 -1 -1 -1\n",
			"unknown-run-times.swf: evaluate 0 jobs: no job to evaluate (left out: 2 records with unknown run time)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), strings.ReplaceAll(tt.name, " ", "-")+".swf")
			if err := os.WriteFile(path, []byte(tt.trace), 0o644); err != nil {
				t.Fatal(err)
			}
			out, err := runPredictApp(t, "predict", "eval", "--trace", path, "--format", "swf")
			if err == nil {
				t.Fatalf("want error %q, got nil; output:\n%s", tt.wantErr, out)
			}
			if diff := cmp.Diff(tt.wantErr, err.Error()); diff != "" {
				t.Errorf("error (-want +got):\n%s", diff)
			}
		})
	}
}

func TestPredictEval_BadFlags(t *testing.T) {
	tests := []struct {
		args    []string
		wantErr string
	}{
		{[]string{"predict", "eval", "--format", "swf"}, "--trace: required (a trace file), or --from-db"},
		{[]string{"predict", "eval", "--from-db", "--trace", "x"}, "--from-db and --trace: give one source"},
		{[]string{"predict", "eval", "--trace", "x.swf", "--days", "30"}, "--days: only with --from-db"},
		{[]string{"predict", "eval", "--from-db", "--database-url", "postgres://fake", "--format", "swf"}, "--format: only with --trace"},
		{[]string{"predict", "eval", "--from-db", "--cluster", "c", "--database-url", ""}, "--from-db: no database: set --database-url or FAIRWAY_DATABASE_URL"},
		{[]string{"predict", "eval", "--trace", "x", "--format", "csv"}, `--format: unknown trace format "csv": want swf, helios or philly-mix`},
		{[]string{"predict", "eval", "--trace", "x", "--format", "swf", "--protocol", "later"}, `--protocol: unknown protocol "later": want submit-order or online`},
		{[]string{"predict", "eval", "--trace", "x", "--format", "swf", "--predictors", "alea,oracle"}, `--predictors: unknown predictor "oracle": want some of limit,tsafrir,alea,helios,fairway`},
	}
	for _, tt := range tests {
		t.Run(tt.wantErr, func(t *testing.T) {
			t.Setenv("FAIRWAY_DATABASE_URL", "")
			t.Setenv("FAIRWAY_CLUSTER", "") // TestMain unsets it; kept for a run of this test alone
			_, err := runPredictApp(t, tt.args...)
			if err == nil {
				t.Fatalf("want error %q, got nil", tt.wantErr)
			}
			if diff := cmp.Diff(tt.wantErr, err.Error()); diff != "" {
				t.Errorf("error (-want +got):\n%s", diff)
			}
		})
	}
}

// TestPredictEval_FromDB replays a cluster's history stored through the
// ingest path (the KTH trace as cluster "kth") from the database.
func TestPredictEval_FromDB(t *testing.T) {
	e := lab.Get(t)
	url := e.Database(t)
	tracePath := shareddata.Trace(t, "KTH-SP2-filtered.swf.gz")
	if out, err := runApp(t, "ingest", "--database-url", url, "--from", "swf", "--cluster", "kth", tracePath); err != nil {
		t.Fatalf("ingest: %v\n%s", err, out)
	}
	// KTH ended in 1997: ask for enough days to reach it.
	days := fmt.Sprint(int(time.Since(time.Date(1996, 9, 1, 0, 0, 0, 0, time.UTC)).Hours()/24) + 1)
	out, err := runApp(t, "predict", "eval", "--from-db", "--cluster", "kth", "--days", days, "--database-url", url,
		"--predictors", "limit,alea", "--json")
	if err != nil {
		t.Fatalf("predict eval --from-db: %v\n%s", err, out)
	}
	var res struct {
		Predictors []struct {
			Name string  `json:"name"`
			N    int     `json:"n"`
			MAE  float64 `json:"mae_s"`
		} `json:"predictors"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("decode: %v\n%s", err, out)
	}
	if len(res.Predictors) != 2 || res.Predictors[0].N != 28481 || res.Predictors[1].N != 28481 {
		t.Fatalf("predictors %+v, want limit and alea over the 28481 KTH jobs", res.Predictors)
	}
	if res.Predictors[1].MAE >= res.Predictors[0].MAE {
		t.Errorf("alea MAE %.1f not below limit's %.1f", res.Predictors[1].MAE, res.Predictors[0].MAE)
	}
	// --cluster left out (empty even if the lab's FAIRWAY_CLUSTER is set):
	// found in the database, as report finds it
	out, err = runApp(t, "predict", "eval", "--from-db", "--cluster", "", "--days", days, "--database-url", url, "--predictors", "limit")
	if err != nil || !strings.Contains(out, "kth (database") {
		t.Errorf("predict eval --from-db without --cluster: %v\n%s", err, out)
	}
	// Errors name the problem.
	if _, err := runApp(t, "predict", "eval", "--from-db", "--cluster", "nosuch", "--database-url", url); err == nil || !strings.Contains(err.Error(), "no finished jobs") {
		t.Errorf("empty cluster: err = %v", err)
	}
}
