package rewrite

import (
	"fmt"
	"testing"
	"time"
)

// TestCapTable: no user gets more than the per-user cap, and when the
// table would exceed its bytes the users with the most rules lose rules
// first; a user with few keeps them all. Unbounded, one user with many job
// names made the table slurmctld reads on every submission grow without
// limit.
func TestCapTable(t *testing.T) {
	var rules []ShareRule
	add := func(user string, n int) {
		for i := range n {
			rules = append(rules, ShareRule{User: user, Name: fmt.Sprintf("job-%04d", i), Shards: 2, Reason: "r"})
		}
	}
	add("alice", 2)
	add("bob", 500)
	add("carol", 40)
	kept, dropped := CapTable(rules, 100, 1<<20)
	count := func(rs []ShareRule) map[string]int {
		m := map[string]int{}
		for _, r := range rs {
			m[r.User]++
		}
		return m
	}
	if got := count(kept); got["alice"] != 2 || got["bob"] != 100 || got["carol"] != 40 || dropped != 400 {
		t.Errorf("per-user cap: kept %v, dropped %d; want alice 2, bob 100, carol 40, 400 dropped", got, dropped)
	}
	line := len(tableRuleLines(rules[0]))
	kept, dropped = CapTable(rules, 100, 30*line) // room for 30 rules
	if got := count(kept); got["alice"] != 2 || got["bob"] != 14 || got["carol"] != 14 || dropped != 512 {
		t.Errorf("bytes cap: kept %v, dropped %d; want alice 2, bob 14, carol 14", got, dropped)
	}
	if n := len(RenderTable(time.Unix(0, 0), time.Minute, nil, kept)); n > 30*line+200 {
		t.Errorf("capped table is %d bytes", n)
	}
	if kept, dropped := CapTable(nil, 100, 10); len(kept) != 0 || dropped != 0 {
		t.Errorf("no rules: %v %d", kept, dropped)
	}
}

// TestTableSafe: a name with any control character stays out of the table
// job_submit.lua reads: the field separators, and escape sequences that
// would reach slurmctld's log.
func TestTableSafe(t *testing.T) {
	for s, want := range map[string]bool{
		"train-resnet": true, "résumé.sh": true, "a b": true,
		"": false, "a\tb": false, "a\nb": false, "a\rb": false, "x\x1b]0;owned\x07": false, "a\x7fb": false, "a\u0085b": false,
	} {
		if got := TableSafe(s); got != want {
			t.Errorf("TableSafe(%q) = %v, want %v", s, got, want)
		}
	}
}
