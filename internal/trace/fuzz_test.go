package trace

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fairway-hpc/fairway/internal/shareddata"
	"github.com/fairway-hpc/fairway/policy"
)

// The fuzz targets feed one format's reader arbitrary text. Seeds are the
// real excerpts above (trace_test.go), the excerpts in testdata/ and, when
// the shared traces are present, the head of each real trace; without them
// the seeds still run as ordinary tests.
//
//	go test -run '^$' -fuzz '^FuzzSWF$' -fuzztime 10m -parallel 1 ./internal/trace

func FuzzSWF(f *testing.F) {
	fuzzFormat(f, SWF, []string{ctcHead, kthHead}, "sdsc-blue-excerpt.swf", ".swf.gz")
}

func FuzzHelios(f *testing.F) { fuzzFormat(f, Helios, []string{heliosHead}, "", "") }

func FuzzPhilly(f *testing.F) {
	fuzzFormat(f, PhillyMIX, []string{phillyHead}, "philly-mix1-excerpt.csv", ".csv.gz")
}

func fuzzFormat(f *testing.F, format Format, seeds []string, excerpt, sharedSuffix string) {
	for _, s := range seeds {
		f.Add(s)
		// a truncated copy: a record cut mid-line is the commonest damage
		f.Add(s[:len(s)*2/3])
	}
	if excerpt != "" {
		b, err := os.ReadFile(filepath.Join("testdata", excerpt))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(string(b))
	}
	if dir, err := shareddata.TracesDir(); err == nil && sharedSuffix != "" {
		paths, _ := filepath.Glob(filepath.Join(dir, "*"+sharedSuffix))
		for _, p := range paths {
			f.Add(shareddata.GzipHead(f, p, 60))
		}
	}
	f.Fuzz(func(t *testing.T, in string) {
		for _, skip := range []bool{false, true} {
			checkRead(t, in, format, skip)
		}
	})
}

// checkRead reads in whole and checks what every reader promises: an error
// is a ParseError wrapping ErrMalformed (or says the gzip stream is bad); a job has no negative count or
// duration; SWF and Philly jobs (whose times are relative offsets) start no
// earlier than they are submitted and end no earlier than they start.
func checkRead(t *testing.T, in string, format Format, skipBad bool) {
	tr, err := ReadAll(strings.NewReader(in), format, Options{Name: "fuzz", SkipBad: skipBad})
	if err != nil {
		var pe *ParseError
		if strings.HasPrefix(err.Error(), "gunzip fuzz: ") || strings.HasPrefix(err.Error(), "fuzz: ") && !errors.As(err, &pe) {
			return // input that starts like gzip but is not (a ParseError says "fuzz:LINE: ")
		}
		if !errors.As(err, &pe) || !errors.Is(err, ErrMalformed) {
			t.Fatalf("SkipBad=%v: error %v (%T) is not a ParseError wrapping ErrMalformed", skipBad, err, err)
		}
		if skipBad && !strings.Contains(err.Error(), "longer than") {
			t.Fatalf("SkipBad=%v: %v: only an over-long line may stop a reader that skips bad lines", skipBad, err)
		}
		return
	}
	lines := strings.Count(in, "\n") + 1
	if len(tr.Jobs)+tr.Skipped > lines {
		t.Fatalf("%d jobs + %d skipped from %d lines", len(tr.Jobs), tr.Skipped, lines)
	}
	if !skipBad && tr.Skipped != 0 {
		t.Fatalf("skipped %d lines without SkipBad", tr.Skipped)
	}
	for _, j := range tr.Jobs {
		checkJob(t, format, j)
	}
}

func checkJob(t *testing.T, format Format, j policy.Job) {
	if j.CPUs < 0 || j.GPUs < 0 || j.Nodes < 0 || j.MemoryMB < 0 || j.TimeLimit < 0 || j.ID < 0 {
		t.Fatalf("job %d: negative field: %+v", j.ID, j)
	}
	if j.Submit.IsZero() {
		t.Fatalf("job %d: no submit time", j.ID)
	}
	if format == Helios {
		return // its start and end are absolute times, taken as given
	}
	if !j.Start.IsZero() && j.Start.Before(j.Submit) {
		t.Fatalf("job %d: starts %s before its submit %s", j.ID, j.Start, j.Submit)
	}
	if !j.End.IsZero() && j.End.Before(j.Start) {
		t.Fatalf("job %d: ends %s before its start %s", j.ID, j.End, j.Start)
	}
	if !j.Deadline.IsZero() && j.Deadline.Before(j.Submit) {
		t.Fatalf("job %d: deadline %s before its submit %s", j.ID, j.Deadline, j.Submit)
	}
}

// TestParse_OutOfRange holds what the fuzzers found: numbers so large that
// converting them wrapped a duration or a count into a negative one (a job
// starting 280 years before it was submitted). Each is a clear error now.
func TestParse_OutOfRange(t *testing.T) {
	for _, tc := range []struct {
		name   string
		format Format
		in     string
	}{
		{"swf wait beyond a century", SWF, "0000000 0 028000000000 0 0 0 00 00 0 000 0 0 0 00 0 00 00 000"},
		{"swf run time beyond a century", SWF, "1 0 0 1e12 1 -1 -1 1 10 -1 1 1 1 1 1 -1 -1 -1"},
		{"swf processors beyond int range", SWF, "1 0 0 10 1e300 -1 -1 -1 10 -1 1 1 1 1 1 -1 -1 -1"},
		{"swf memory × processors beyond int64", SWF, "1 0 0 10 1000000 -1 -1 1000000 10 9e15 1 1 1 1 1 -1 -1 -1"},
		{"philly duration beyond a century", PhillyMIX, "job_id,user,num_gpu,submit_time,duration\n1,u,1,0,1e300\n"},
		{"helios queue beyond a century", Helios, "job_id,user,gpu_num,state,submit_time,duration,queue\n1,u,1,COMPLETED,0,1,1e12\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ReadAll(strings.NewReader(tc.in), tc.format, Options{Name: "t"})
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("got %v, want a malformed-line error", err)
			}
		})
	}
}
