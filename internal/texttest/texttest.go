// Package texttest checks text renderings in tests: which pieces a
// rendering must hold and which it must not, so that a table test of a
// WriteText names only what each case is about.
package texttest

import (
	"strings"
	"testing"
)

// Check fails t for each of want that got lacks and each of none it holds,
// quoting got.
func Check(t testing.TB, got string, want, none []string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(got, w) {
			t.Errorf("no %q in:\n%s", w, got)
		}
	}
	for _, n := range none {
		if strings.Contains(got, n) {
			t.Errorf("%q in:\n%s", n, got)
		}
	}
}
