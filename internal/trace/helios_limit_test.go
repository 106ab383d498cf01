package trace

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestParse_HeliosTimeLimit reads the optional time_limit column of the
// synthetic traces `fairway trace synth` writes.
func TestParse_HeliosTimeLimit(t *testing.T) {
	in := `job_id,user,vc,jobname,gpu_num,cpu_num,node_num,state,submit_time,start_time,end_time,duration,queue,time_limit
1,u001,vc1,train-bert-7,1,4,1,COMPLETED,2020-04-01 00:00:10,2020-04-01 00:00:10,2020-04-01 00:03:30,200,0,1800
2,u002,vc1,eval-vit-3,8,32,1,FAILED,2020-04-01 00:01:00,2020-04-01 00:01:00,2020-04-01 00:01:05,5,0,
`
	tr, err := ReadAll(strings.NewReader(in), Helios, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(tr.Jobs) != 2 {
		t.Fatalf("got %d jobs, want 2", len(tr.Jobs))
	}
	if got, want := tr.Jobs[0].TimeLimit, 30*time.Minute; got != want {
		t.Errorf("job 1 time limit = %v, want %v", got, want)
	}
	if got := tr.Jobs[1].TimeLimit; got != 0 {
		t.Errorf("job 2 (empty time_limit) time limit = %v, want 0", got)
	}
	bad := strings.Replace(in, ",1800\n", ",soon\n", 1)
	if _, err := ReadAll(strings.NewReader(bad), Helios, Options{}); err == nil {
		t.Error("time_limit \"soon\": want an error")
	}
}

// TestParse_HeliosState reads the state column as the Helios clusters'
// exports, Philly's and sacct's spell it; a name it does not know fails the
// line with the name, so ingest never drops an ended job as unfinished.
func TestParse_HeliosState(t *testing.T) {
	const head = "job_id,user,vc,jobname,gpu_num,cpu_num,node_num,state,submit_time,start_time,end_time,duration,queue\n"
	line := func(state string) string {
		return "1,u001,vc1,a,1,4,1," + state + ",2020-04-01 00:00:10,2020-04-01 00:00:20,2020-04-01 00:03:30,190,10\n"
	}
	for _, tc := range []struct {
		state, want, err string
	}{
		{"COMPLETED", "COMPLETED", ""},
		{"Pass", "COMPLETED", ""},
		{"Killed", "CANCELLED", ""},
		{"Failed", "FAILED", ""},
		{"completed", "COMPLETED", ""},
		{"CANCELLED by 0", "CANCELLED", ""},
		{"NODE_FAIL", "NODE_FAIL", ""},
		{"RUNNING", "RUNNING", ""},
		{"UNKNOWN", "UNKNOWN", ""},
		{"Weird", "", `f:2: column state: "Weird" is not a job state`},
		{"", "", "f:2: column state: empty"},
	} {
		tr, err := ReadAll(strings.NewReader(head+line(tc.state)), Helios, Options{Name: "f"})
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("state %q: err %v, want %q", tc.state, err, tc.err)
			}
			continue
		}
		if err != nil || len(tr.Jobs) != 1 {
			t.Errorf("state %q: %d jobs, %v", tc.state, len(tr.Jobs), err)
			continue
		}
		if got := tr.Jobs[0].State.String(); got != tc.want {
			t.Errorf("state %q read as %s, want %s", tc.state, got, tc.want)
		}
	}
}

// TestRead_ByteOrderMark: a trace saved by Excel, a Windows tool or pandas'
// "utf-8-sig" starts with a UTF-8 byte order mark; it is told and read as
// without it, in every format, plain or gzip.
func TestRead_ByteOrderMark(t *testing.T) {
	bom := "\ufeff"
	for _, tc := range []struct {
		name, text string
		format     Format
	}{
		{"helios", "job_id,user,vc,jobname,gpu_num,cpu_num,node_num,state,submit_time,start_time,end_time,duration,queue\r\n" +
			"1,u001,vc1,a,1,4,1,COMPLETED,2020-04-01 00:00:10,2020-04-01 00:00:20,2020-04-01 00:03:30,190,10\r\n", Helios},
		{"philly-mix", "job_id,user,num_gpu,submit_time,iterations,model_name,duration,interval,expect_time_list,expect_value_list,best_effort,job_type\n" +
			"0,vc_6214e9,1,8555,5049,vgg16,747,14,1105,10,0,strict\n", PhillyMIX},
		{"swf", "1 0 10 190 4 -1 -1 4 600 -1 1 1 1 -1 1 -1 -1 -1\n", SWF},
	} {
		for _, gz := range []bool{false, true} {
			in := []byte(bom + tc.text)
			if gz {
				in = gzipBytes(t, in)
			}
			f, err := Detect(bytes.NewReader(in), tc.name)
			if err != nil || f != tc.format {
				t.Errorf("%s (gzip %v): told %q, %v; want %q", tc.name, gz, f, err, tc.format)
				continue
			}
			tr, err := ReadAll(bytes.NewReader(in), tc.format, Options{Name: tc.name})
			if err != nil || len(tr.Jobs) != 1 {
				t.Errorf("%s (gzip %v): %d jobs, %v; want 1", tc.name, gz, len(tr.Jobs), err)
			}
		}
	}
}

// TestParse_HeliosTimes reads the timestamp spellings of Helios exports:
// Helios' own zone-less wall clock (read as UTC), RFC 3339, pandas' spelling
// of a zone-aware column, fractions of a second and Unix seconds.
func TestParse_HeliosTimes(t *testing.T) {
	const head = "job_id,user,vc,jobname,gpu_num,cpu_num,node_num,state,submit_time,start_time,end_time,duration,queue\n"
	want := time.Date(2020, 4, 1, 0, 0, 10, 0, time.UTC)
	for _, tc := range []struct {
		submit string
		want   time.Time
	}{
		{"2020-04-01 00:00:10", want},
		{"2020-04-01T00:00:10", want},
		{"2020-04-01T00:00:10Z", want},
		{"2020-04-01T08:00:10+08:00", want},
		{"2020-04-01 08:00:10+08:00", want},
		{"2020-04-01 00:00:10.250", want.Add(250 * time.Millisecond)},
		{"1585699210", want},
	} {
		in := head + "1,u001,vc1,a,1,4,1,COMPLETED," + tc.submit + ",,,190,10\n"
		tr, err := ReadAll(strings.NewReader(in), Helios, Options{Name: "f"})
		if err != nil || len(tr.Jobs) != 1 {
			t.Errorf("submit %q: %v", tc.submit, err)
			continue
		}
		if got := tr.Jobs[0].Submit; !got.Equal(tc.want) || got.Location() != time.UTC {
			t.Errorf("submit %q read as %v, want %v in UTC", tc.submit, got, tc.want)
		}
	}
	bad := head + "1,u001,vc1,a,1,4,1,COMPLETED,2020/04/01 00:00:10,,,190,10\n"
	if _, err := ReadAll(strings.NewReader(bad), Helios, Options{Name: "f"}); err == nil || !strings.Contains(err.Error(), `f:2: column submit_time: want a time like`) {
		t.Errorf("submit 2020/04/01: err %v, want one naming the column", err)
	}
}

// TestRead_SkipReasonsCapped: under SkipBad every malformed line is
// counted, and the first MaxSkipReasons are kept with their line numbers.
func TestRead_SkipReasonsCapped(t *testing.T) {
	var in strings.Builder
	for i := range MaxSkipReasons + 5 {
		fmt.Fprintf(&in, "%d 0 10 190 4 -1 -1 4 600 -1 1 1 1 -1 1 -1 -1\n", i+1) // 17 fields
	}
	tr, err := ReadAll(strings.NewReader(in.String()), SWF, Options{Name: "f", SkipBad: true})
	if err != nil {
		t.Fatal(err)
	}
	if tr.Skipped != MaxSkipReasons+5 || len(tr.SkipReasons) != MaxSkipReasons {
		t.Fatalf("skipped %d, %d reasons; want %d and %d", tr.Skipped, len(tr.SkipReasons), MaxSkipReasons+5, MaxSkipReasons)
	}
	if got, want := tr.SkipReasons[MaxSkipReasons-1].Error(), fmt.Sprintf("f:%d: want 18 fields, got 17", MaxSkipReasons); got != want {
		t.Errorf("last reason kept %q, want %q", got, want)
	}
}
