package main

import (
	"strings"
	"testing"
)

func TestWhatMovesIt_NamesOnlyThePolicysOwnLevers(t *testing.T) {
	for _, tc := range []struct {
		policy      string
		want, never string
	}{
		{"fair-sjf", "fair-share usage decaying", "starvation guard"},
		{"fair-qssf", "starvation guard (24 h)", "overtakes fresher jobs"},
		{"fifo", "score parts above", "starvation guard"},
	} {
		got := whatMovesIt(tc.policy)
		if !strings.Contains(got, tc.want) || strings.Contains(got, tc.never) {
			t.Errorf("%s: %q, want it to say %q and never %q", tc.policy, got, tc.want, tc.never)
		}
	}
}
