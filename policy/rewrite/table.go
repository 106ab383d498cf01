package rewrite

import (
	"bytes"
	"fmt"
	"strings"
	"time"
)

// TableSafe reports whether a user or job name can be a field of the
// table: no tab, newline or carriage return (the field separators).
func TableSafe(s string) bool { return s != "" && !strings.ContainsAny(s, "\t\n\r") }

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
		fmt.Fprintf(&b, "# %s\nshard\t%s\t%d\t%s\n", strings.NewReplacer("\n", " ", "\r", " ").Replace(r.Reason), r.User, r.Shards, r.Name)
	}
	return b.Bytes()
}
