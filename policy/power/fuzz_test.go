package power

import (
	"bytes"
	"compress/gzip"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fairway-hpc/fairway/internal/shareddata"
)

// FuzzReadSequence feeds ReadSequence arbitrary bytes as the node-demand
// CSV an admin gives `fairway power eval --sequence`, plain or gzipped,
// and resamples what it accepts, as Evaluate does. Seeds are
// the shapes of sequence_test.go and, when the shared data is present, the
// head of the Philly sequence (as text and gzipped); without it the seeds
// still run as ordinary tests. Run it with
//
//	go test -run '^$' -fuzz '^FuzzReadSequence$' -fuzztime 10m -parallel 1 ./policy/power
func FuzzReadSequence(f *testing.F) {
	for _, s := range []string{
		"time,active,total\n2017-10-03 00:00:00,312,420\n2017-10-03 00:01:00,309,420\n2017-10-03 00:03:00,314,420\n",
		"total,time,active,extra\n420,2017-10-03 00:00:00,312,x\n420.0,2017-10-03T00:01:00Z,309.0,y\n",
		"time,active,total,pending\n2017-10-03 00:00:00,3,10,0\n2017-10-03 00:01:00,3,10,7\n2017-10-03 00:03:00,9,10,2\n",
		"\ufefftime, active ,TOTAL\n2017-10-03T00:00:00+02:00,1,2\n2017-10-03 00:00,2,2\n",
		"time,active,total\n2017-10-03 00:01:00,3,10\n2017-10-03 00:00:00,3,10\n",
		// the Helios artifact's nodes by GPUs in use
		"time,Use 0 GPU,Use 1 GPU,Use 2 GPU,Use 8 GPU\n2020-04-01 00:00:00,10,3,0,5\n2020-04-01 00:01:00,11,2,0,5.0\n",
		"time,Use 1 GPU,Use 8 GPUs,total\n2020-04-01 00:00:00,3,5,20\n",
		"time,All Node Number,Use 0 GPU,Use 1 GPU,Use 8 GPU\n2020-04-01 00:00:00,20,10,3,5\n2020-04-01 00:01:00,21.0,11,2,5\n",
	} {
		f.Add([]byte(s))
		f.Add(gzipped(f, s))
	}
	if root, err := shareddata.Root(); err == nil {
		if p := filepath.Join(root, "data", "power", "philly_node_sequence.csv.gz"); fileExists(f, p) {
			head := shareddata.GzipHead(f, p, 60)
			f.Add([]byte(head))
			f.Add(gzipped(f, head))
		}
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		samples, err := ReadSequence(bytes.NewReader(in), "fuzz")
		if err != nil {
			if !strings.HasPrefix(err.Error(), "fuzz") {
				t.Fatalf("error %q does not name the input", err)
			}
			if !errors.Is(err, ErrMalformed) && !strings.HasPrefix(err.Error(), "fuzz: gzip: ") {
				t.Fatalf("error %v wraps neither ErrMalformed nor a gzip error", err)
			}
			return
		}
		checkSamples(t, samples)
		// Evaluate's default step: its one-minute pass is the same code
		// with ten times the steps (TestResample_SpanBounded bounds it),
		// and would spend the fuzzing on allocating them.
		s, err := Resample(samples, DefaultEvalConfig().Step)
		if err != nil {
			if !strings.Contains(err.Error(), "resample") {
				t.Fatalf("resample error %q does not say where it failed", err)
			}
			return
		}
		checkSeries(t, samples, s)
	})
}

// checkSamples holds what ReadSequence promises of an accepted sequence:
// at least one row, times strictly increasing, 0 ≤ active ≤ total with
// total at least 1, no count beyond any cluster.
func checkSamples(t *testing.T, samples []Sample) {
	t.Helper()
	if len(samples) == 0 {
		t.Fatal("no samples and no error")
	}
	for i, s := range samples {
		if s.Total < 1 || s.Active < 0 || s.Active > s.Total || s.Total > maxSequenceNodes || s.Pending < 0 || s.Pending > maxSequenceNodes {
			t.Fatalf("row %d: %d active of %d, %d pending", i, s.Active, s.Total, s.Pending)
		}
		if i > 0 && !s.Time.After(samples[i-1].Time) {
			t.Fatalf("row %d: %s not after %s", i, s.Time, samples[i-1].Time)
		}
	}
}

// checkSeries holds what Resample promises: every sample falls in a step
// of the series, which holds at least its counts and has at most
// maxSeriesSteps steps; no step holds a count
// out of the sequence's range; the first step is never a filled one.
func checkSeries(t *testing.T, samples []Sample, s *Series) {
	t.Helper()
	if s.Len() == 0 || s.Len() > maxSeriesSteps || len(s.Total) != s.Len() || s.Pending != nil && len(s.Pending) != s.Len() {
		t.Fatalf("series of %d steps, %d totals, %d pending", s.Len(), len(s.Total), len(s.Pending))
	}
	for _, x := range samples {
		i := s.Index(x.Time)
		if i < 0 || i >= s.Len() {
			t.Fatalf("sample at %s: step %d of %d", x.Time, i, s.Len())
		}
		if s.Time(i).After(x.Time) || !s.Time(i+1).After(x.Time) {
			t.Fatalf("sample at %s in step %d [%s, %s)", x.Time, i, s.Time(i), s.Time(i+1))
		}
		if s.Active[i] < x.Active || s.Total[i] < x.Total || x.Pending > 0 && s.Pending[i] < x.Pending {
			t.Fatalf("step %d holds %d of %d, below its sample's %d of %d", i, s.Active[i], s.Total[i], x.Active, x.Total)
		}
	}
	for i := range s.Len() {
		if s.Active[i] < 0 || s.Active[i] > s.Total[i] || s.Total[i] > maxSequenceNodes {
			t.Fatalf("step %d: %d active of %d", i, s.Active[i], s.Total[i])
		}
	}
	if s.Filled < 0 || s.Filled >= s.Len() {
		t.Fatalf("%d of %d steps filled", s.Filled, s.Len())
	}
}

func gzipped(tb testing.TB, s string) []byte {
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	if _, err := zw.Write([]byte(s)); err != nil {
		tb.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		tb.Fatal(err)
	}
	return b.Bytes()
}

// fileExists says whether path exists; any other error fails tb.
func fileExists(tb testing.TB, path string) bool {
	_, err := os.Stat(path)
	if errors.Is(err, os.ErrNotExist) {
		return false
	}
	if err != nil {
		tb.Fatal(err)
	}
	return true
}
