package texttest

import "testing"

// recorder is a testing.TB that counts failures instead of failing.
type recorder struct {
	testing.TB
	errors int
}

func (r *recorder) Helper()               {}
func (r *recorder) Errorf(string, ...any) { r.errors++ }

func TestCheck(t *testing.T) {
	for _, tc := range []struct {
		name       string
		want, none []string
		errors     int
	}{
		{"all there, nothing unwanted", []string{"job 7", "rank 2"}, []string{"never"}, 0},
		{"one missing", []string{"job 7", "job 8"}, nil, 1},
		{"one unwanted, one missing", []string{"job 9"}, []string{"rank 2"}, 2},
	} {
		r := &recorder{TB: t}
		Check(r, "job 7: rank 2 of 3", tc.want, tc.none)
		if r.errors != tc.errors {
			t.Errorf("%s: %d failures, want %d", tc.name, r.errors, tc.errors)
		}
	}
}
