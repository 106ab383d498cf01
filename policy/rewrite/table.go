package rewrite

import (
	"bytes"
	"fmt"
	"strings"
	"time"
	"unicode"
)

// TableSafe reports whether a user or job name can be a field of the
// table: not empty, and no control character: tab, newline and carriage
// return separate the fields, and an escape sequence would reach whoever
// reads the file or slurmctld's log, where job_submit.lua logs the rules
// it applies.
func TableSafe(s string) bool {
	return s != "" && strings.IndexFunc(s, unicode.IsControl) < 0
}

// RenderTable renders the table job_submit.lua reads (its format
// is documented at the top of contrib/slurm/job_submit.lua).
func RenderTable(now time.Time, maxAge time.Duration, partitions []string, rules []ShareRule) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "# Written by fairway serve for contrib/slurm/job_submit.lua at %s; do not edit.\n", now.UTC().Format(time.RFC3339))
	fmt.Fprintf(&b, "fairway-rewrite\t1\ngenerated\t%d\nmax_age\t%d\n", now.Unix(), int64(maxAge.Seconds()))
	for _, p := range partitions {
		if TableSafe(p) {
			fmt.Fprintf(&b, "partition\t%s\n", p)
		}
	}
	for _, r := range rules {
		b.WriteString(tableRuleLines(r))
	}
	return b.Bytes()
}

// tableRuleLines is one rule's lines in the table: its reason as a
// comment, then the record.
func tableRuleLines(r ShareRule) string {
	return fmt.Sprintf("# %s\nshard\t%s\t%d\t%s\n", strings.NewReplacer("\n", " ", "\r", " ").Replace(r.Reason), r.User, r.Shards, r.Name)
}

// CapTable keeps at most perUser of each user's rules (the first in
// rules' order) and, when their lines exceed maxBytes, lowers that limit
// until they fit: the users with the most rules lose rules first and a user
// with few keeps all of them. It returns the kept rules, in rules' order,
// and how many were dropped.
func CapTable(rules []ShareRule, perUser, maxBytes int) ([]ShareRule, int) {
	rank := make([]int, len(rules)) // a rule's place among its user's rules
	size := make([]int, len(rules))
	seen := map[string]int{}
	for i, r := range rules {
		rank[i] = seen[r.User]
		seen[r.User]++
		size[i] = len(tableRuleLines(r))
	}
	fits := func(limit int) bool {
		total := 0
		for i := range rules {
			if rank[i] < limit {
				total += size[i]
			}
		}
		return total <= maxBytes
	}
	limit := perUser
	if !fits(limit) {
		lo, hi := 0, limit // fits(lo) holds (nothing kept), fits(hi) does not
		for hi-lo > 1 {
			if mid := (lo + hi) / 2; fits(mid) {
				lo = mid
			} else {
				hi = mid
			}
		}
		limit = lo
	}
	kept := make([]ShareRule, 0, len(rules))
	for i, r := range rules {
		if rank[i] < limit {
			kept = append(kept, r)
		}
	}
	return kept, len(rules) - len(kept)
}
