package main

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fairway-hpc/fairway/accounting/report"
	"github.com/fairway-hpc/fairway/contrib/lab"
	"github.com/fairway-hpc/fairway/policy"
	"github.com/fairway-hpc/fairway/policy/sim"
	"github.com/fairway-hpc/fairway/slurmctl"
)

// Bounds TestLab_SlurmFidelity keeps on the simulator that acts as
// slurmctld does (fullModel), from its runs on the lab's Slurm 22.05.8
// and 26.05.3 (docs/SIMULATOR.md, "Fidelity against slurmctld", has the
// tables). On a quiet machine τ_b was 0.94-0.98, median |Δstart| 2-9 s,
// p90 6-19 s. With the cores busy (load 6-9 on 2 cores) slurmctld starts
// about one job in seven 1-4 s after the GPUs it needs came free, the
// replay runs ahead of it by 10-20 s within four minutes, and when a
// PriorityCalcPeriod recalculation falls inside the workload, jobs Slurm
// held past it start before it in the replay: τ_b 0.885-0.97 measured so.
// The τ_b bound is set below that, not at the quiet machine's 0.9.
const (
	fidelityMinTau       = 0.85
	fidelityMaxMedianErr = 15 * time.Second
	fidelityMaxP90Err    = 30 * time.Second
)

// fullModel is the row of the slurm policy replayed as slurmctld acts.
const fullModel = "slurm, held, bf_interval, billing"

// TestLab_SlurmFidelity replays on the simulator, with the "slurm" policy
// and the lab's own priority settings, a workload the real slurmctld ran:
// 210 jobs of alice, bob and carol over the partitions gpu and gpuhi (both
// on both nodes, PriorityJobFactor 1 and 2), of 1, 2 and 4 GPUs (2 CPUs
// each), running 1 to 4 s under limits of 1 to 5 minutes, submitted at
// once with Fairway off (priority/multifactor + sched/backfill, the lab's
// weights: age, fair share, partition and GPUs as a TRES), waited
// for, ingested with `fairway ingest --from slurmdbd`, and read back from
// the database. It reports each job's start-time error (median, p90) and
// Kendall's τ_b of the start order, beside fifo's and fairshare's, with
// slurmctld's cadence and billing added one at a time (replayFidelity),
// and keeps the bounds measured for the whole model. The partitions share their nodes, so one
// pool of 2 × 4 GPUs is exact for placement and the partition factor
// enters through the policy.
//
// It needs the lab to itself: another test's jobs on the nodes would
// change what Slurm did and not what the simulator replays.
func TestLab_SlurmFidelity(t *testing.T) {
	e := lab.Get(t)
	ctx := context.Background()
	tag := fmt.Sprintf("fid%d", time.Now().UnixNano()%1e6)

	cmds := slurmctl.Commands{Runner: slurmctl.ExecRunner{SlurmConf: e.SlurmConf}}
	cfg, err := cmds.ReadPriorityConfig(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	parts, err := cmds.ReadPartitions(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Type != "priority/multifactor" || cfg.SchedulerType != "sched/backfill" || parts.Factor["gpuhi"] <= parts.Factor["gpu"] ||
		cfg.Multifactor.WeightPartition == 0 || cfg.Multifactor.WeightTRES["gres/gpu"] == 0 {
		t.Fatalf("the lab runs %s, %s, partition factors %v, partition weight %v, TRES weights %v: want multifactor, backfill, gpuhi above gpu and a GPU weight (contrib/lab/lab up)",
			cfg.Type, cfg.SchedulerType, parts.Factor, cfg.Multifactor.WeightPartition, cfg.Multifactor.WeightTRES)
	}
	mf := cfg.Multifactor
	mf.PartitionFactor, mf.PartitionTRES, mf.ClusterNodes, mf.ClusterCPUs = parts.Factor, parts.TRES, 2, 16

	t0 := time.Now()
	waitQueueEmpty(t, e)
	waitDecayRun(t, e, time.Now(), cfg.CalcPeriod)
	start := time.Now().Truncate(time.Second)
	waited := time.Since(t0)
	rng := rand.New(rand.NewPCG(26, 2026))
	users, sizes := []string{"alice", "bob", "carol"}, []int{1, 1, 1, 2, 2, 4}
	var ids []string
	for i := range 210 {
		gpus := sizes[rng.IntN(len(sizes))]
		part := "gpu"
		if rng.IntN(3) == 0 {
			part = "gpuhi"
		}
		id := e.Submit(t, users[i%3], "-J", tag, "-p", part, fmt.Sprintf("--gres=gpu:%d", gpus), "-c", strconv.Itoa(2*gpus),
			"-t", strconv.Itoa(1+rng.IntN(5)), "--wrap", fmt.Sprintf("sleep %d", 1+rng.IntN(4)))
		ids = append(ids, strconv.FormatInt(id, 10))
	}
	submitted := time.Since(t0)
	waitFor(t, 10*time.Minute, "the workload's jobs to complete", func() bool {
		out, err := e.Try("", "sacct", "-n", "-X", "-P", "-o", "State", "-j", strings.Join(ids, ","))
		if err != nil {
			return false
		}
		done := 0
		for _, s := range strings.Fields(out) {
			switch s {
			case "COMPLETED":
				done++
			case "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "OUT_OF_MEMORY":
				t.Fatalf("a workload job ended %s:\n%s", s, out)
			}
		}
		return done == len(ids)
	})
	// Where the test's time goes, as CI's time budget needs to know.
	t.Logf("waited %s for an empty queue and the decay thread, submitted by %s, all completed by %s",
		waited.Round(time.Second), submitted.Round(time.Second), time.Since(t0).Round(time.Second))
	got := replayFidelity(t, e, cfg, mf, tag, len(ids), start)
	if got.tau < fidelityMinTau || got.median > fidelityMaxMedianErr || got.p90 > fidelityMaxP90Err {
		// Every job's two starts, so that a miss (seen once with the
		// machine's cores busy: small errors, lower τ_b) can be studied.
		t.Errorf("%s against slurmctld: τ_b %.3f (want ≥ %.2f), median |Δstart| %s (want ≤ %s), p90 %s (want ≤ %s); per job, by real start:\n%s",
			fullModel, got.tau, fidelityMinTau, got.median, fidelityMaxMedianErr, got.p90, fidelityMaxP90Err, got.perJob)
	}
}

// waitDecayRun waits until slurmctld's decay thread has run after the
// instant after (when the lab's queue was seen empty). slurmctld adds a
// finished job's run time to its association's usage only when that
// thread runs (every PriorityCalcPeriod), while the replay charges the
// history at once: a workload submitted seconds after earlier jobs ended
// was ranked by Slurm without their usage until the next run, and by the
// replay with it (τ_b 0.525, most starts about 80 s late, in a run
// submitted 7 s after the previous one's last job ended; docs/SIMULATOR.md,
// cause 7). The thread writes its state file priority_last_decay_ran in
// StateSaveLocation at every run, which is the state waited on.
func waitDecayRun(t *testing.T, e *lab.Env, after time.Time, period time.Duration) {
	t.Helper()
	file := filepath.Join(e.StateDir, "priority_last_decay_ran")
	waitFor(t, period+2*time.Minute, "slurmctld's decay thread to run after the earlier jobs ended ("+file+")", func() bool {
		fi, err := os.Stat(file)
		return err == nil && fi.ModTime().After(after)
	})
}

// replayFidelity ingests the n jobs named tag that ran from start (into a
// throwaway database), replays them as TestLab_SlurmFidelity says, logs
// the table and returns the slurm policy's row.
func replayFidelity(t *testing.T, e *lab.Env, cfg slurmctl.PriorityConfig, mf policy.MultifactorParams, tag string, n int, start time.Time) fidelity {
	t.Helper()
	ctx := context.Background()
	dbURL, conn := throwawayDB(t, e)
	t.Setenv("SLURM_CONF", e.SlurmConf)
	since := start.Add(-8 * 24 * time.Hour).UTC().Format(time.RFC3339)
	waitFor(t, 2*time.Minute, "the workload in the database", func() bool {
		out, err := runApp(t, "ingest", "--progress", "never", "--database-url", dbURL, "--from", "slurmdbd", "--cluster", e.Cluster,
			"--since", since, "--slurm-url", e.RESTURL, "--slurm-user", e.RESTUser, "--slurm-token-file", e.TokenFile)
		if err != nil {
			t.Fatalf("ingest: %v\n%s", err, out)
		}
		var stored int
		if err := conn.QueryRow(ctx, `SELECT count(*) FROM job WHERE cluster = $1 AND name = $2 AND end_time IS NOT NULL`,
			e.Cluster, tag).Scan(&stored); err != nil {
			t.Fatal(err)
		}
		return stored == n
	})
	all, _, err := report.FinishedHistory(ctx, dbURL, e.Cluster, time.Time{}, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	// The workload, and as history what ran before it (earlier runs of
	// this test, other tests): Slurm's fair-share usage remembers it.
	var jobs, hist []policy.Job
	for _, j := range all {
		switch {
		case j.Name == tag:
			jobs = append(jobs, j)
		case !j.End.After(start) && !j.Start.IsZero():
			hist = append(hist, j)
		}
	}
	if len(jobs) != n {
		t.Fatalf("%d workload jobs read back from the database, want %d", len(jobs), n)
	}
	slices.SortFunc(jobs, func(a, b policy.Job) int { return cmp.Or(a.Submit.Compare(b.Submit), cmp.Compare(a.ID, b.ID)) })
	slices.SortFunc(hist, func(a, b policy.Job) int { return a.End.Compare(b.End) })
	if jobs[0].Partition == "" {
		t.Fatalf("job %d read back without its partition", jobs[0].ID)
	}
	// The lab's tree (sshare): physics 60 (alice, bob), chem 40 (carol),
	// and root's own user with 1 share beside them.
	shares := &policy.Shares{Accounts: map[string]float64{"physics": 60, "chem": 40, "root": 1},
		Users: map[policy.Assoc]float64{{Account: "root", User: "root"}: 1}}

	realStart := map[int64]time.Time{}
	for _, j := range jobs {
		realStart[j.ID] = j.Start
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d jobs (%d of history), %s, bf_interval %s, PriorityCalcPeriod %s from BOOT_TIME %s, weights age %g fairshare %g partition %g TRES %v, fair tree %v\n",
		len(jobs), len(hist), strings.TrimSpace(e.Run(t, "", "scontrol", "--version")), cfg.BackfillInterval, cfg.CalcPeriod, cfg.BootTime.Format(time.RFC3339), mf.WeightAge, mf.WeightFairshare, mf.WeightPartition, mf.WeightTRES, mf.FairTree)
	fmt.Fprintf(&b, "| policy | median |Δstart| | p90 |Δstart| | max |Δstart| | Kendall τ_b |\n|---|---|---|---|---|\n")
	// "slurm, held": the same with priorities held between slurmctld's
	// recalculations (PriorityCalcPeriod, counted from its BOOT_TIME).
	held := mf
	held.CalcPeriod, held.CalcEpoch = cfg.CalcPeriod, cfg.BootTime
	var got fidelity
	// The rows add, one at a time, how slurmctld acts, from the lab's
	// own settings: "held", priorities held between its recalculations
	// (PriorityCalcPeriod, counted from BOOT_TIME); "bf_interval",
	// backfill only every bf_interval (from BOOT_TIME), jobs in priority
	// order at every scheduling point; "billing", fair-share usage
	// charged in Slurm's billing (TRESBillingWeights unset: CPUs) rather
	// than GPUs, which history jobs of other shapes make differ.
	pool := sim.Cluster{Nodes: 2, PerNode: 4, Unit: sim.GPUs}
	billing := &policy.Service{BillCPUs: true}
	for _, r := range []struct {
		row, name string
		params    any
		bf        time.Duration
		service   *policy.Service
	}{
		{"slurm", "slurm", mf, 0, nil},
		{"slurm, held", "slurm", held, 0, nil},
		{"slurm, held, bf_interval", "slurm", held, cfg.BackfillInterval, nil},
		{fullModel, "slurm", held, cfg.BackfillInterval, billing},
		{"fairshare", "fairshare", nil, 0, nil}, {"fifo", "fifo", nil, 0, nil},
	} {
		row, name := r.row, r.name
		pol, err := policy.New(name, r.params)
		if err != nil {
			t.Fatal(err)
		}
		res, err := sim.Run(jobs, sim.Config{Cluster: pool, Policy: pol, BackfillInterval: r.bf, BackfillEpoch: cfg.BootTime, Service: r.service,
			History: hist, Shares: shares, Ledger: policy.LedgerParams{HalfLife: mf.DecayHalfLife}})
		if err != nil {
			t.Fatalf("%s: %v", row, err)
		}
		f := measureFidelity(t, realStart, res)
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %.3f |\n", row, f.median, f.p90, f.max, f.tau)
		if row == fullModel {
			got = f
		}
	}
	t.Logf("fidelity against slurmctld:\n%s", b.String())
	return got
}

// fidelity is how close a simulation's start times are to Slurm's.
type fidelity struct {
	median, p90, max time.Duration
	tau              float64
	perJob           string // "job ID real START sim START Δ D" lines, by real start
}

// measureFidelity compares res's start times with real's (by job id):
// the absolute errors' median, 90th percentile and maximum, and Kendall's
// τ_b of the two start orders (ties counted as Slurm's one-second clock
// and the simulator make them).
func measureFidelity(t *testing.T, real map[int64]time.Time, res *sim.Result) fidelity {
	t.Helper()
	type pair struct {
		r, s float64
		id   int64
	}
	var ps []pair
	var errs []time.Duration
	for _, j := range res.Jobs {
		r, ok := real[j.ID]
		if !ok {
			t.Fatalf("simulated job %d was not in the workload", j.ID)
		}
		// Slurm records whole seconds.
		s := j.Start.Truncate(time.Second)
		d := s.Sub(r)
		errs = append(errs, max(d, -d))
		ps = append(ps, pair{float64(r.Unix()), float64(s.Unix()), j.ID})
	}
	if len(ps) != len(real) {
		t.Fatalf("%d jobs simulated, %d ran", len(ps), len(real))
	}
	slices.Sort(errs)
	q := func(p float64) time.Duration { return errs[int(math.Ceil(p*float64(len(errs))))-1] }
	var conc, disc, tieR, tieS float64
	for i := range ps {
		for k := i + 1; k < len(ps); k++ {
			dr, ds := ps[i].r-ps[k].r, ps[i].s-ps[k].s
			switch {
			case dr == 0 && ds == 0:
			case dr == 0:
				tieR++
			case ds == 0:
				tieS++
			case (dr > 0) == (ds > 0):
				conc++
			default:
				disc++
			}
		}
	}
	tau := (conc - disc) / math.Sqrt((conc+disc+tieR)*(conc+disc+tieS))
	slices.SortFunc(ps, func(a, b pair) int { return cmp.Or(cmp.Compare(a.r, b.r), cmp.Compare(a.id, b.id)) })
	var per strings.Builder
	for _, p := range ps {
		fmt.Fprintf(&per, "job %d real %s sim %s Δ %s\n", p.id, time.Unix(int64(p.r), 0).UTC().Format(time.TimeOnly),
			time.Unix(int64(p.s), 0).UTC().Format(time.TimeOnly), time.Duration(p.s-p.r)*time.Second)
	}
	return fidelity{median: q(0.5), p90: q(0.9), max: errs[len(errs)-1], tau: tau, perJob: per.String()}
}
