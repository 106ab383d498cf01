package serve

import (
	"bytes"
	"context"
	"encoding/gob"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fairway-hpc/fairway/accounting"
	"github.com/fairway-hpc/fairway/policy"
	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5/pgconn"
)

// refusedBatch is a cycle's worth of records, 26 in all: two finished
// jobs, a prediction, decisions for jobs 1 to 20 and cycle rows 1 to 3.
func refusedBatch() batch {
	var b batch
	for id := int64(901); id <= 902; id++ {
		b.Finished = append(b.Finished, policy.Job{Cluster: "c", ID: id, ArrayTask: -1, Submit: t0, Start: t0, End: t0.Add(time.Minute),
			State: policy.StateCompleted})
	}
	b.Predictions = []accounting.Prediction{{Cluster: "c", JobID: 1, ArrayTask: -1, Submit: t0, Predictor: "fairway", At: t0, Run: time.Hour}}
	for id := int64(1); id <= 20; id++ {
		b.Decisions = append(b.Decisions, accounting.Decision{Cluster: "c", At: t0, Cycle: 1, JobID: id, Policy: "fifo", Rank: int(id),
			Field: "site_factor", Value: 100 - id})
	}
	for c := int64(1); c <= 3; c++ {
		b.Cycles = append(b.Cycles, accounting.Cycle{Cluster: "c", Cycle: c, Started: t0.Add(time.Duration(c) * 30 * time.Second), Policy: "fifo"})
	}
	return b
}

// refuseDecision7AndCycle2 refuses decision 7 the way PostgreSQL refuses
// text that is not UTF-8, and cycle row 2 the way the Store refuses an
// invalid record.
func refuseDecision7AndCycle2(rec any) error {
	switch r := rec.(type) {
	case accounting.Decision:
		if r.JobID == 7 {
			return fmt.Errorf("record 1 decisions: %w", &pgconn.PgError{Code: "22021", Message: `invalid byte sequence for encoding "UTF8": 0xff`})
		}
	case accounting.Cycle:
		if r.Cycle == 2 {
			return fmt.Errorf("cycle 2: cluster and start time are required: %w", accounting.ErrInvalidRecord)
		}
	}
	return nil
}

func decisionIDs(ds []accounting.Decision) []int64 {
	var out []int64
	for _, d := range ds {
		out = append(out, d.JobID)
	}
	return out
}

func cycleIDs(cs []accounting.Cycle) []int64 {
	var out []int64
	for _, c := range cs {
		out = append(out, c.Cycle)
	}
	return out
}

func idsExcept(n, skip int64) []int64 {
	var out []int64
	for id := int64(1); id <= n; id++ {
		if id != skip {
			out = append(out, id)
		}
	}
	return out
}

// writeSpill writes b to dir as a spill file that sorts first.
func writeSpill(t *testing.T, dir string, b batch) string {
	t.Helper()
	var buf bytes.Buffer
	if err := gob.NewEncoder(&buf).Encode(&b); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "00000000000000000001-000001"+spillSuffix)
	if err := os.WriteFile(p, buf.Bytes(), 0o640); err != nil {
		t.Fatal(err)
	}
	return p
}

// refusedCount is fairway_records_refused_total{kind=kind} in m.
func refusedCount(t *testing.T, m *Metrics, kind string) float64 {
	t.Helper()
	fams, err := m.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fams {
		if f.GetName() != "fairway_records_refused_total" {
			continue
		}
		for _, mt := range f.GetMetric() {
			for _, l := range mt.GetLabel() {
				if l.GetName() == "kind" && l.GetValue() == kind {
					return mt.GetCounter().GetValue()
				}
			}
		}
	}
	t.Fatalf("no fairway_records_refused_total{kind=%q}", kind)
	return 0
}

// TestRunner_RefusedRecordsSetAsideRestShipped: one decision among twenty
// and one cycle row that the database refuses for what they hold no
// longer hold up every record behind them. The others reach the database
// in order, the refused ones go to a file of their own that the next
// flush leaves alone, the metric counts them, and the database counts as
// up. Renamed back to a spill, once the cause is fixed, the file ships.
func TestRunner_RefusedRecordsSetAsideRestShipped(t *testing.T) {
	for _, spilled := range []bool{false, true} {
		t.Run(fmt.Sprintf("spilled=%v", spilled), func(t *testing.T) {
			dir := t.TempDir()
			g := newRig(t, Config{BufferDir: dir}, false)
			g.store.refuse = refuseDecision7AndCycle2
			if spilled {
				writeSpill(t, dir, refusedBatch())
			} else {
				g.r.buffer.mem = refusedBatch()
			}
			ctx := context.Background()
			if !g.r.flush(ctx, quietLogger()) {
				t.Fatalf("flush failed: %v", g.r.buffer.lastErr)
			}
			if diff := cmp.Diff(idsExcept(20, 7), decisionIDs(g.store.decisions)); diff != "" {
				t.Errorf("decisions stored (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff([]int64{1, 3}, cycleIDs(g.store.cycles)); diff != "" {
				t.Errorf("cycle rows stored (-want +got):\n%s", diff)
			}
			if len(g.store.finished) != 2 || len(g.store.preds) != 1 {
				t.Errorf("%d finished jobs and %d predictions stored, want 2 and 1", len(g.store.finished), len(g.store.preds))
			}
			aside, _ := filepath.Glob(filepath.Join(dir, "*.fairway-refused"))
			if len(aside) != 1 {
				t.Fatalf("refused files %v, want one", aside)
			}
			got, err := readSpill(aside[0])
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff([]int64{7}, decisionIDs(got.Decisions)); diff != "" || got.len() != 2 {
				t.Errorf("refused file holds %d records, decisions (-want +got):\n%s", got.len(), diff)
			}
			if diff := cmp.Diff([]int64{2}, cycleIDs(got.Cycles)); diff != "" {
				t.Errorf("refused file, cycle rows (-want +got):\n%s", diff)
			}
			if left, _ := filepath.Glob(filepath.Join(dir, "*"+spillSuffix)); len(left) != 0 || g.r.buffer.len() != 0 {
				t.Errorf("%d records still buffered, spill files %v", g.r.buffer.len(), left)
			}

			// The next flush does not send them again.
			calls, stored := g.store.calls, len(g.store.decisions)+len(g.store.cycles)
			if !g.r.flush(ctx, quietLogger()) || g.store.calls != calls || len(g.store.decisions)+len(g.store.cycles) != stored {
				t.Errorf("the next flush made %d calls, stored %d records more", g.store.calls-calls, len(g.store.decisions)+len(g.store.cycles)-stored)
			}
			for _, kind := range []string{"decision", "cycle"} {
				if got := refusedCount(t, g.r.metrics, kind); got != 1 {
					t.Errorf("fairway_records_refused_total{kind=%q} = %v, want 1", kind, got)
				}
			}
			if got := refusedCount(t, g.r.metrics, "finished"); got != 0 {
				t.Errorf("fairway_records_refused_total{kind=finished} = %v, want 0", got)
			}
			if got := gauge(t, g.r.metrics, "fairway_database_up"); got != 1 {
				t.Errorf("fairway_database_up = %v, want 1", got)
			}

			// The admin fixed the cause and renames the file back.
			g.store.refuse = nil
			back := strings.TrimSuffix(aside[0], ".fairway-refused") + spillSuffix
			if err := os.Rename(aside[0], back); err != nil {
				t.Fatal(err)
			}
			if !g.r.flush(ctx, quietLogger()) {
				t.Fatalf("flush of the renamed file failed: %v", g.r.buffer.lastErr)
			}
			if n := len(g.store.decisions); n != 20 || g.store.decisions[n-1].JobID != 7 {
				t.Errorf("after renaming back: decisions %v, want decision 7 last of 20", decisionIDs(g.store.decisions))
			}
			if diff := cmp.Diff([]int64{1, 3, 2}, cycleIDs(g.store.cycles)); diff != "" {
				t.Errorf("after renaming back, cycle rows (-want +got):\n%s", diff)
			}
			if left, _ := filepath.Glob(filepath.Join(dir, "*")); len(left) != 0 {
				t.Errorf("files left in the buffer directory: %v", left)
			}
			if got := gauge(t, g.r.metrics, "fairway_buffer_spilled_records"); got != 0 {
				t.Errorf("fairway_buffer_spilled_records = %v, want 0", got)
			}
		})
	}
}

// TestRunner_ConnectionErrorSetsNothingAside: an outage is not a refusal,
// whether the database is down from the start or goes down while a
// refused call is being split: nothing more is set aside, everything not
// stored waits for the next flush, and then each record reaches the
// database once.
func TestRunner_ConnectionErrorSetsNothingAside(t *testing.T) {
	for _, tc := range []struct {
		name          string
		refuse        func(any) error
		downAfter     int  // calls; 0: down from the start
		wantDecisions int  // stored before the outage
		wantKept      int  // records kept for the next flush
		wantRefused   bool // decision 7 set aside in the end
	}{
		{name: "down", wantKept: 26},
		// Calls: finished jobs, predictions, all decisions (refused),
		// decisions 1-10 (refused), 1-5 (stored), then down.
		{name: "down while splitting", refuse: refuseDecision7AndCycle2, downAfter: 5, wantDecisions: 5, wantKept: 18, wantRefused: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			g := newRig(t, Config{BufferDir: dir}, false)
			g.store.refuse, g.store.downAfter, g.store.down = tc.refuse, tc.downAfter, tc.downAfter == 0
			g.r.buffer.mem = refusedBatch()
			ctx := context.Background()
			if g.r.flush(ctx, quietLogger()) {
				t.Fatal("flush succeeded with the database down")
			}
			if aside, _ := filepath.Glob(filepath.Join(dir, "*.fairway-refused")); len(aside) != 0 {
				t.Errorf("set aside during an outage: %v", aside)
			}
			if got, want := g.r.buffer.len(), tc.wantKept; got != want {
				t.Errorf("%d records kept, want %d", got, want)
			}
			if len(g.store.decisions) != tc.wantDecisions {
				t.Errorf("%d decisions stored before the outage, want %d", len(g.store.decisions), tc.wantDecisions)
			}
			if got := gauge(t, g.r.metrics, "fairway_database_up"); got != 0 {
				t.Errorf("fairway_database_up = %v, want 0", got)
			}
			if got := refusedCount(t, g.r.metrics, "decision"); got != 0 {
				t.Errorf("fairway_records_refused_total{kind=decision} = %v during the outage, want 0", got)
			}

			g.store.down, g.store.downAfter = false, 0
			if !g.r.flush(ctx, quietLogger()) {
				t.Fatalf("flush failed with the database back: %v", g.r.buffer.lastErr)
			}
			wantIDs, wantCycles := idsExcept(20, 7), []int64{1, 3}
			if !tc.wantRefused {
				wantIDs, wantCycles = idsExcept(20, 0), []int64{1, 2, 3}
			}
			if diff := cmp.Diff(wantIDs, decisionIDs(g.store.decisions)); diff != "" {
				t.Errorf("decisions stored (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(wantCycles, cycleIDs(g.store.cycles)); diff != "" {
				t.Errorf("cycle rows stored (-want +got):\n%s", diff)
			}
			aside, _ := filepath.Glob(filepath.Join(dir, "*.fairway-refused"))
			if tc.wantRefused != (len(aside) == 1) || g.r.buffer.len() != 0 {
				t.Errorf("refused files %v, %d records buffered", aside, g.r.buffer.len())
			}
		})
	}
}

// TestRunner_RefusedWithoutBufferDirLogged: with nowhere to set a refused
// record aside, it is logged in full, saying it is not stored, and the
// rest ships.
func TestRunner_RefusedWithoutBufferDirLogged(t *testing.T) {
	g := newRig(t, Config{}, false)
	g.store.refuse = refuseDecision7AndCycle2
	g.r.buffer.mem = refusedBatch()
	var logs bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	if !g.r.flush(context.Background(), log) {
		t.Fatalf("flush failed: %v", g.r.buffer.lastErr)
	}
	if len(g.store.decisions) != 19 || len(g.store.cycles) != 2 || g.r.buffer.len() != 0 {
		t.Errorf("%d decisions and %d cycle rows stored, %d buffered; want 19, 2, 0", len(g.store.decisions), len(g.store.cycles), g.r.buffer.len())
	}
	var decision string
	for _, l := range strings.Split(logs.String(), "\n") {
		if strings.Contains(l, "level=ERROR") && strings.Contains(l, "kind=decision") {
			decision = l
		}
	}
	for _, want := range []string{"not stored", `\"JobID\":7,`, `\"Rank\":7,`, `\"Value\":93,`, `\"Policy\":\"fifo\"`, "22021", "invalid byte sequence"} {
		if !strings.Contains(decision, want) {
			t.Errorf("the refused decision's log line lacks %s:\n%s", want, logs.String())
		}
	}
	if !strings.Contains(logs.String(), "kind=cycle") || !strings.Contains(logs.String(), `\"Cycle\":2,`) {
		t.Errorf("the refused cycle row is not logged in full:\n%s", logs.String())
	}
	if got := refusedCount(t, g.r.metrics, "decision"); got != 1 {
		t.Errorf("fairway_records_refused_total{kind=decision} = %v, want 1", got)
	}
}
