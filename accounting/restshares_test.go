package accounting_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/fairway-hpc/fairway/accounting"
	"github.com/fairway-hpc/fairway/internal/shareddata"
)

// TestParseRESTShares_Captured reads the captured /slurm/<v>/shares
// answers of Slurm 24.11.7 and 26.05.3 (every version) and gets the tree
// `sacctmgr show associations` printed on the same clusters (physics 60:
// alice, bob; chem 40: carol; root's user root).
func TestParseRESTShares_Captured(t *testing.T) {
	root := shareddata.Dir(t, "data", "slurmrestd")
	want := []accounting.ShareNode{
		{Account: "root", User: "root", Shares: 1},
		{Account: "chem", Shares: 40},
		{Account: "chem", User: "carol", Shares: 1},
		{Account: "physics", Shares: 60},
		{Account: "physics", User: "alice", Shares: 1},
		{Account: "physics", User: "bob", Shares: 1},
	}
	byKey := func(ns []accounting.ShareNode) map[[2]string]accounting.ShareNode {
		m := map[[2]string]accounting.ShareNode{}
		for _, n := range ns {
			m[[2]string{n.Account, n.User}] = n
		}
		return m
	}
	for rel, c := range map[string]struct {
		cluster  string
		versions []string
	}{
		"slurm-24.11.7": {"fwlab24", []string{"v0.0.40", "v0.0.41", "v0.0.42"}},
		"slurm-26.05.3": {"fwlab", []string{"v0.0.42", "v0.0.43", "v0.0.44", "v0.0.45"}},
	} {
		// The same tree as sacctmgr printed at the same time on that cluster.
		sacctmgr, err := os.ReadFile(filepath.Join(root, rel, "cli", "sacctmgr-show-associations.txt"))
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range c.versions {
			body, err := os.ReadFile(filepath.Join(root, rel, v, "shares.json"))
			if err != nil {
				t.Fatal(err)
			}
			got, err := accounting.ParseRESTShares(rel+"/"+v, body, c.cluster)
			if err != nil {
				t.Fatalf("%s %s: %v", rel, v, err)
			}
			if diff := cmp.Diff(byKey(want), byKey(got)); diff != "" {
				t.Errorf("%s %s (-want +got):\n%s", rel, v, diff)
			}
			fromSacctmgr, err := accounting.ParseAssociations("sacctmgr", sacctmgr, c.cluster)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(byKey(fromSacctmgr), byKey(got)); diff != "" {
				t.Errorf("%s %s: slurmrestd and sacctmgr disagree (-sacctmgr +slurmrestd):\n%s", rel, v, diff)
			}
			if _, err := accounting.ParseRESTShares(rel+"/"+v, body, "other"); err == nil {
				t.Errorf("%s %s: shares of a cluster the answer does not hold were accepted", rel, v)
			}
		}
	}
}
