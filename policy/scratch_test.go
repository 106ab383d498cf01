package policy

import "testing"

// TestResize_GrowsAsAppend follows a queue growing one job at a time to
// 10,000 jobs, then shrinking and growing again, with one resized buffer
// (as the ranking's entries follow a big machine's queue), and checks that
// each result has the asked length, that an array large enough is reused,
// and that new arrays are made a few times (append's growth), not at
// every job: the buffers of such a run were a quarter of its allocation.
func TestResize_GrowsAsAppend(t *testing.T) {
	var buf []int
	arrays := 0
	sizes := []int{}
	for n := 1; n <= 10000; n++ {
		sizes = append(sizes, n)
	}
	for n := 9000; n >= 1; n -= 7 {
		sizes = append(sizes, n)
	}
	for n := 1; n <= 12000; n += 3 {
		sizes = append(sizes, n)
	}
	for _, n := range sizes {
		prev := buf
		buf = resize(buf, n)
		if len(buf) != n {
			t.Fatalf("resize to %d: length %d", n, len(buf))
		}
		if cap(prev) > 0 && &buf[:1][0] != &prev[:1][0] {
			arrays++
		}
		if cap(prev) >= n && &buf[:1][0] != &prev[:1][0] {
			t.Fatalf("resize to %d made a new array where the old one (capacity %d) held it", n, cap(prev))
		}
	}
	if arrays > 40 {
		t.Fatalf("%d arrays made for %d resizes up to 12,000: want append's growth, a few dozen at most", arrays, len(sizes))
	}
}
