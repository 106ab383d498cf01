package prolog

import (
	"slices"
	"strconv"
	"strings"
	"testing"
)

// FuzzParseDeviceList feeds ParseDeviceList arbitrary device lists. The
// list is SLURM_JOB_GPUS (else CUDA_VISIBLE_DEVICES) of the environment
// slurmd gives the prolog and epilog, which run as root on every node:
// slurmd writes it from the job's GPU allocation, not the user, but a
// list it never wrote (a newer format, a site's wrapper) must be refused
// clearly, never loop or allocate without bound. Seeds are the lists of
// TestParseDeviceList. Run it with
//
//	go test -run '^$' -fuzz '^FuzzParseDeviceList$' -fuzztime 10m -parallel 1 ./prolog
func FuzzParseDeviceList(f *testing.F) {
	for _, s := range []string{
		"", "NoDevFiles", "2", "3,1,1", "0-2,6", "2-1", "a", "-1", "65535", "65536",
		"9223372036854775807", "9223372036854775806-9223372036854775807", "65000-65536",
		"0-1023", "0-1000,1001-2001", " 0 , 2-3 ", "0,,1",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, err := ParseDeviceList(s)
		if err != nil {
			if got != nil {
				t.Fatalf("%q: devices %v and error %v", s, got, err)
			}
			checkNamesEntry(t, s, err)
			return
		}
		if len(got) > maxJobDevices {
			t.Fatalf("%q: %d devices", s, len(got))
		}
		for i, d := range got {
			if d < 0 || d > maxDevice || i > 0 && d <= got[i-1] {
				t.Fatalf("%q: devices %v: not distinct, sorted and in 0..%d", s, got, maxDevice)
			}
		}
		checkCovered(t, s, got)
		if len(got) == 0 {
			return
		}
		again, err := ParseDeviceList(joinInts(got))
		if err != nil || !slices.Equal(again, got) {
			t.Fatalf("%q read as %v, which read back as %v (%v)", s, got, again, err)
		}
	})
}

// joinInts is ds as a device list, "0,1,2".
func joinInts(ds []int) string {
	parts := make([]string, len(ds))
	for i, d := range ds {
		parts[i] = strconv.Itoa(d)
	}
	return strings.Join(parts, ",")
}

// checkCovered holds that the devices are exactly those the entries of s
// name: every device lies in an entry's range, and each entry's ends are
// devices.
func checkCovered(t *testing.T, s string, got []int) {
	t.Helper()
	s = strings.TrimSpace(s)
	if s == "" || s == "NoDevFiles" {
		if got != nil {
			t.Fatalf("%q: devices %v", s, got)
		}
		return
	}
	type span struct{ lo, hi int }
	var spans []span
	for _, part := range strings.Split(s, ",") {
		lo, hi, isRange := strings.Cut(strings.TrimSpace(part), "-")
		a, _ := strconv.Atoi(lo)
		b := a
		if isRange {
			b, _ = strconv.Atoi(hi)
		}
		if _, ok := slices.BinarySearch(got, a); !ok {
			t.Fatalf("%q: entry %q's start %d not among %v", s, part, a, got)
		}
		if _, ok := slices.BinarySearch(got, b); !ok {
			t.Fatalf("%q: entry %q's end %d not among %v", s, part, b, got)
		}
		spans = append(spans, span{a, b})
	}
	for _, d := range got {
		if !slices.ContainsFunc(spans, func(sp span) bool { return sp.lo <= d && d <= sp.hi }) {
			t.Fatalf("%q: device %d in no entry", s, d)
		}
	}
}

// checkNamesEntry holds that an error about a list names the entry at
// fault, or says the list names too many devices.
func checkNamesEntry(t *testing.T, s string, err error) {
	t.Helper()
	msg := err.Error()
	if strings.Contains(msg, "more than") {
		return
	}
	for _, part := range strings.Split(strings.TrimSpace(s), ",") {
		if strings.Contains(msg, "entry "+strconv.Quote(strings.TrimSpace(part))) {
			return
		}
	}
	t.Fatalf("%q: error %q names no entry of the list", s, msg)
}
