package accounting

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestNum_UnmarshalJSON(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    num
		wantErr bool
	}{
		{in: `42`, want: num{N: 42, Set: true}},
		{in: `null`, want: num{}},
		{in: `1.5e3`, want: num{N: 1500, Set: true}},
		{in: `4294967295`, want: num{N: 4294967295, Set: true}},
		// data_parser (Slurm 23.02+) numbers.
		{in: `{"set": true, "infinite": false, "number": 7}`, want: num{N: 7, Set: true}},
		{in: `{"set": false, "infinite": false, "number": 0}`, want: num{}},
		{in: `{"set": true, "infinite": true, "number": 0}`, want: num{Set: true, Infinite: true}},
		{in: `"7"`, want: num{N: 7, Set: true}}, // a quoted number, as json.Number allows
		{in: `"seven"`, wantErr: true},
		{in: `true`, wantErr: true},
	} {
		t.Run(tc.in, func(t *testing.T) {
			var got num
			err := json.Unmarshal([]byte(tc.in), &got)
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tc.wantErr)
			}
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(num{})); !tc.wantErr && diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestStateName_UnmarshalJSON(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`"COMPLETED"`, "COMPLETED"},
		{`["FAILED", "REQUEUED"]`, "FAILED"}, // data_parser: base state first, then flags
		{`null`, ""},
		{`[]`, ""},
	} {
		t.Run(tc.in, func(t *testing.T) {
			var s stateName
			if err := json.Unmarshal([]byte(tc.in), &s); err != nil {
				t.Fatal(err)
			}
			if s.String() != tc.want {
				t.Errorf("got %q, want %q", s.String(), tc.want)
			}
		})
	}
}

// TestUnixTime_Markers: a time Slurm sends as its NO_VAL or INFINITE marker
// in a plain number (24.11+ sacct for a job cancelled while pending) is no
// time, not 2106-02-07.
func TestUnixTime_Markers(t *testing.T) {
	for _, tc := range []struct {
		in   num
		want time.Time
	}{
		{num{N: 1795507849, Set: true}, time.Unix(1795507849, 0).UTC()},
		{num{N: slurmNoVal, Set: true}, time.Time{}},
		{num{N: slurmInfinite, Set: true}, time.Time{}},
		{num{Set: true, Infinite: true}, time.Time{}},
		{num{N: 0, Set: true}, time.Time{}},
		{num{}, time.Time{}},
	} {
		if got := unixTime(tc.in); !got.Equal(tc.want) {
			t.Errorf("unixTime(%+v) = %v, want %v", tc.in, got, tc.want)
		}
	}
}
