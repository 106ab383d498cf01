package slurmctl

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/fairway-hpc/fairway/policy"
)

// TestSlurmPolicy_MatchesSprio replays what a real slurmctld (Debian's
// 22.05.8 and 26.05.3 under a prefix, the lab with PriorityWeightTRES set
// on every TRES a job counts and a third partition of one node;
// testdata/tres-*/README.md) computed for twelve pending jobs: `scontrol show config` and `scontrol
// show partition -o` give the slurm policy its TRES weights and each
// partition's totals, `squeue --json` the jobs as serve reads them, and
// sprio what Slurm made of them; qos-26.05.3 adds PriorityWeightQOS and
// two QOS of priority 100 and 10 (`sacctmgr -nP show qos
// format=Name,Priority`); assoc-25.11.7 (Slurm 25.11.7 under a prefix)
// adds PriorityWeightAssoc and association priorities (`sacctmgr -nP show
// associations format=Account,User,Partition,Priority`). The policy's
// partition, QOS and association terms must be sprio's (PriorityJobFactor,
// QOS or association priority over the highest, weighted), its TRES term the sum of
// sprio's TRES column (each term printed rounded), and with sprio's age,
// fair-share and partition columns it must give sprio's priority. A job
// submitted to two partitions has a row in sprio for each; the policy's
// one priority is the higher.
func TestSlurmPolicy_MatchesSprio(t *testing.T) {
	for _, dir := range []string{"tres-22.05.8", "tres-26.05.3", "tres-26.05.3-no-normal", "qos-26.05.3", "assoc-25.11.7"} {
		t.Run(dir, func(t *testing.T) {
			read := func(name string) []byte {
				b, err := os.ReadFile(filepath.Join("testdata", dir, name))
				if err != nil {
					t.Fatal(err)
				}
				return b
			}
			cfg, err := ParsePriorityConfig(read("scontrol-show-config.txt"))
			if err != nil {
				t.Fatal(err)
			}
			if cfg.Unmodelled != nil || len(cfg.Multifactor.WeightTRES) == 0 {
				t.Fatalf("TRES weights %v, unmodelled %q: want the weights read, nothing left out", cfg.Multifactor.WeightTRES, cfg.Unmodelled)
			}
			parts, err := ParsePartitions(read("scontrol-show-partition-o.txt"))
			if err != nil {
				t.Fatal(err)
			}
			res, err := decodeJobs(bytes.NewReader(read("squeue.json")))
			if err != nil || len(res.Skipped) > 0 {
				t.Fatalf("squeue.json: %v, skipped %v", err, res.Skipped)
			}
			// The partition, QOS and TRES terms alone: age and fair share 0.
			p := policy.MultifactorParams{WeightTRES: cfg.Multifactor.WeightTRES, NoNormalTRES: cfg.Multifactor.NoNormalTRES,
				PartitionTRES: parts.TRES, WeightPartition: cfg.Multifactor.WeightPartition, PartitionFactor: parts.Factor,
				WeightQOS: cfg.Multifactor.WeightQOS}
			if p.WeightQOS > 0 {
				if p.QOSPriority, err = ParseQOSPriorities(read("sacctmgr-show-qos.txt")); err != nil {
					t.Fatal(err)
				}
			}
			if p.WeightAssoc, p.NoNormalAssoc = cfg.Multifactor.WeightAssoc, cfg.Multifactor.NoNormalAssoc; p.WeightAssoc > 0 {
				a, err := ParseAssocPriorities(read("sacctmgr-show-associations.txt"))
				if err != nil {
					t.Fatal(err)
				}
				p.AssocPriority, p.AssocMax = a.ByAssoc, a.Max
			}
			pol, err := policy.NewMultifactor(p)
			if err != nil {
				t.Fatal(err)
			}
			snap := &policy.Snapshot{}
			for _, j := range res.Jobs {
				snap.Pending = append(snap.Pending, j.Job)
			}
			scores, err := pol.Rank(snap)
			if err != nil {
				t.Fatal(err)
			}
			tres, value, part, qos, assoc := map[int64]float64{}, map[int64]float64{}, map[int64]float64{}, map[int64]float64{}, map[int64]float64{}
			for _, s := range scores {
				tres[s.JobID], value[s.JobID] = s.Parts.Get("tres"), s.Value
				part[s.JobID] = s.Parts.Get("partition") * p.WeightPartition
				qos[s.JobID] = s.Parts.Get("qos") * p.WeightQOS
				assoc[s.JobID] = s.Parts.Get("assoc") * p.WeightAssoc
			}
			checked, highest := 0, map[int64]float64{}
			multi := map[int64]bool{}
			for _, line := range strings.Split(strings.TrimSpace(string(read("sprio.txt"))), "\n") {
				// JOBID|PARTITION|PRIORITY|AGE|FAIRSHARE|PARTITION factor|TRES[|QOS[|ASSOC]]
				f := strings.Split(line, "|")
				if len(f) < 7 || len(f) > 9 {
					t.Fatalf("sprio line %q: want 7 to 9 fields", line)
				}
				qosTerm, assocTerm := 0.0, 0.0
				for i, dst := range []*float64{&qosTerm, &assocTerm} {
					if len(f) > 7+i {
						if *dst, err = strconv.ParseFloat(f[7+i], 64); err != nil {
							t.Fatalf("sprio line %q: %v", line, err)
						}
					}
				}
				id, _ := strconv.ParseInt(f[0], 10, 64)
				var job *Job
				for i := range res.Jobs {
					if res.Jobs[i].ID == id {
						job = &res.Jobs[i]
					}
				}
				if job == nil {
					t.Fatalf("sprio job %d is not in squeue.json", id)
				}
				sum, terms := 0.0, 0
				for _, term := range strings.Split(f[6], ",") {
					if term == "" { // a job that asks for no weighed TRES
						continue
					}
					_, v, _ := strings.Cut(term, "=")
					x, err := strconv.ParseFloat(v, 64)
					if err != nil {
						t.Fatalf("sprio TRES %q: %v", f[6], err)
					}
					sum, terms = sum+x, terms+1
				}
				partTerm, _ := strconv.ParseFloat(f[5], 64)
				if job.Partition != f[1] { // one of the job's partitions ("gpu,gpuhi")
					multi[id] = true
					highest[id] = max(highest[id], math.Floor(partTerm+sum+qosTerm+assocTerm))
					continue
				}
				if part[id] != partTerm {
					t.Errorf("job %d (%s): partition term %v, sprio's %v", id, f[1], part[id], partTerm)
				}
				if math.Abs(qos[id]-qosTerm) > 0.5 {
					t.Errorf("job %d (QOS %s): QOS term %v, sprio's %v", id, job.QOS, qos[id], qosTerm)
				}
				if math.Abs(assoc[id]-assocTerm) > 0.5 {
					t.Errorf("job %d (%s/%s): association term %v, sprio's %v", id, job.Account, job.User, assoc[id], assocTerm)
				}
				got := tres[id]
				if math.Abs(got-sum) > 0.5*float64(terms) {
					t.Errorf("job %d (%s, %s): TRES term %.3f, sprio's %s sums to %g", id, f[1], job.Partition, got, f[6], sum)
				}
				others := qos[id] + assoc[id]
				for _, col := range f[3:6] {
					x, err := strconv.ParseFloat(col, 64)
					if err != nil {
						t.Fatalf("sprio line %q: %v", line, err)
					}
					others += x
				}
				if want, _ := strconv.ParseFloat(f[2], 64); math.Floor(others+got) != want {
					t.Errorf("job %d: age + fair share + partition %g + TRES %.3f = %g, sprio's priority %g", id, others, got, math.Floor(others+got), want)
				}
				checked++
			}
			if checked < 10 {
				t.Fatalf("checked %d jobs against sprio: want the capture's 11 single-partition jobs", checked)
			}
			if len(multi) != 1 {
				t.Fatalf("%d jobs in several partitions: want the capture's one", len(multi))
			}
			for id := range multi {
				// sprio's TRES terms are rounded: compare whole priorities.
				if math.Abs(value[id]-highest[id]) > 1 {
					t.Errorf("job %d in %q: partition + TRES %v, sprio's highest partition + TRES %v", id, "gpu,gpuhi", value[id], highest[id])
				}
			}
		})
	}
}
