package accounting_test

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fairway-hpc/fairway/accounting"
	"github.com/fairway-hpc/fairway/contrib/lab"
	"github.com/fairway-hpc/fairway/policy"
	"github.com/fairway-hpc/fairway/slurmctl"
)

var capture = flag.Bool("capture", false, "run jobs on the lab and rewrite testdata/ from real sacct and sacctmgr output (make record-accounting)")

// Fixture files, captured from the lab by TestCapture_LabFixtures.
const (
	sacctFixture    = "testdata/sacct-22.05.json"
	sacctmgrFixture = "testdata/sacctmgr-assoc.txt"
)

// TestCapture_LabFixtures runs a set of jobs covering the shapes ingest must
// handle (GPUs, shards, an array, two nodes, failure, signal, timeout,
// cancellation while running and while pending) on the lab, then saves
// `sacct --json` for exactly those jobs and the association list. It only
// runs with -capture; the fixtures it writes are what the parser tests read.
func TestCapture_LabFixtures(t *testing.T) {
	if !*capture {
		t.Skip("fixture capture: run `make record-accounting` on the lab")
	}
	e := lab.Get(t)
	tag := fmt.Sprintf("fwcap%d", time.Now().Unix()%100000)
	start := time.Now().Add(-time.Minute)
	sub := func(user, name string, args ...string) int64 {
		return e.Submit(t, user, append([]string{"-J", tag + "-" + name, "-p", e.Partition}, args...)...)
	}
	var ids []int64
	ids = append(ids,
		sub("alice", "gpu2", "--gres=gpu:2", "-t", "5", "--wrap", "sleep 2"),
		sub("bob", "shard-fail", "--gres=shard:3", "--wrap", "sleep 1; exit 3"),
		sub("carol", "array", "--array=0-2", "--gres=gpu:1", "--wrap", "sleep 1"),
		sub("carol", "twonode", "-N", "2", "--gres=gpu:1", "--wrap", "sleep 1"),
		sub("alice", "signal", "--wrap", "kill -9 $$"),
		sub("alice", "timeout", "-t", "1", "--wrap", "sleep 600"),
	)
	running := sub("bob", "cancel-running", "--wrap", "sleep 600")
	pending := sub("bob", "cancel-pending", "--begin=now+3600", "--wrap", "sleep 1")
	ids = append(ids, running, pending)

	e.WaitState(t, running, 2*time.Minute, "RUNNING")
	e.Run(t, "", "scancel", strconv.FormatInt(running, 10), strconv.FormatInt(pending, 10))
	for _, id := range ids {
		e.WaitState(t, id, 4*time.Minute, "COMPLETED", "FAILED", "TIMEOUT", "CANCELLED", "OUT_OF_MEMORY", "NODE_FAIL")
	}
	// The array's tasks finish on their own schedule; wait for all three.
	deadline := time.Now().Add(2 * time.Minute)
	for {
		out := e.Run(t, "", "sacct", "-n", "-X", "-P", "-o", "State", "-j", strconv.FormatInt(ids[2], 10))
		if n := strings.Count(out, "COMPLETED"); n == 3 || time.Now().After(deadline) {
			break
		}
		time.Sleep(time.Second)
	}

	list := make([]string, len(ids))
	for i, id := range ids {
		list[i] = strconv.FormatInt(id, 10)
	}
	out := e.Run(t, "", "sacct", "--json", "-S", start.Format("2006-01-02T15:04:05"), "-j", strings.Join(list, ","))
	doc, err := accounting.ParseSacctJSON("sacct", []byte(out))
	if err != nil {
		t.Fatalf("captured sacct output does not parse: %v", err)
	}
	states := map[policy.State]int{}
	for _, j := range doc.Jobs {
		states[j.State]++
	}
	for _, st := range []policy.State{policy.StateCompleted, policy.StateFailed, policy.StateTimeout, policy.StateCancelled} {
		if states[st] == 0 {
			t.Errorf("captured jobs have no %s job (states %v)", st, states)
		}
	}
	if len(doc.Jobs) != len(ids)+2 || len(doc.Bad) > 0 {
		t.Fatalf("captured %d jobs (%d bad), want %d", len(doc.Jobs), len(doc.Bad), len(ids)+2)
	}
	assoc := e.Run(t, "", "sacctmgr", slurmctl.SacctmgrAssocArgs...)
	if _, err := accounting.ParseAssociations("sacctmgr", []byte(assoc), e.Cluster); err != nil {
		t.Fatalf("captured sacctmgr output does not parse: %v", err)
	}
	for path, data := range map[string]string{sacctFixture: out, sacctmgrFixture: assoc} {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("wrote %s", path)
	}
}
