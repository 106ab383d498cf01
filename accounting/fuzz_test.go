package accounting

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fairway-hpc/fairway/internal/jsonfix"
	"github.com/fairway-hpc/fairway/internal/shareddata"
)

// FuzzParseSacctJSON feeds `sacct --json` documents to the parser. Seeds
// are real: each job object of the 22.05 recording in testdata/ and, when
// the shared captures are present, of 24.11's and 26.05's sacct --json and
// slurmdb answers, each alone in a document (small inputs mutate faster
// than whole captures), plus the captures' error and empty answers.
//
//	go test -run '^$' -fuzz '^FuzzParseSacctJSON$' -fuzztime 10m -parallel 1 ./accounting
func FuzzParseSacctJSON(f *testing.F) {
	paths := []string{filepath.Join("testdata", "sacct-22.05.json")}
	if dir, err := shareddata.CapturesDir(); err == nil {
		for _, pat := range []string{"slurm-*/cli/sacct.json", "slurm-*/v0.0.*/slurmdb.job-*.json",
			"slurm-*/v0.0.*/slurmdb.jobs.nothing-found*.json", "slurm-*/v0.0.*/slurmdb.err.*.json"} {
			m, _ := filepath.Glob(filepath.Join(dir, pat))
			paths = append(paths, m...)
		}
	}
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		var doc struct {
			Jobs []json.RawMessage `json:"jobs"`
		}
		if err := json.Unmarshal(b, &doc); err != nil || len(doc.Jobs) == 0 || len(b) < 4096 {
			f.Add(b)
			continue
		}
		for i, j := range doc.Jobs {
			if i == 8 {
				break
			}
			f.Add([]byte(`{"jobs":[` + string(j) + `]}`))
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		doc, err := ParseSacctJSON("fuzz", data)
		if err != nil {
			return // a whole document refused, with its reason
		}
		if len(doc.Jobs) != len(doc.Where) {
			t.Fatalf("%d jobs but %d locations", len(doc.Jobs), len(doc.Where))
		}
		for _, e := range doc.Bad {
			if !errors.Is(e, ErrMalformed) {
				t.Fatalf("bad record %v does not wrap ErrMalformed", e)
			}
		}
		for _, j := range doc.Jobs {
			if j.ID <= 0 || j.Cluster == "" || j.Submit.IsZero() {
				t.Fatalf("job without id, cluster or submit time: %+v", j)
			}
			if j.CPUs < 0 || j.Nodes < 0 || j.GPUs < 0 || j.Shards < 0 || j.MemoryMB < 0 || j.TimeLimit < 0 || j.ArrayTask < -1 {
				t.Fatalf("job %d: impossible values: %+v", j.ID, j)
			}
		}
	})
}

// TestParseSacctJSON_HugeLimit: a time limit just under NO_VAL minutes
// once wrapped time.Duration into a negative limit; it is a bad record now.
func TestParseSacctJSON_HugeLimit(t *testing.T) {
	doc, err := ParseSacctJSON("t", []byte(`{"jobs":[{"job_id":7,"cluster":"c","time":{"submission":1700000000,"limit":4294967293},"state":{"current":"COMPLETED"}}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if len(doc.Jobs) != 0 || len(doc.Bad) != 1 {
		t.Fatalf("jobs %+v, bad %v; want one bad record", doc.Jobs, doc.Bad)
	}
}

// sharesSeeds returns seeds from the captured /slurm/<v>/shares answers,
// with the cluster each was taken on: each association alone in a
// document and all of them in one, with their 7 kB "tres" usage lists
// (which ParseRESTShares does not read) left out, since the fuzzer spends
// minutes minimizing a 46 kB input; v0.0.40's and v0.0.41's bare Infinity
// kept as captured. The captured error answers (an "errors" list, a plain
// text body) are seeds too. Without the shared captures there are none.
func sharesSeeds(f *testing.F) (bodies [][]byte, clusters []string) {
	dir, err := shareddata.CapturesDir()
	if err != nil {
		return nil, nil
	}
	for rel, cluster := range map[string]string{"slurm-24.11.7": "fwlab24", "slurm-26.05.3": "fwlab"} {
		errs, _ := filepath.Glob(filepath.Join(dir, rel, "v0.0.*", "err.jobs-*.json"))
		for _, p := range errs {
			b, err := os.ReadFile(p)
			if err != nil {
				f.Fatal(err)
			}
			bodies, clusters = append(bodies, b), append(clusters, cluster)
		}
		paths, _ := filepath.Glob(filepath.Join(dir, rel, "v0.0.*", "shares.json"))
		for _, p := range paths {
			b, err := os.ReadFile(p)
			if err != nil {
				f.Fatal(err)
			}
			var doc struct {
				Shares struct {
					Shares []map[string]json.RawMessage `json:"shares"`
				} `json:"shares"`
			}
			if err := json.Unmarshal(jsonfix.NonFinite(b), &doc); err != nil {
				f.Fatalf("%s: %v", p, err)
			}
			var all []string
			for _, s := range doc.Shares.Shares {
				delete(s, "tres")
				obj, err := json.Marshal(s)
				if err != nil {
					f.Fatal(err)
				}
				if bytes.Contains(b, []byte(`"level": Infinity`)) {
					obj = bytes.ReplaceAll(obj, []byte(`"level":null`), []byte(`"level":Infinity`))
				}
				all = append(all, string(obj))
				bodies = append(bodies, []byte(`{"shares":{"shares":[`+string(obj)+`]}}`))
				clusters = append(clusters, cluster)
			}
			bodies = append(bodies, []byte(`{"shares":{"shares":[`+strings.Join(all, ",")+`]}}`))
			clusters = append(clusters, cluster)
		}
	}
	return bodies, clusters
}

// checkShareTree checks what every share reader promises of a tree it
// accepts: what SyncShares will store (each node once, a finite share of 0
// or more), an account named, root left out as a parent ("" instead), and
// a user's association under no parent.
func checkShareTree(t *testing.T, nodes []ShareNode) {
	if err := checkShareNodes(nodes); err != nil {
		t.Fatalf("accepted tree SyncShares refuses: %v", err)
	}
	for _, n := range nodes {
		if n.Account == "" || n.Parent == "root" || (n.User != "" && n.Parent != "") {
			t.Fatalf("bad node %+v", n)
		}
		if math.IsNaN(n.Shares) || math.IsInf(n.Shares, 0) {
			t.Fatalf("node %+v: share not finite", n)
		}
	}
}

// checkNamedErr checks what the text readers promise of a failure: it
// names the input and says what was wrong (a malformed record, or a line
// too long to read).
func checkNamedErr(t *testing.T, name string, err error) {
	if !strings.Contains(err.Error(), name) {
		t.Fatalf("error %q does not name the input %q", err, name)
	}
	if !errors.Is(err, ErrMalformed) && !errors.Is(err, bufio.ErrTooLong) {
		t.Fatalf("error %v wraps neither ErrMalformed nor bufio.ErrTooLong", err)
	}
}

// FuzzParseRESTShares feeds GET /slurm/<v>/shares answers and a cluster
// name to ParseRESTShares. Seeds are the captured answers of 24.11.7 and
// 26.05.3 (every version they serve; v0.0.40 and v0.0.41 with their bare
// Infinity), as sharesSeeds cuts them, and the captured error answers.
//
//	go test -run '^$' -fuzz '^FuzzParseRESTShares$' -fuzztime 10m -parallel 1 ./accounting
func FuzzParseRESTShares(f *testing.F) {
	bodies, clusters := sharesSeeds(f)
	for i, b := range bodies {
		f.Add(b, clusters[i])
	}
	f.Fuzz(func(t *testing.T, body []byte, cluster string) {
		nodes, err := ParseRESTShares("fuzz.json", body, cluster)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "fuzz.json: ") {
				t.Fatalf("error %q does not start with the input's name", err)
			}
			return
		}
		if len(nodes) == 0 {
			t.Fatal("no nodes and no error")
		}
		checkShareTree(t, nodes)
	})
}

// FuzzParseAssociations feeds `sacctmgr -nP show associations
// format=cluster,account,user,parentname,fairshare` output and a cluster
// name to ParseAssociations. Seeds are the 22.05 recording in testdata/
// and, when the shared captures are present, 24.11's and 26.05's
// association lists.
//
//	go test -run '^$' -fuzz '^FuzzParseAssociations$' -fuzztime 10m -parallel 1 ./accounting
func FuzzParseAssociations(f *testing.F) {
	add := func(path, cluster string) {
		b, err := os.ReadFile(path)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b, cluster)
		f.Add(b[:len(b)*2/3], cluster) // cut mid-line
	}
	add(filepath.Join("testdata", "sacctmgr-assoc.txt"), "fairwaylab")
	if dir, err := shareddata.CapturesDir(); err == nil {
		add(filepath.Join(dir, "slurm-24.11.7", "cli", "sacctmgr-show-associations.txt"), "fwlab24")
		add(filepath.Join(dir, "slurm-26.05.3", "cli", "sacctmgr-show-associations.txt"), "fwlab")
	}
	f.Fuzz(func(t *testing.T, data []byte, cluster string) {
		nodes, err := ParseAssociations("fuzz-sacctmgr", data, cluster)
		if err != nil {
			checkNamedErr(t, "fuzz-sacctmgr", err)
			return
		}
		checkShareTree(t, nodes)
	})
}

// FuzzParseSharesConfig feeds Fairway's shares configuration to
// ParseSharesConfig. The format is Fairway's own, so the seeds are the
// configurations the package's tests read, and a sacctmgr list (text of
// another shape).
//
//	go test -run '^$' -fuzz '^FuzzParseSharesConfig$' -fuzztime 10m -parallel 1 ./accounting
func FuzzParseSharesConfig(f *testing.F) {
	for _, s := range []string{
		"# shares\nphysics 60\nphysics/hep 10   # sub-account\nphysics/hep:alice 2\nchem:carol 0\n\n",
		"physics 60\nchem 40\nphysics:alice 3\n",
		"physics 60\nphysics 50\n",
	} {
		f.Add([]byte(s))
	}
	if b, err := os.ReadFile(filepath.Join("testdata", "sacctmgr-assoc.txt")); err == nil {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		nodes, err := ParseSharesConfig("fuzz.conf", bytes.NewReader(data))
		if err != nil {
			checkNamedErr(t, "fuzz.conf", err)
			return
		}
		checkShareTree(t, nodes)
		for _, n := range nodes {
			// ':' and '/' separate names in the file; none is part of one
			if strings.ContainsAny(n.Account+n.User+n.Parent, ":/") {
				t.Fatalf("node %+v: a separator kept in a name", n)
			}
		}
	})
}

// FuzzParseSacctUsage feeds `sacct -P --format=JobIDRaw,ElapsedRaw,
// TotalCPU,MaxRSS` output to ParseSacctUsage. No capture of it is kept
// (the lab test reads it live), so the seeds are the spellings
// TestParseSacctUsage reads, sacct documents.
//
//	go test -run '^$' -fuzz '^FuzzParseSacctUsage$' -fuzztime 10m -parallel 1 ./accounting
func FuzzParseSacctUsage(f *testing.F) {
	for _, s := range []string{
		"7|100|00:50.000|\n7.batch|100|00:30.500|1024K\n7.0|90|01:00|2G\n7.extern|100|00:00:00|0\n8|3600|1-00:00:00|\n9|10|00:00:00|\n",
		"1|1|1:2:3:4|\n", "1|1|00:01|12Q\n", "1|2\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		use, err := ParseSacctUsage(data)
		if err != nil {
			checkNamedErr(t, "sacct usage", err)
			return
		}
		for id, u := range use {
			if id <= 0 {
				t.Fatalf("job id %d", id)
			}
			if u.CPUsUsed != -1 && !(u.CPUsUsed >= 0 && !math.IsInf(u.CPUsUsed, 0)) {
				t.Fatalf("job %d: CPUs used %g: want -1 or a finite number, 0 or more", id, u.CPUsUsed)
			}
			if u.MemUsedMB < 0 {
				t.Fatalf("job %d: memory used %d MB", id, u.MemUsedMB)
			}
		}
	})
}
