package serve

import (
	"fmt"
	"math"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/fairway-hpc/fairway/accounting"
	"github.com/fairway-hpc/fairway/policy"
	"github.com/fairway-hpc/fairway/slurmctl"
	"github.com/google/go-cmp/cmp"
)

// TestGrafanaDashboard_UsesOnlyServedMetrics keeps contrib/grafana in step
// with the metrics serve registers.
func TestGrafanaDashboard_UsesOnlyServedMetrics(t *testing.T) {
	b, err := os.ReadFile("../../contrib/grafana/fairway-dashboard.json")
	if err != nil {
		t.Fatal(err)
	}
	m := NewMetrics()
	// Touch the vectors so they are gathered.
	m.cycleDuration.WithLabelValues("total").Observe(1)
	m.cycles.WithLabelValues("ok").Inc()
	m.accountUse.WithLabelValues("a").Set(1)
	m.accountShare.WithLabelValues("a").Set(1)
	m.accountWait.WithLabelValues("a").Set(1)
	m.accountWaitMax.WithLabelValues("a").Set(1)
	fams, err := m.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	served := map[string]bool{}
	for _, f := range fams {
		served[f.GetName()] = true
	}
	used := regexp.MustCompile(`fairway_[a-z_]+`).FindAllString(string(b), -1)
	if len(used) == 0 {
		t.Fatal("dashboard uses no fairway metric")
	}
	for _, name := range used {
		base := strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(name, "_bucket"), "_sum"), "_count")
		if !served[base] {
			t.Errorf("dashboard uses %s, which serve does not export", name)
		}
	}
}

// TestMetrics_AccountSeriesCapped: without AccountingStorageEnforce=
// associations a user can submit under any --account string, and the
// ledger remembers every account ever pending, so the per-account gauges
// must not grow a series per string.
func TestMetrics_AccountSeriesCapped(t *testing.T) {
	now := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	ledger, err := policy.NewLedger(policy.LedgerParams{})
	if err != nil {
		t.Fatal(err)
	}
	// Real accounts: usage, and one waiting job each.
	var pending []policy.Job
	id := int64(1)
	for a := range maxAccountSeries {
		acct := fmt.Sprintf("real%03d", a)
		ran := policy.Job{ID: id, User: "u", Account: acct, GPUs: 1 + a, State: policy.StateRunning}
		ledger.Charge(&ran, now.Add(-time.Hour), now, policy.Service{})
		id++
		pending = append(pending, policy.Job{ID: id, User: "u", Account: acct, Submit: now.Add(-time.Minute)})
		id++
	}
	// A user's made-up accounts: no usage, one waiting job each, which
	// waited longer than any real account's.
	const junk = 5000
	for a := range junk {
		pending = append(pending, policy.Job{ID: id, User: "mallory", Account: fmt.Sprintf("junk%05d", a), Submit: now.Add(-time.Duration(a+2) * time.Minute)})
		id++
	}
	ledger.Backlog(pending, nil)
	// The made-up accounts are remembered after their jobs are gone: the
	// next cycle sees only the real ones waiting.
	for cycle, pend := range [][]policy.Job{pending, pending[:maxAccountSeries:maxAccountSeries]} {
		m := NewMetrics()
		m.ranked(&policy.Snapshot{Now: now, Pending: pend, Ledger: ledger}, nil, slurmctl.Report{}, accounting.Cycle{})
		fams, err := m.reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range fams {
			if !strings.HasPrefix(f.GetName(), "fairway_account_") && !strings.HasPrefix(f.GetName(), "fairway_queue_wait") {
				continue
			}
			seen := map[string]float64{}
			for _, mt := range f.GetMetric() {
				for _, l := range mt.GetLabel() {
					if l.GetName() == "account" {
						seen[l.GetValue()] = mt.GetGauge().GetValue()
					}
				}
			}
			if len(seen) > maxAccountSeries+1 {
				t.Errorf("cycle %d: %s has %d account series, want at most %d", cycle, f.GetName(), len(seen), maxAccountSeries+1)
			}
			if _, ok := seen["real000"]; !ok {
				t.Errorf("cycle %d: %s lost the real account real000 to the bucket", cycle, f.GetName())
			}
			switch f.GetName() {
			case "fairway_queue_wait_max_seconds":
				if cycle == 0 && seen[otherAccount] != float64(junk+1)*60 {
					t.Errorf("cycle 0: %s{account=%q} = %v, want %v (the longest junk wait)", f.GetName(), otherAccount, seen[otherAccount], (junk+1)*60)
				}
			case "fairway_account_share_ratio":
				sum := 0.0
				for _, v := range seen {
					sum += v
				}
				if math.Abs(sum-1) > 1e-9 {
					t.Errorf("cycle %d: %s sums to %v, want 1 (the bucket holds the rest)", cycle, f.GetName(), sum)
				}
			}
		}
	}
}

// TestMetrics_WaitNeverNegative: the wait gauges when serve's clock reads
// earlier than the submit times Slurm reports (its wall clock stepped
// back, or runs behind slurmctld's): a job submitted "after now" has
// waited 0 s so far, not a negative time, as the policies' age counts it.
func TestMetrics_WaitNeverNegative(t *testing.T) {
	now := time.Date(2026, 3, 29, 1, 30, 0, 0, time.UTC)
	pending := []policy.Job{
		{ID: 1, User: "u", Account: "ahead", Submit: now.Add(2 * time.Minute)},
		{ID: 2, User: "u", Account: "mixed", Submit: now.Add(-time.Minute)},
		{ID: 3, User: "u", Account: "mixed", Submit: now.Add(10 * time.Minute)},
	}
	m := NewMetrics()
	m.ranked(&policy.Snapshot{Now: now, Pending: pending}, nil, slurmctl.Report{}, accounting.Cycle{})
	fams, err := m.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, f := range fams {
		if !strings.HasPrefix(f.GetName(), "fairway_queue_wait") {
			continue
		}
		for _, mt := range f.GetMetric() {
			for _, l := range mt.GetLabel() {
				if l.GetName() == "account" {
					got[f.GetName()+"/"+l.GetValue()] = mt.GetGauge().GetValue()
				}
			}
		}
	}
	want := map[string]float64{
		"fairway_queue_wait_seconds/ahead": 0, "fairway_queue_wait_max_seconds/ahead": 0,
		"fairway_queue_wait_seconds/mixed": 30, "fairway_queue_wait_max_seconds/mixed": 60,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("wait gauges (-want +got):\n%s", diff)
	}
}
