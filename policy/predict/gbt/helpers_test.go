package gbt

import "testing"

// TestTakeHelpers: helpers are taken without waiting, never more than the
// process has, and given back.
func TestTakeHelpers(t *testing.T) {
	total := cap(helpers)
	a, releaseA := TakeHelpers(total + 5)
	if a != total {
		t.Fatalf("took %d helpers of %d free", a, total)
	}
	if b, releaseB := TakeHelpers(3); b != 0 {
		releaseB()
		t.Fatalf("took %d helpers while all were held", b)
	}
	releaseA()
	if len(helpers) != 0 {
		t.Fatalf("%d helpers still held after release", len(helpers))
	}
	if n, release := TakeHelpers(-1); n != 0 {
		release()
		t.Fatalf("want -1: took %d", n)
	}
}
