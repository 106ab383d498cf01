package serve

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/fairway-hpc/fairway/policy"
	"github.com/google/go-cmp/cmp"
)

// writePolicyFile writes p as a policy file at path, atomically (a new
// file renamed over the old, as an admin should replace it).
func writePolicyFile(t *testing.T, path string, p policy.LearnedParams) {
	t.Helper()
	f := policy.NewLearnedFile(p)
	f.TrainedOn = policy.TrainedOn{Cluster: "c", Jobs: 1000, Source: "test"}
	b, err := f.Encode()
	if err != nil {
		t.Fatal(err)
	}
	writeRaw(t, path, b)
}

func writeRaw(t *testing.T, path string, b []byte) {
	t.Helper()
	tmp := path + ".new"
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// gathered is the value of the metric name (with label value lv, "" for
// none) on m's registry; -1 when it is not there.
func gathered(t *testing.T, m *Metrics, name, lv string) float64 {
	t.Helper()
	fams, err := m.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fams {
		if f.GetName() != name {
			continue
		}
		for _, s := range f.GetMetric() {
			if lv != "" && (len(s.GetLabel()) != 1 || s.GetLabel()[0].GetValue() != lv) {
				continue
			}
			if g := s.GetGauge(); g != nil {
				return g.GetValue()
			}
			return s.GetCounter().GetValue()
		}
	}
	return -1
}

func TestLoadPolicyFile_RefusesNamingFileAndProblem(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.json")
	writePolicyFile(t, good, policy.LearnedParams{Run: 1, Age: 1})
	b, err := os.ReadFile(good)
	if err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "fifo.json")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		path string
		body string // written to path unless ""
		want string
	}{
		{"missing", filepath.Join(dir, "none.json"), "", "no such file or directory"},
		{"a directory", dir, "", "not a regular file"},
		{"a later format version", filepath.Join(dir, "v3.json"), strings.Replace(string(b), `"format_version": 2`, `"format_version": 3`, 1),
			"format_version 3: this Fairway reads versions 1 to 2"},
		{"a feature missing", filepath.Join(dir, "nofeat.json"), strings.Replace(string(b), `"counter",`, ``, 1),
			`feature "counter" missing from features`},
		{"a non-finite parameter", filepath.Join(dir, "inf.json"), strings.Replace(string(b), `"run": 1`, `"run": 1e400`, 1),
			`parameter "run" = 1e400: want a finite number`},
		{"empty (half written)", filepath.Join(dir, "empty.json"), " ", "empty: no JSON object"},
		// A pipe put where the file was must not block the cycle in open
		// until something writes to it.
		{"a named pipe", fifo, "", "not a regular file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.body != "" {
				if tt.body == string(b) {
					t.Fatal("the edit did not apply")
				}
				writeRaw(t, tt.path, []byte(tt.body))
			}
			_, err := LoadPolicyFile(tt.path)
			if err == nil || !strings.Contains(err.Error(), "policy file "+tt.path+": ") || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("LoadPolicyFile = %v, want an error naming %s and saying %q", err, tt.path, tt.want)
			}
		})
	}
	pf, err := LoadPolicyFile(good)
	if err != nil {
		t.Fatal(err)
	}
	if got := pf.Info().String(); got != "policy file "+good+" (trained on cluster c, 1000 jobs, from test)" {
		t.Errorf("Info().String() = %q", got)
	}
}

// TestRunner_PolicyFileReload: serve ranks with its policy file, reloads
// it when it changes, and keeps the last good policy when the file
// becomes unusable (another format version, removed, half written),
// logging the error at every cycle it sees the bad file and saying so in
// fairway_policy_file_ok. The two points rank a 1-GPU and a 4-GPU job
// opposite ways: small first (size exponent 1) or large first (−1).
func TestRunner_PolicyFileReload(t *testing.T) {
	small := policy.LearnedParams{Size: 1, Age: 0.5}
	large := policy.LearnedParams{Size: -1, Age: 0.5}
	path := filepath.Join(t.TempDir(), "policy.json")
	writePolicyFile(t, path, small)
	good, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	pf, err := LoadPolicyFile(path)
	if err != nil {
		t.Fatal(err)
	}
	g := newRig(t, Config{}, true)
	var logs bytes.Buffer
	g.r.log = slog.New(slog.NewTextHandler(&logs, nil))
	if err := g.r.SetPolicyFile(pf); err != nil {
		t.Fatal(err)
	}
	one := job(1, "a", policy.StatePending, 0)
	four := job(2, "b", policy.StatePending, time.Second)
	four.GPUs = 4

	steps := []struct {
		name      string
		change    func(t *testing.T)
		wantOrder []int64
		wantOK    float64 // fairway_policy_file_ok
		wantErr   string  // in the cycle's PolicyFileInfo and the log; "" none
	}{
		{"as loaded", func(*testing.T) {}, []int64{1, 2}, 1, ""},
		{"another format version: the last good kept", func(t *testing.T) {
			writeRaw(t, path, bytes.Replace(good, []byte(`"format_version": 2`), []byte(`"format_version": 7`), 1))
		}, []int64{1, 2}, 0, "format_version 7: this Fairway reads versions 1 to 2"},
		{"still bad: logged again", func(*testing.T) {}, []int64{1, 2}, 0, "format_version 7"},
		{"fixed, a new point", func(t *testing.T) { writePolicyFile(t, path, large) }, []int64{2, 1}, 1, ""},
		{"removed: the last good kept", func(t *testing.T) {
			if err := os.Remove(path); err != nil {
				t.Fatal(err)
			}
		}, []int64{2, 1}, 0, "no such file or directory"},
		{"half written", func(t *testing.T) { writeRaw(t, path, good[:len(good)/2]) }, []int64{2, 1}, 0, "not a JSON object"},
		{"the first point back", func(t *testing.T) { writeRaw(t, path, good) }, []int64{1, 2}, 1, ""},
		{"touched, same bytes", func(t *testing.T) {
			now := time.Now().Add(time.Minute)
			if err := os.Chtimes(path, now, now); err != nil {
				t.Fatal(err)
			}
		}, []int64{1, 2}, 1, ""},
	}
	for _, st := range steps {
		logs.Reset()
		st.change(t)
		res := g.cycle(t, one, four)
		var order []int64
		for _, sc := range res.Ranked {
			order = append(order, sc.JobID)
		}
		if diff := cmp.Diff(st.wantOrder, order); diff != "" {
			t.Errorf("%s: ranking (-want +got):\n%s", st.name, diff)
		}
		if got := gathered(t, g.r.metrics, "fairway_policy_file_ok", ""); got != st.wantOK {
			t.Errorf("%s: fairway_policy_file_ok = %v, want %v", st.name, got, st.wantOK)
		}
		if res.PolicyFile == nil || res.PolicyFile.Path != path {
			t.Fatalf("%s: the cycle's policy file is %+v, want %s", st.name, res.PolicyFile, path)
		}
		logged := strings.Contains(logs.String(), "policy file cannot be loaded: ranking with the last good one")
		switch {
		case st.wantErr == "" && (res.PolicyFile.Error != "" || logged):
			t.Errorf("%s: error %q, logged %v; want none:\n%s", st.name, res.PolicyFile.Error, logged, logs.String())
		case st.wantErr != "" && (!strings.Contains(res.PolicyFile.Error, st.wantErr) || !logged || !strings.Contains(logs.String(), st.wantErr)):
			t.Errorf("%s: error %q, want one saying %q, logged:\n%s", st.name, res.PolicyFile.Error, st.wantErr, logs.String())
		}
	}
	// as loaded, fixed, the first point back; touching is no reload.
	if ok, bad := gathered(t, g.r.metrics, "fairway_policy_file_reloads_total", "ok"), gathered(t, g.r.metrics, "fairway_policy_file_reloads_total", "error"); ok != 2 || bad != 4 {
		t.Errorf("reloads: %v ok, %v error; want 2 and 4 (one per cycle that saw a bad file)", ok, bad)
	}
}

// TestMetrics_NoPolicyFileNoGauge: without a policy file the gauge is not
// exported, so that no 0 reads as a bad file.
func TestMetrics_NoPolicyFileNoGauge(t *testing.T) {
	g := newRig(t, Config{}, true)
	g.cycle(t, job(1, "a", policy.StatePending, 0))
	if v := gathered(t, g.r.metrics, "fairway_policy_file_ok", ""); v != -1 {
		t.Errorf("fairway_policy_file_ok = %v without a policy file, want it absent", v)
	}
}
