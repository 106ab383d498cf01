package trace

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fairway-hpc/fairway/internal/shareddata"
	"github.com/fairway-hpc/fairway/policy"
	"github.com/google/go-cmp/cmp"
)

// The inputs below are the first lines of the shared traces (see
// ../shared/data/traces/README.md), cut down, plus broken variants of them.

const ctcHead = `; Version: 2.2
; Computer: IBM SP2
; Information: http://www.tc.cornell.edu/
;              http://www.cs.huji.ac.il/labs/parallel/workload/
; UnixStartTime: 835823160
; MaxNodes: 338 (batch partition; 512 total)
; MaxProcs: 338
; Note: THIS IS A CLEANED VERSION OF THE LOG!
;         user=135 and (job>=47421 and job<=50307) (2080 jobs removed)
;
    1        0 588530    937  306 142.00    -1   -1  35100    -1  1  97  -1 307  3 -1 -1 -1
    3   197154 459987  35268  306  32792    -1   -1  35100    -1  0  97  -1 307  3 -1 -1 -1
`

const kthHead = `; MaxProcs: 100
    1        0 964980  97225   56     -1    -1   56 210000    -1  1   1   1  -1 -1 -1 -1 -1
   17   600476 364560 215337    5     -1    -1    5 215400    -1  5  14  14  -1 -1 -1 -1 -1
`

const swfQueues = `; MaxProcs: 8
1 0 0 10 2 -1 -1 2 -1 -1 1 1 -1 -1 4 2 -1 -1
2 0 0 10 2 -1 -1 2 -1 -1 1 1 -1 -1 -1 2 -1 -1
3 0 0 10 2 -1 -1 2 -1 -1 1 1 -1 -1 -1 -1 -1 -1
`

const phillyHead = `job_id,user,num_gpu,submit_time,iterations,model_name,duration,interval,expect_time_list,expect_value_list,best_effort,job_type
0,vc_6214e9,1,8555,5049,vgg16,747,14,1105,10,0,strict
2,vc_ee9e8c,1,14341,3621,alexnet,30,17,14341,10,1,best
`

const heliosHead = `job_id,user,vc,gpu_num,cpu_num,node_num,state,submit_time,start_time,end_time,duration,queue
100,u3f1a,vc6YE,8,48,1,COMPLETED,2020-04-01 00:00:13,2020-04-01 00:01:00,2020-04-01 02:01:00,7200,47
101,u3f1a,vc6YE,0,4,1,Killed,2020-04-01 00:05:00,,,60,10
`

func at(s int64) time.Time { return time.Unix(s, 0).UTC() }

func TestParse_Formats(t *testing.T) {
	ctc := at(835823160)
	epoch := at(0)
	tests := []struct {
		name     string
		format   Format
		in       string
		wantJobs []policy.Job
		wantMeta Meta
	}{{
		name:   "swf ctc requested procs -1 uses allocated",
		format: SWF,
		in:     ctcHead,
		wantJobs: []policy.Job{{
			ID: 1, ArrayTask: -1, User: "97", Name: "307", Partition: "3",
			Submit: ctc, Start: ctc.Add(588530 * time.Second), End: ctc.Add((588530 + 937) * time.Second),
			TimeLimit: 35100 * time.Second, CPUs: 306, State: policy.StateCompleted,
		}, {
			ID: 3, ArrayTask: -1, User: "97", Name: "307", Partition: "3",
			Submit: ctc.Add(197154 * time.Second), Start: ctc.Add((197154 + 459987) * time.Second),
			End:       ctc.Add((197154 + 459987 + 35268) * time.Second),
			TimeLimit: 35100 * time.Second, CPUs: 306, State: policy.StateFailed,
		}},
		wantMeta: Meta{Format: SWF, MaxProcs: 338, MaxNodes: 338, Start: ctc, Header: map[string]string{
			"Version": "2.2", "Computer": "IBM SP2", "Information": "http://www.tc.cornell.edu/",
			"UnixStartTime": "835823160", "MaxNodes": "338 (batch partition; 512 total)", "MaxProcs": "338",
			"Note": "THIS IS A CLEANED VERSION OF THE LOG!",
		}},
	}, {
		name:   "swf kth no start time header counts from the epoch",
		format: SWF,
		in:     kthHead,
		wantJobs: []policy.Job{{
			ID: 1, ArrayTask: -1, User: "1", Account: "1",
			Submit: epoch, Start: epoch.Add(964980 * time.Second), End: epoch.Add((964980 + 97225) * time.Second),
			TimeLimit: 210000 * time.Second, CPUs: 56, State: policy.StateCompleted,
		}, {
			ID: 17, ArrayTask: -1, User: "14", Account: "14",
			Submit: epoch.Add(600476 * time.Second), Start: epoch.Add((600476 + 364560) * time.Second),
			End:       epoch.Add((600476 + 364560 + 215337) * time.Second),
			TimeLimit: 215400 * time.Second, CPUs: 5, State: policy.StateCancelled,
		}},
		wantMeta: Meta{Format: SWF, MaxProcs: 100, Start: epoch, Header: map[string]string{"MaxProcs": "100"}},
	}, {
		// Field 15 (queue) is the partition; field 16 (partition) when
		// the queue is unknown.
		name:   "swf queue and partition",
		format: SWF,
		in:     swfQueues,
		wantJobs: []policy.Job{{
			ID: 1, ArrayTask: -1, User: "1", Partition: "4",
			Submit: epoch, Start: epoch, End: epoch.Add(10 * time.Second), CPUs: 2, State: policy.StateCompleted,
		}, {
			ID: 2, ArrayTask: -1, User: "1", Partition: "2",
			Submit: epoch, Start: epoch, End: epoch.Add(10 * time.Second), CPUs: 2, State: policy.StateCompleted,
		}, {
			ID: 3, ArrayTask: -1, User: "1",
			Submit: epoch, Start: epoch, End: epoch.Add(10 * time.Second), CPUs: 2, State: policy.StateCompleted,
		}},
		wantMeta: Meta{Format: SWF, MaxProcs: 8, Start: epoch, Header: map[string]string{"MaxProcs": "8"}},
	}, {
		name:   "philly-mix",
		format: PhillyMIX,
		in:     phillyHead,
		wantJobs: []policy.Job{{
			ID: 0, ArrayTask: -1, User: "vc_6214e9", Account: "vc_6214e9", Partition: "vc_6214e9", Name: "vgg16", QOS: "strict", GPUs: 1,
			Submit: epoch.Add(8555 * time.Second), Start: epoch.Add(8555 * time.Second),
			End: epoch.Add((8555 + 747) * time.Second), State: policy.StateCompleted,
			Deadline: epoch.Add((8555 + 1105) * time.Second),
		}, {
			ID: 2, ArrayTask: -1, User: "vc_ee9e8c", Account: "vc_ee9e8c", Partition: "vc_ee9e8c", Name: "alexnet", QOS: "best", GPUs: 1,
			Submit: epoch.Add(14341 * time.Second), Start: epoch.Add(14341 * time.Second),
			End: epoch.Add((14341 + 30) * time.Second), State: policy.StateCompleted,
		}},
		wantMeta: Meta{Format: PhillyMIX, Start: epoch, Columns: strings.Split(strings.SplitN(phillyHead, "\n", 2)[0], ",")},
	}, {
		name:   "helios missing start and end derived from queue and duration",
		format: Helios,
		in:     heliosHead,
		wantJobs: []policy.Job{{
			ID: 100, ArrayTask: -1, User: "u3f1a", Partition: "vc6YE", GPUs: 8, CPUs: 48, Nodes: 1,
			Submit: time.Date(2020, 4, 1, 0, 0, 13, 0, time.UTC), Start: time.Date(2020, 4, 1, 0, 1, 0, 0, time.UTC),
			End: time.Date(2020, 4, 1, 2, 1, 0, 0, time.UTC), State: policy.StateCompleted,
		}, {
			ID: 101, ArrayTask: -1, User: "u3f1a", Partition: "vc6YE", CPUs: 4, Nodes: 1,
			Submit: time.Date(2020, 4, 1, 0, 5, 0, 0, time.UTC), Start: time.Date(2020, 4, 1, 0, 5, 10, 0, time.UTC),
			End: time.Date(2020, 4, 1, 0, 6, 10, 0, time.UTC), State: policy.StateCancelled,
		}},
		wantMeta: Meta{Format: Helios, Start: epoch, Columns: strings.Split(strings.SplitN(heliosHead, "\n", 2)[0], ",")},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, gz := range []bool{false, true} {
				in := []byte(tt.in)
				if gz {
					in = gzipBytes(t, in)
				}
				got, err := ReadAll(bytes.NewReader(in), tt.format, Options{Name: "t"})
				if err != nil {
					t.Fatalf("gzip=%v: ReadAll: %v", gz, err)
				}
				if diff := cmp.Diff(tt.wantJobs, got.Jobs); diff != "" {
					t.Errorf("gzip=%v: jobs (-want +got):\n%s", gz, diff)
				}
				if diff := cmp.Diff(tt.wantMeta, got.Meta); diff != "" {
					t.Errorf("gzip=%v: meta (-want +got):\n%s", gz, diff)
				}
			}
		})
	}
}

func gzipBytes(t *testing.T, b []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if _, err := zw.Write(b); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// swfJob is CTC's first record.
const swfJob = "    1        0 588530    937  306 142.00    -1   -1  35100    -1  1  97  -1 307  3 -1 -1 -1\n"

func TestParse_Malformed(t *testing.T) {
	tests := []struct {
		name    string
		format  Format
		in      string
		wantErr string // the whole message: file:line: reason
		// under SkipBad:
		wantJobs    int
		wantSkipped int
	}{
		{"swf too few fields", SWF, "; MaxProcs: 8\n" + swfJob + "  2 10 0 5 1\n" + swfJob,
			"f:3: want 18 fields, got 5", 2, 1},
		{"swf not a number", SWF, swfJob + strings.Replace(swfJob, "937", "9x7", 1),
			`f:2: field 4 (run time): invalid number "9x7"`, 1, 1},
		{"swf negative job id", SWF, strings.Replace(swfJob, "    1 ", "   -3 ", 1),
			"f:1: field 1 (job id): want a non-negative integer, got -3", 0, 1},
		{"swf bad header number", SWF, "; MaxProcs: lots\n" + swfJob,
			`f:1: header MaxProcs: invalid number "lots"`, 1, 1},
		{"philly short row", PhillyMIX, phillyHead + "5,vc_x,1,10\n",
			"f:4: want 12 fields, got 4", 2, 1},
		{"philly negative gpus", PhillyMIX, phillyHead + "5,vc_x,-1,10,1,vgg16,5,1,1,10,0,strict\n",
			"f:4: column num_gpu: want >= 0, got -1", 2, 1},
		{"philly missing column", PhillyMIX, "job_id,user,submit_time\n1,a,2\n",
			`f:1: header: missing column "num_gpu" (have job_id,user,submit_time)`, 0, 2},
		{"philly column twice", PhillyMIX, "job_id,user,num_gpu,submit_time,num_gpu\n1,a,1,2,3\n",
			`f:1: header: column "num_gpu" given twice (columns 3 and 5)`, 0, 2},
		{"helios no start", Helios, "job_id,user,vc,gpu_num,state,submit_time,duration\n1,u1,vc1,1,COMPLETED,2020-04-01 00:01:00,600\n",
			"f:1: header: want start_time (or queue, the wait) and end_time (or duration), to tell each job's run time", 0, 2},
		{"helios bad time", Helios, heliosHead + "7,u,vc,1,1,1,FAILED,yesterday,,,5,1\n",
			`f:4: column submit_time: want a time like 2020-04-01 00:00:00 or Unix seconds, got "yesterday"`, 2, 1},
		{"helios end before start", Helios, heliosHead + "7,u,vc,1,1,1,FAILED,2020-04-01 00:00:00,2020-04-01 00:10:00,2020-04-01 00:05:00,5,1\n",
			"f:4: end_time 2020-04-01 00:05:00 before start_time 2020-04-01 00:10:00", 2, 1},
		{"helios bad quoting", Helios, heliosHead + "7,\"u,vc,1\n",
			`f:4: bad CSV quoting: extraneous or missing " in quoted-field`, 2, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ReadAll(strings.NewReader(tt.in), tt.format, Options{Name: "f"})
			if err == nil {
				t.Fatalf("ReadAll: want error %q, got nil", tt.wantErr)
			}
			if diff := cmp.Diff(tt.wantErr, err.Error()); diff != "" {
				t.Errorf("error (-want +got):\n%s", diff)
			}
			var pe *ParseError
			if !errors.As(err, &pe) || !errors.Is(err, ErrMalformed) {
				t.Errorf("error %v: want a *ParseError wrapping ErrMalformed", err)
			}
			got, err := ReadAll(strings.NewReader(tt.in), tt.format, Options{Name: "f", SkipBad: true})
			if err != nil {
				t.Fatalf("ReadAll with SkipBad: %v", err)
			}
			if diff := cmp.Diff([2]int{tt.wantJobs, tt.wantSkipped}, [2]int{len(got.Jobs), got.Skipped}); diff != "" {
				t.Errorf("[jobs, skipped] (-want +got):\n%s", diff)
			}
			// The line skipped first is named as without SkipBad.
			if len(got.SkipReasons) != got.Skipped || got.SkipReasons[0].Error() != tt.wantErr {
				t.Errorf("skip reasons %v, want %d, the first %q", got.SkipReasons, got.Skipped, tt.wantErr)
			}
		})
	}
}

// TestSWF_LeftOut reads records an archive log could not recover, a whole
// line of -1 among them: each is left out and counted by reason, with or
// without SkipBad, and the jobs around it still read.
// TestSWF_Status maps field 11 to a state: an archive log's record is of a
// job that ended, so an unknown status (-1) is a completed job, not an
// unfinished one that ingest would leave out.
func TestSWF_Status(t *testing.T) {
	var in strings.Builder
	in.WriteString("; MaxProcs: 8\n")
	statuses := []int{1, 0, 5, -1, 3, 4, 2, 7}
	for i, st := range statuses {
		fmt.Fprintf(&in, "%d 0 0 10 2 -1 -1 2 -1 -1 %d 1 -1 -1 -1 -1 -1 -1\n", i+1, st)
	}
	tr, err := ReadAll(strings.NewReader(in.String()), SWF, Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := []policy.State{policy.StateCompleted, policy.StateFailed, policy.StateCancelled, policy.StateCompleted,
		policy.StateCompleted, policy.StateFailed, policy.StateUnknown, policy.StateUnknown}
	if len(tr.Jobs) != len(want) {
		t.Fatalf("%d jobs, want %d", len(tr.Jobs), len(want))
	}
	for i, j := range tr.Jobs {
		if j.State != want[i] {
			t.Errorf("status %d: state %s, want %s", statuses[i], j.State, want[i])
		}
	}
}

func TestSWF_LeftOut(t *testing.T) {
	allUnknown := strings.TrimSpace(strings.Repeat(" -1", 18)) + "\n"
	noRun := strings.Replace(swfJob, "   937 ", "    -1 ", 1)
	noProcs := strings.Replace(swfJob, " 306 142.00 ", "  -1 142.00 ", 1)
	negSubmit := strings.Replace(swfJob, "      0 ", "     -5 ", 1)
	in := "; MaxProcs: 338\n" + swfJob + allUnknown + noRun + allUnknown + noProcs + negSubmit + swfJob
	want := map[string]int{LeftUnknownSubmit: 3, LeftUnknownRun: 1, LeftNoProcessors: 1}
	for _, skipBad := range []bool{false, true} {
		tr, err := ReadAll(strings.NewReader(in), SWF, Options{Name: "f", SkipBad: skipBad})
		if err != nil {
			t.Fatalf("SkipBad=%v: ReadAll: %v", skipBad, err)
		}
		if len(tr.Jobs) != 2 || tr.Skipped != 0 {
			t.Errorf("SkipBad=%v: %d jobs, %d skipped: want 2 and 0", skipBad, len(tr.Jobs), tr.Skipped)
		}
		if diff := cmp.Diff(want, tr.LeftOut); diff != "" {
			t.Errorf("SkipBad=%v: LeftOut (-want +got):\n%s", skipBad, diff)
		}
	}
	const wantText = "1 records with no processors; 1 records with unknown run time; 3 records with unknown submit time"
	if got := FormatLeftOut(want); got != wantText {
		t.Errorf("FormatLeftOut = %q, want %q", got, wantText)
	}
	if got := FormatLeftOut(nil); got != "none" {
		t.Errorf("FormatLeftOut(nil) = %q, want none", got)
	}
}

func TestNewReader_BadGzip(t *testing.T) {
	in := []byte{0x1f, 0x8b, 0x08, 0x00, 0x00}
	if _, err := NewReader(bytes.NewReader(in), SWF, Options{Name: "x.gz"}); err == nil {
		t.Fatal("NewReader on a truncated gzip header: want error, got nil")
	}
}

// TestReadAll_TruncatedGzip: a gzip file cut anywhere, mid-line included,
// is reported as truncated (with or without SkipBad), not as the field
// count of the half line the cut left.
func TestReadAll_TruncatedGzip(t *testing.T) {
	var text strings.Builder
	text.WriteString("; MaxProcs: 8\n")
	for i := range 400 {
		fmt.Fprintf(&text, "%5d 0 10 100 4 -1 -1 4 200 -1 1 %d 1 -1 1 -1 -1 -1\n", i+1, i%7+1)
	}
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write([]byte(text.String()))
	zw.Close()
	whole := gz.Bytes()
	for _, cut := range []int{len(whole) / 3, len(whole) / 2, len(whole) - 9} {
		for _, skip := range []bool{false, true} {
			_, err := ReadAll(bytes.NewReader(whole[:cut]), SWF, Options{Name: "t.swf.gz", SkipBad: skip})
			if err == nil || !errors.Is(err, io.ErrUnexpectedEOF) || !strings.Contains(err.Error(), "t.swf.gz: unexpected EOF (the file is truncated)") {
				t.Errorf("cut at %d of %d bytes, SkipBad %v: err %v, want the file named as truncated", cut, len(whole), skip, err)
			}
		}
	}
	if tr, err := ReadAll(bytes.NewReader(whole), SWF, Options{Name: "t.swf.gz"}); err != nil || len(tr.Jobs) != 400 {
		t.Fatalf("the whole file: %v", err)
	}
}

func TestReader_Streaming(t *testing.T) {
	r, err := NewReader(strings.NewReader(ctcHead), SWF, Options{Name: "ctc", Cluster: "ctc"})
	if err != nil {
		t.Fatal(err)
	}
	var ids []int64
	for r.Next() {
		j := r.Job()
		if j.Cluster != "ctc" {
			t.Errorf("job %d: Cluster %q, want ctc", j.ID, j.Cluster)
		}
		ids = append(ids, j.ID)
	}
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]int64{1, 3}, ids); diff != "" {
		t.Errorf("ids (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(12, r.Line()); diff != "" {
		t.Errorf("Line (-want +got):\n%s", diff)
	}
}

// TestReadAll_SizedInputs reads the same jobs from an input whose size is
// known (a file, a strings.Reader, a gzip file's trailer: one slice sized
// from the first 256 jobs) and from one whose size is not (a pipe-like
// reader, gzip in memory: blocks), with line lengths that make the
// estimate right, too low and too high; all must give the same trace.
func TestReadAll_SizedInputs(t *testing.T) {
	swf := func(n int, pad func(i int) int) string {
		var b strings.Builder
		b.WriteString("; MaxProcs: 64\n")
		for i := 1; i <= n; i++ {
			fmt.Fprintf(&b, "%d %d 5 60 2 -1 -1 2 120 -1 1 %d 1 -1 -1 -1 -1 -1%s\n", i, 10*i, 1+i%7, strings.Repeat(" ", pad(i)))
		}
		return b.String()
	}
	tests := []struct {
		name string
		text string
	}{
		{"uniform", swf(1000, func(int) int { return 0 })},
		{"long lines first (estimate too low)", swf(3000, func(i int) int { return 300 * b2i(i <= 256) })},
		{"short lines first (estimate too high)", swf(1000, func(i int) int { return 200 * b2i(i > 256) })},
		{"exactly one block", swf(256, func(int) int { return 0 })},
		{"one block and one job", swf(257, func(int) int { return 0 })},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want, err := ReadAll(io.MultiReader(strings.NewReader(tt.text)), SWF, Options{})
			if err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(t.TempDir(), "t.swf")
			if err := os.WriteFile(path, []byte(tt.text), 0o600); err != nil {
				t.Fatal(err)
			}
			f, err := os.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			var gz bytes.Buffer
			zw := gzip.NewWriter(&gz)
			zw.Write([]byte(tt.text))
			zw.Close()
			if err := os.WriteFile(path+".gz", gz.Bytes(), 0o600); err != nil {
				t.Fatal(err)
			}
			fz, err := os.Open(path + ".gz")
			if err != nil {
				t.Fatal(err)
			}
			defer fz.Close()
			for _, in := range []struct {
				name string
				r    io.Reader
			}{{"strings.Reader", strings.NewReader(tt.text)}, {"file", f}, {"gzip in memory", bytes.NewReader(gz.Bytes())}, {"gzip file", fz}} {
				got, err := ReadAll(in.r, SWF, Options{})
				if err != nil {
					t.Fatalf("%s: %v", in.name, err)
				}
				if len(got.Jobs) != len(want.Jobs) || len(got.Jobs) == 0 {
					t.Fatalf("%s: %d jobs, want %d", in.name, len(got.Jobs), len(want.Jobs))
				}
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("%s (-blocks +sized):\n%s", in.name, diff)
				}
			}
		})
	}
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

func TestParseFormat(t *testing.T) {
	for _, f := range Formats {
		got, err := ParseFormat(string(f))
		if err != nil || got != f {
			t.Errorf("ParseFormat(%q) = %q, %v", f, got, err)
		}
	}
	if _, err := ParseFormat("csv"); err == nil {
		t.Error(`ParseFormat("csv"): want error`)
	}
}

// tracesDir is the shared trace folder ($FAIRWAY_TRACES, else
// shared/data/traces beside the repository). Absent on a fresh clone
// (skip), required under CI=true.
func tracesDir(t testing.TB) string {
	t.Helper()
	return shareddata.Traces(t)
}

// TestReadAll_SharedTraces parses the real traces whole and checks what their
// READMEs say about them.
func TestReadAll_SharedTraces(t *testing.T) {
	dir := tracesDir(t)
	tests := []struct {
		file     string
		format   Format
		jobs     int
		users    int
		maxProcs int
		leftOut  map[string]int
	}{
		{"CTC-SP2-1996-3.1-cln.swf.gz", SWF, 77222, 679, 338, nil},
		{"KTH-SP2-filtered.swf.gz", SWF, 28481, 214, 100, nil},
		{"Philly-MIX1.csv.gz", PhillyMIX, 30940, 11, 0, nil},
		// README: 243,306 records, 10,744 of them without a run time.
		{"SDSC-BLUE-2000-4.2-cln.swf.gz", SWF, 243306 - 10744, 468, 1152, map[string]int{LeftUnknownRun: 10744}},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			f, err := os.Open(filepath.Join(dir, tt.file))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			tr, err := ReadAll(f, tt.format, Options{Name: tt.file})
			if err != nil {
				t.Fatal(err)
			}
			users := map[string]bool{}
			for _, j := range tr.Jobs {
				users[j.User] = true
			}
			type summary struct{ Jobs, Users, MaxProcs, Skipped int }
			want := summary{tt.jobs, tt.users, tt.maxProcs, 0}
			got := summary{len(tr.Jobs), len(users), tr.Meta.MaxProcs, tr.Skipped}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("summary (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.leftOut, tr.LeftOut); diff != "" {
				t.Errorf("left out (-want +got):\n%s", diff)
			}
		})
	}
}

// TestSWF_ExtraFields checks that fields after SWF's 18 are ignored, as in
// Alea's data set (the nodes used, the queue's name, node properties), while
// the 18 standard fields are still checked and too few still refused.
func TestSWF_ExtraFields(t *testing.T) {
	const alea = "1 695 71 1164297 12 1 1024 12 1209600 91268055040 1 101 1 1 -1 1 1 1 {1129,1129} q_2w 1:ppn=12\n"
	tr, err := ReadAll(strings.NewReader(alea), SWF, Options{Name: "f"})
	if err != nil {
		t.Fatal(err)
	}
	if len(tr.Jobs) != 1 {
		t.Fatalf("%d jobs, want 1", len(tr.Jobs))
	}
	j := tr.Jobs[0]
	if j.CPUs != 12 || j.User != "101" || j.End.Sub(j.Start) != 1164297*time.Second || j.TimeLimit != 1209600*time.Second {
		t.Errorf("job %+v: want 12 CPUs, user 101, run 1164297 s, limit 1209600 s", j)
	}
	if f, err := Detect(strings.NewReader(alea), "f"); err != nil || f != SWF {
		t.Errorf("Detect = %q, %v; want swf", f, err)
	}
	bad := strings.Replace(alea, " 1024 ", " x ", 1)
	if _, err := ReadAll(strings.NewReader("; MaxProcs: 64\n"+bad), SWF, Options{Name: "f"}); err == nil || !strings.Contains(err.Error(), `field 7 (used memory): invalid number "x"`) {
		t.Errorf("a bad standard field before extra ones: %v, want it named", err)
	}
}
