package power

import (
	"bytes"
	"compress/gzip"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestReadSequence_Errors(t *testing.T) {
	for _, tc := range []struct {
		name, in, want string
	}{
		{"empty", "", "seq: empty"},
		{"no total column", "time,active\n2017-10-03 00:00:00,3\n", `seq:1: header "time,active" has no column "total"`},
		{"bad time", "time,active,total\n2017-10-03 00:00:00,3,10\nyesterday,3,10\n", "seq:3: time: malformed sequence"},
		{"bad active", "time,active,total\n2017-10-03 00:00:00,three,10\n", `seq:2: active: malformed sequence: "three" is not a node count`},
		{"negative total", "time,active,total\n2017-10-03 00:00:00,3,-1\n", "seq:2: total: malformed sequence: -1 is negative"},
		{"active above total", "time,active,total\n2017-10-03 00:00:00,11,10\n", "seq:2: active: malformed sequence: 11 active nodes of 10"},
		{"short row", "time,active,total\n2017-10-03 00:00:00,3\n", "seq:2: 2 fields, want at least 3"},
		{"time goes back", "time,active,total\n2017-10-03 00:01:00,3,10\n2017-10-03 00:00:00,3,10\n", "seq:3: time: malformed sequence: 2017-10-03 00:00:00 is not after"},
		{"header only", "time,active,total\n", "seq: no rows after the header"},
		{"bad pending", "time,active,total,pending\n2017-10-03 00:00:00,3,10,many\n", `seq:2: pending: malformed sequence: "many" is not a node count`},
		{"negative pending", "time,active,total,pending\n2017-10-03 00:00:00,3,10,-2\n", "seq:2: pending: malformed sequence: -2 is negative"},
		{"short row with pending", "time,active,total,pending\n2017-10-03 00:00:00,3,10\n", "seq:2: 3 fields, want at least 4"},
		{"bad quote", "time,active,total\n2017-10-03 00:00:00,\"3,10\n", "seq:2: malformed sequence"},
		// A record holding no field (a quote open to the end) made the
		// reader ask for the position of its first field, which panicked.
		{"quote open to the end", "time,active,total\n\"2017-10-03 00:00:00,3,10\n", `seq:2: malformed sequence: parse error on line 2, column 27: extraneous or missing " in quoted-field`},
		{"total beyond any cluster", "time,active,total\n2017-10-03 00:00:00,3,1000000000000\n", "seq:2: total: malformed sequence: 1000000000000 nodes: more than any cluster"},
		{"huge float total", "time,active,total\n2017-10-03 00:00:00,3,1e300\n", `seq:2: total: malformed sequence: "1e300" is not a node count`},
		{"wide row", "time,active,total\n2017-10-03 00:00:00,5,420,7,8\n", "seq:2: 5 fields, more than the header's 3"},
		// The last of two columns of one name would win without a word.
		{"column twice", "time,active,total,active\n2017-10-03 00:00:00,3,10,1\n", `seq:1: header "time,active,total,active" names column "active" twice`},
		{"no active and no gpu columns", "time,total\n2017-10-03 00:00:00,10\n", `seq:1: header "time,total" has no column "active"`},
		{"gpu columns without idle nodes or total", "time,Use 1 GPU,Use 2 GPU\n2017-10-03 00:00:00,3,1\n", `has no column "total" or "All Node Number" and no "Use 0 GPU" column to count idle nodes`},
		{"gpu column twice", "time,Use 1 GPU,use 1 gpus,total\n2017-10-03 00:00:00,3,1,10\n", "names the nodes using 1 GPUs twice"},
		{"bad gpu count", "time,Use 0 GPU,Use 1 GPU,Use 8 GPU\n2017-10-03 00:00:00,3,x,1\n", `seq:2: use 1 gpu: malformed sequence: "x" is not a node count`},
		{"gpu columns above total", "time,Use 1 GPU,Use 8 GPU,total\n2017-10-03 00:00:00,6,5,10\n", "seq:2: active: malformed sequence: 11 active nodes of 10"},
		{"no time", "active,total\n3,10\n", `seq:1: header "active,total" has no column "time"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ReadSequence(strings.NewReader(tc.in), "seq")
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want it to contain %q", err, tc.want)
			}
			if !errors.Is(err, ErrMalformed) {
				t.Errorf("err = %v, want it to wrap ErrMalformed", err)
			}
		})
	}
}

// TestReadSequence_HeliosGPUColumns: the Helios artifact's per-cluster
// files count nodes by GPUs in use ("Use K GPU"; the column names are the
// ones its CES_Helios.py sums, the files themselves are not fetchable
// here); active is the sum over K ≥ 1, as the artifact's "Used Node", and
// total comes from a total column, a "Use 0 GPU" column or the caller.
func TestReadSequence_HeliosGPUColumns(t *testing.T) {
	t0 := time.Date(2020, 4, 1, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name, in string
		total    int
		want     []Sample
		wantErr  string
	}{
		// pandas writes NaN as an empty cell; its sum skips it.
		{"an empty gpu cell counts none", "time,Use 1 GPU,Use 2 GPU,Use 8 GPU\n2020-04-01 00:00:00,3,,5\n", 20,
			[]Sample{{Time: t0, Active: 8, Total: 20}}, ""},
		{"idle nodes counted", "time,Use 0 GPU,Use 1 GPU,Use 2 GPU,Use 8 GPU\n2020-04-01 00:00:00,10,3,0,5\n2020-04-01 00:01:00,11,2,0,5.0\n", 0,
			[]Sample{{Time: t0, Active: 8, Total: 18}, {Time: t0.Add(time.Minute), Active: 7, Total: 18}}, ""},
		{"total given", "time,Use 1 GPU,Use 4 GPU,Use 8 GPU,other\n2020-04-01 00:00:00,3,1,5,x\n", 133,
			[]Sample{{Time: t0, Active: 9, Total: 133}}, ""},
		{"total column", " Use  1 GPU ,time,Use 8 GPUs,total\n4,2020-04-01 00:00:00,5,20\n", 0,
			[]Sample{{Time: t0, Active: 9, Total: 20}}, ""},
		{"an active column wins", "time,active,Use 1 GPU,total\n2020-04-01 00:00:00,2,7,20\n", 0,
			[]Sample{{Time: t0, Active: 2, Total: 20}}, ""},
		{"total given above the nodes counted", "time,Use 0 GPU,Use 1 GPU\n2020-04-01 00:00:00,1,3\n", 10,
			[]Sample{{Time: t0, Active: 3, Total: 10}}, ""},
		{"total given beside a total column", "time,active,total\n2020-04-01 00:00:00,2,20\n", 30, nil,
			`has a column "total" and a total of 30 nodes was given too`},
		{"total given below the nodes in use", "time,Use 1 GPU,Use 8 GPU\n2020-04-01 00:00:00,3,5\n", 6, nil,
			"seq:2: active: malformed sequence: 8 active nodes of 6"},
		{"negative total given", "time,active\n2020-04-01 00:00:00,2\n", -1, nil, "total -1: want 1 to"},
		// The artifact's CES accounts against the file's own "All Node
		// Number" (sim["All Node Number"]), not the sum over every K,
		// and it may change from row to row.
		{"All Node Number", "time,All Node Number,Use 0 GPU,Use 1 GPU,Use 2 GPU,Use 8 GPU\n2020-04-01 00:00:00,20,10,3,0,5\n2020-04-01 00:01:00,21.0,11,2,0,5\n", 0,
			[]Sample{{Time: t0, Active: 8, Total: 20}, {Time: t0.Add(time.Minute), Active: 7, Total: 21}}, ""},
		{"All Node Number without Use 0 GPU", "time,Use 1 GPU,Use 8 GPU,All Node Number\n2020-04-01 00:00:00,3,5,9\n", 0,
			[]Sample{{Time: t0, Active: 8, Total: 9}}, ""},
		{"total given beside All Node Number", "time,Use 1 GPU,All Node Number\n2020-04-01 00:00:00,3,9\n", 30, nil,
			`has a column "All Node Number" and a total of 30 nodes was given too`},
		{"total and All Node Number", "time,Use 1 GPU,total,All Node Number\n2020-04-01 00:00:00,3,9,9\n", 0, nil,
			`names the cluster's total twice ("total" or "All Node Number")`},
		{"bad All Node Number", "time,Use 1 GPU,All Node Number\n2020-04-01 00:00:00,3,x\n", 0, nil,
			`seq:2: all node number: malformed sequence: "x" is not a node count`},
		{"All Node Number below the nodes in use", "time,Use 1 GPU,Use 8 GPU,All Node Number\n2020-04-01 00:00:00,3,5,6\n", 0, nil,
			"seq:2: active: malformed sequence: 8 active nodes of 6"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ReadSequenceTotal(strings.NewReader(tc.in), "seq", tc.total)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want it to contain %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got)\n%s", diff)
			}
		})
	}
}

func TestReadSequence_GzipAndColumnOrder(t *testing.T) {
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	zw.Write([]byte("total,time,active,extra\n420,2017-10-03 00:00:00,312,x\n420.0,2017-10-03T00:01:00Z,309.0,y\n"))
	zw.Close()
	got, err := ReadSequence(&b, "seq.csv.gz")
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2017, 10, 3, 0, 0, 0, 0, time.UTC)
	want := []Sample{{Time: t0, Active: 312, Total: 420}, {Time: t0.Add(time.Minute), Active: 309, Total: 420}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got)\n%s", diff)
	}
}

// TestReadSequence_Pending: the optional pending column (simulate
// --power-sequence) is read into Sample.Pending and kept, as each step's
// maximum, by Resample; without it the series has none.
func TestReadSequence_Pending(t *testing.T) {
	got, err := ReadSequence(strings.NewReader("time,active,total,pending\n2017-10-03 00:00:00,3,10,0\n2017-10-03 00:01:00,3,10,7\n2017-10-03 00:03:00,9,10,2\n"), "seq")
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2017, 10, 3, 0, 0, 0, 0, time.UTC)
	want := []Sample{{Time: t0, Active: 3, Total: 10}, {Time: t0.Add(time.Minute), Active: 3, Total: 10, Pending: 7},
		{Time: t0.Add(3 * time.Minute), Active: 9, Total: 10, Pending: 2}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got)\n%s", diff)
	}
	s, err := Resample(got, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]int{0, 7, 7, 2}, s.Pending); diff != "" { // minute 2 carried forward
		t.Errorf("minute pending (-want +got)\n%s", diff)
	}
	if s, err = Resample(got, 2*time.Minute); err != nil || !slices.Equal(s.Pending, []int{7, 2}) {
		t.Errorf("2-minute pending %v (err %v), want the maxima [7 2]", s.Pending, err)
	}
}

func TestResample_MaximaAndGaps(t *testing.T) {
	t0 := time.Date(2017, 10, 3, 0, 3, 0, 0, time.UTC)
	in := []Sample{{Time: t0, Active: 3, Total: 10}, {Time: t0.Add(5 * time.Minute), Active: 5, Total: 10}, {Time: t0.Add(6 * time.Minute), Active: 4, Total: 12}, {Time: t0.Add(25 * time.Minute), Active: 2, Total: 10}}
	got, err := Resample(in, 10*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	want := &Series{Start: time.Date(2017, 10, 3, 0, 0, 0, 0, time.UTC), Step: 10 * time.Minute,
		Active: []int{5, 5, 2}, Total: []int{12, 12, 10}, Filled: 1}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got)\n%s", diff)
	}
	if _, err := Resample(in, 0); err == nil {
		t.Error("step 0: no error")
	}
}

// TestResample_SpanBounded: two rows whose years were mistyped far
// apart resampled to minutes took 4 GB and 6 s, and past 292 years the
// last row fell in a step centuries early (time.Sub saturates). Such a
// span is an error naming the dates; a span just under the bound is not.
func TestResample_SpanBounded(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"beyond Sub's range", "time,active,total\n0001-10-03 00:00:00,1,2\n9999-10-03 00:00:00,1,2\n",
			"resample: the sequence spans 0001-10-03 00:00:00 to 9999-10-03 00:00:00: more than 4194304 steps of 1m0s (a mistyped date?)"},
		{"years too far apart", "time,active,total\n2017-10-03 00:00:00,1,2\n2117-10-03 00:00:00,1,2\n",
			"resample: the sequence spans 2017-10-03 00:00:00 to 2117-10-03 00:00:00: more than 4194304 steps"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			samples, err := ReadSequence(strings.NewReader(tc.in), "seq")
			if err != nil {
				t.Fatal(err)
			}
			if _, err := Resample(samples, time.Minute); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want it to contain %q", err, tc.want)
			}
		})
	}
	t0 := time.Date(2017, 10, 3, 0, 0, 0, 0, time.UTC)
	in := []Sample{{Time: t0, Active: 1, Total: 2}, {Time: t0.Add((maxSeriesSteps - 1) * time.Minute), Active: 2, Total: 2}}
	s, err := Resample(in, time.Minute)
	if err != nil || s.Len() != maxSeriesSteps || s.Active[s.Len()-1] != 2 {
		t.Fatalf("span of %d minutes: err %v, want a series of that many steps ending with the last row", maxSeriesSteps, err)
	}
	if _, err := Resample(append(in, Sample{Time: in[1].Time.Add(time.Minute), Active: 1, Total: 2}), time.Minute); err == nil {
		t.Errorf("span of %d minutes: no error", maxSeriesSteps+1)
	}
}

// TestHeldMinutesNote: a sequence logged every 5 minutes is replayed per
// minute with 4 minutes in 5 held from the row before, and the evaluation
// says so; a per-minute log with a stray gap does not get the line.
func TestHeldMinutesNote(t *testing.T) {
	t0 := time.Date(2017, 10, 3, 0, 0, 0, 0, time.UTC)
	var every5 []Sample
	for i := range 100 {
		every5 = append(every5, Sample{Time: t0.Add(time.Duration(5*i) * time.Minute), Active: i % 7, Total: 10})
	}
	fine, err := Resample(every5, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	note := heldMinutesNote(fine.Filled, fine.Len())
	if fine.Len() != 496 || fine.Filled != 396 || !strings.Contains(note, "396 of the sequence's 496 minutes (80%) have no row") {
		t.Errorf("every 5 minutes: %d minutes, %d held, note %q; want 496, 396 and a note saying so", fine.Len(), fine.Filled, note)
	}
	for _, tc := range []struct{ filled, minutes int }{{0, 1000}, {9, 1000}, {0, 0}} {
		if note := heldMinutesNote(tc.filled, tc.minutes); note != "" {
			t.Errorf("%d of %d minutes held: note %q, want none", tc.filled, tc.minutes, note)
		}
	}
}
