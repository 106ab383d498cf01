package accounting_test

import (
	"strings"
	"testing"

	"github.com/fairway-hpc/fairway/accounting"
	"github.com/fairway-hpc/fairway/internal/texttest"
)

func TestIngestResult_WriteText(t *testing.T) {
	for _, tc := range []struct {
		name       string
		r          accounting.IngestResult
		want, none []string
	}{
		{"trace file", accounting.IngestResult{From: "swf", File: "KTH.swf.gz", Cluster: "kth", Read: 10, Inserted: 8, Duplicates: 2, Seconds: 0.371,
			LeftOut: map[string]int{}},
			[]string{"source      swf\nfile        KTH.swf.gz\ncluster     kth\nread        10\ninserted    8\n", "duplicates  2\n",
				"seconds     0.37\n", "left out: none\n"},
			[]string{"via", "window", "rejected:"}},
		{"slurmdbd with rejects", accounting.IngestResult{From: "slurmdbd", Via: "sacct", Cluster: "lab", Window: []string{"2026-11-01T00:00:00Z", "2026-11-02T00:00:00Z"},
			Read: 5, Rejected: 3, Rejects: []string{"sacct:1: job 7: no state", "sacct:2: job 8: no state"}},
			[]string{"source      slurmdbd\nvia         sacct\n", "window      2026-11-01T00:00:00Z .. 2026-11-02T00:00:00Z\n",
				"rejected    3\n", "rejected: sacct:1: job 7: no state\nrejected: sacct:2: job 8: no state\nrejected: 1 more not listed\n"},
			[]string{"left out", "file "}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b strings.Builder
			if err := tc.r.WriteText(&b); err != nil {
				t.Fatal(err)
			}
			texttest.Check(t, b.String(), tc.want, tc.none)
		})
	}
}
