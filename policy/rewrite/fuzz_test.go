package rewrite

import (
	"errors"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// FuzzParseElastic feeds ParseElastic arbitrary job comments. Any user
// writes their job's comment (sbatch --comment), and the sidecar parses
// every queued job's each cycle, so the parser must neither panic nor
// read a range the comment does not spell, and its error, which serve
// logs, must stay short whatever the comment's length. Seeds are the
// comments of TestParseElastic_Markers. Run it with
//
//	go test -run '^$' -fuzz '^FuzzParseElastic$' -fuzztime 10m -parallel 1 ./policy/rewrite
func FuzzParseElastic(f *testing.F) {
	for _, s := range []string{
		"", "my run fairway:elastic=1-4 seed 3", "fairway:elastic=2-2", "fairway:elastic=0-4",
		"fairway:elastic=4-2", "fairway:elastic",
		"fairway:no-rewrite fairway:elastic=0001-0008", "fairway:elastic=1-99999", "fairway:elastic=x fairway:elastic=1-2",
	} {
		f.Add(s)
	}
	// A range read is the first marker's, spelled whole: digits, '-',
	// digits, and no digit, '.' or '-' after them.
	whole := regexp.MustCompile(`^fairway:elastic=0*(\d+)-0*(\d+)([^\d.\-]|$)`)
	f.Fuzz(func(t *testing.T, comment string) {
		lo, hi, ok, err := ParseElastic(comment)
		if ok != strings.Contains(comment, ElasticMarker) {
			t.Fatalf("ok %v, yet the comment's holding the marker is %v", ok, !ok)
		}
		if err != nil {
			if !ok || !errors.Is(err, ErrBadElastic) || lo != 0 || hi != 0 {
				t.Fatalf("error %v with %d-%d, ok %v", err, lo, hi, ok)
			}
			if n := len(err.Error()); n > 200 {
				t.Fatalf("error of %d bytes for a comment of %d", n, len(comment))
			}
			return
		}
		if !ok {
			if lo != 0 || hi != 0 {
				t.Fatalf("no marker, yet %d-%d", lo, hi)
			}
			return
		}
		if lo < 1 || hi < lo {
			t.Fatalf("accepted %d-%d", lo, hi)
		}
		m := whole.FindStringSubmatch(comment[strings.Index(comment, ElasticMarker):])
		if m == nil || m[1] != strconv.Itoa(lo) || m[2] != strconv.Itoa(hi) {
			t.Fatalf("%q read as %d-%d, which it does not spell (%q)", comment, lo, hi, m)
		}
	})
}
