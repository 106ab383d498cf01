package serve

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/fairway-hpc/fairway/accounting"
	"github.com/fairway-hpc/fairway/policy"
	"github.com/fairway-hpc/fairway/policy/rewrite"
	"github.com/fairway-hpc/fairway/slurmctl"
)

// Serve's resource rewriting (INSTALL.md, "GPU sharing and resource
// rewriting"): each cycle, in the partitions where it is on,
//
//   - the share rule's table (user, job name → shards) is rebuilt from the
//     usage history and written atomically for contrib/slurm/job_submit.lua,
//     which applies it to new submissions;
//   - elastic jobs get the GPU count AFS-L picks, and pending jobs the CPUs
//     and memory the Synergy-style rule picks, through slurmctl's
//     ResizeWriter.
//
// Off by default. Every write goes through the cycle's Sink, so a dry run,
// explain, or a serve that does not hold the lease writes nothing (neither
// the table nor a job) and reports what it would do. The rules themselves
// are rewrite.Rules's.

// RuleNames are the rewrite rules serve can run (--rewrite-rules).
var RuleNames = []string{rewrite.RuleShare, rewrite.RuleCPUs, rewrite.RuleMemory, rewrite.RuleElastic}

// RewriteConfig is serve's validated rewriting settings.
type RewriteConfig struct {
	Partitions  []string // rewriting is on in these partitions only; empty: off
	Rules       map[string]bool
	Table       string        // the job_submit.lua table
	TableMaxAge time.Duration // job_submit.lua ignores an older table
	// The table is read on slurmctld's submit path, so it is capped: at
	// most TableMaxRulesPerUser rules per user and TableMaxBytes in all
	// (0: DefaultTableMaxRulesPerUser, DefaultTableMaxBytes).
	TableMaxRulesPerUser int
	TableMaxBytes        int
	HistoryDays          int
	RefreshEvery         int     // cycles between history reloads
	CPUsPerGPU           float64 // 0: each partition's nodes' CPUs over their GPUs
	MemPerGPUMB          int64   // 0: each partition's nodes' memory over their GPUs
	ShareMaxUtil         float64
	MinHistory           int
	Sacct                bool // read CPU and memory use from sacct
	ShardsPerGPU         int
	Cluster              string
	ExemptQOS            []string // serve's --exempt-qos: never resized either
}

// Default caps of the job_submit table, and MaxTableBytes, the largest
// table job_submit.lua reads (MAX_TABLE_BYTES there): it ignores a larger
// one whole, so a cap above it would stop all sharing once the table grew.
const (
	DefaultTableMaxRulesPerUser = 100
	DefaultTableMaxBytes        = 1 << 20
	MaxTableBytes               = 4 << 20
)

// UsageSource is where the rules' history comes from (accounting.Store).
type UsageSource interface {
	UsageSamples(ctx context.Context, cluster string, since time.Time) ([]rewrite.UsageSample, error)
}

// SlurmReader reads what the rules need of Slurm besides the jobs
// (slurmctl.ResizeWriter): pending jobs' comments, where users put the
// opt-out and elastic markers, and the CPU and memory limits of Slurm's
// associations and QOS. The CPU and memory rules change no job that such a
// limit applies to, because the change would exempt the job from it
// (guardLimits).
type SlurmReader interface {
	Comments(ctx context.Context) (map[int64]string, error)
	Limits(ctx context.Context) (*slurmctl.Limits, error)
}

// Rewriter runs the rewrite rules inside serve's cycle.
type Rewriter struct {
	cfg    RewriteConfig
	log    *slog.Logger
	usage  UsageSource
	cpuUse func(ctx context.Context, since, until time.Time) (map[int64]accounting.CPUUse, error) // nil: not read
	slurm  SlurmReader

	share    *rewrite.Rules // profiles and the share rule (serve's shards per GPU)
	profiles map[rewrite.ProfileKey]*rewrite.UsageProfile
	loadedAt int64 // cycle of the last history load; 0: never
	// elastic is what the elastic jobs Fairway resized asked for (their
	// GPUs), so a job Slurm now shows grown is not grown again, and one a
	// Planner only planned to grow (it still shows what it asked for) is
	// judged again. Only Cycle touches it.
	elastic map[int64]int
	// asked is what pending jobs asked for before Fairway first changed
	// their CPUs or memory, so the rules size them from the request and not
	// from an earlier change. Kept in memory: after serve restarts (or a
	// standby takes over) a changed job's current request counts as asked.
	// Only Cycle touches it, and cycles do not overlap.
	asked map[int64]rewrite.Asked
}

// RewriteReport is what one cycle's rewriting decided.
type RewriteReport struct {
	Rules        []rewrite.ShareRule // the table's rows
	NoShare      []rewrite.ShareRule // the users' job names with history that got no row, and why
	TableDropped int                 // rules left out by the table's caps
	TableWritten bool
	Proposals    []rewrite.Proposal // the changes asked of Slurm
	Withheld     []Withheld         // CPU and memory changes not asked for: Slurm limits apply
	Resize       slurmctl.ResizeReport
}

// Withheld is a CPU or memory change the rules proposed and Fairway did
// not make, and why.
type Withheld struct {
	rewrite.Proposal
	Why string
}

// NewRewriter returns the rewriter for cfg, or nil when rewriting is off
// (no partition). usage is the rules' history; slurm reads opt-outs and
// limits.
func NewRewriter(cfg RewriteConfig, log *slog.Logger, usage UsageSource, slurm SlurmReader) (*Rewriter, error) {
	if len(cfg.Partitions) == 0 {
		return nil, nil
	}
	if cfg.TableMaxRulesPerUser == 0 {
		cfg.TableMaxRulesPerUser = DefaultTableMaxRulesPerUser
	}
	if cfg.TableMaxBytes == 0 {
		cfg.TableMaxBytes = DefaultTableMaxBytes
	}
	if cfg.TableMaxRulesPerUser < 0 || cfg.TableMaxBytes < 0 {
		return nil, fmt.Errorf("rewrite table caps: %d rules per user, %d bytes: want positive", cfg.TableMaxRulesPerUser, cfg.TableMaxBytes)
	}
	share, err := rewrite.New(rewrite.Params{ShardsPerGPU: cfg.ShardsPerGPU, MinHistory: cfg.MinHistory, ShareMaxUtilPct: cfg.ShareMaxUtil})
	if err != nil {
		return nil, err
	}
	rw := &Rewriter{cfg: cfg, log: log, usage: usage, slurm: slurm, share: share, elastic: map[int64]int{}, asked: map[int64]rewrite.Asked{}}
	if cfg.Sacct {
		rw.cpuUse = func(ctx context.Context, since, until time.Time) (map[int64]accounting.CPUUse, error) {
			return accounting.SacctUsage(ctx, slurmctl.Commands{}, "", since, until)
		}
	}
	return rw, nil
}

// refresh reloads the usage history into profiles.
func (rw *Rewriter) refresh(ctx context.Context, now time.Time) error {
	since := now.AddDate(0, 0, -rw.cfg.HistoryDays)
	samples, err := rw.usage.UsageSamples(ctx, rw.cfg.Cluster, since)
	if err != nil {
		return err
	}
	if rw.cpuUse != nil && (rw.cfg.Rules[rewrite.RuleCPUs] || rw.cfg.Rules[rewrite.RuleMemory]) {
		use, err := rw.cpuUse(ctx, since, now)
		if err != nil {
			rw.log.Warn("rewrite: CPU and memory use from sacct unavailable; rules treat it as unknown", "err", err)
		}
		for i := range samples {
			if u, ok := use[samples[i].JobID]; ok {
				samples[i].CPUsUsed, samples[i].MemUsedMB = u.CPUsUsed, u.MemUsedMB
			}
		}
	}
	rw.profiles = rw.share.Profiles(samples)
	return nil
}

// Cycle runs the rules on one read of the cluster, made at now (the
// cycle's time: the table's stamp, begin times). predicted and ranking are
// the engine's (elastic jobs are judged in Fairway's order); every write
// goes to sink. It never fails the serve cycle: problems are logged and
// the report says what was done.
func (rw *Rewriter) Cycle(ctx context.Context, n int64, now time.Time, cl *slurmctl.Cluster,
	predicted map[int64]time.Duration, ranking []policy.Score, sink Sink) *RewriteReport {
	log := rw.log.With("cycle", n)
	rep := &RewriteReport{}
	if rw.loadedAt == 0 || n-rw.loadedAt >= int64(rw.cfg.RefreshEvery) {
		if err := rw.refresh(ctx, now); err != nil {
			log.Warn("rewrite: load usage history", "err", err)
			if rw.profiles == nil {
				return rep // nothing to judge by yet
			}
		} else {
			rw.loadedAt = n
		}
	}
	keys := make([]rewrite.ProfileKey, 0, len(rw.profiles))
	for k := range rw.profiles {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b rewrite.ProfileKey) int {
		return strings.Compare(a.User+"\x00"+a.Name, b.User+"\x00"+b.Name)
	})

	if rw.cfg.Rules[rewrite.RuleShare] {
		for _, k := range keys {
			r, ok := rw.share.Share(rw.profiles[k])
			switch {
			case ok && rewrite.TableSafe(r.User) && rewrite.TableSafe(r.Name):
				rep.Rules = append(rep.Rules, r)
			case ok:
				r.Shards, r.Reason = 0, "user or job name cannot be written to the table (tab, newline or control character)"
				fallthrough
			default:
				rep.NoShare = append(rep.NoShare, r)
			}
		}
		header := len(rewrite.RenderTable(now, rw.cfg.TableMaxAge, rw.cfg.Partitions, nil))
		rep.Rules, rep.TableDropped = rewrite.CapTable(rep.Rules, rw.cfg.TableMaxRulesPerUser, rw.cfg.TableMaxBytes-header)
		if rep.TableDropped > 0 {
			log.Warn("rewrite: share table capped: the users with the most rules lose some", "kept", len(rep.Rules), "dropped", rep.TableDropped,
				"max_rules_per_user", rw.cfg.TableMaxRulesPerUser, "max_bytes", rw.cfg.TableMaxBytes)
		}
		table := rewrite.RenderTable(now, rw.cfg.TableMaxAge, rw.cfg.Partitions, rep.Rules)
		if err := sink.WriteTable(rw.cfg.Table, table); err != nil {
			log.Error("rewrite: write the share table", "path", rw.cfg.Table, "err", err)
		} else {
			rep.TableWritten = true
		}
	}

	if rw.cfg.Rules[rewrite.RuleCPUs] || rw.cfg.Rules[rewrite.RuleMemory] || rw.cfg.Rules[rewrite.RuleElastic] {
		rw.forgetGone(cl)
		comments, err := rw.slurm.Comments(ctx)
		if err != nil {
			log.Warn("rewrite: cannot read job comments (opt-outs): no job resized this cycle", "err", err)
			return rep
		}
		rep.Proposals, rep.Withheld = rw.guardLimits(ctx, log, cl, rw.propose(now, cl, comments, predicted, ranking))
		want := mergeProposals(rep.Proposals)
		if len(want) > 0 {
			rep.Resize, err = sink.Resize(ctx, cl.Jobs, want)
			if err != nil {
				log.Error("rewrite: resize pending jobs", "err", err, "applied", len(rep.Resize.Applied), "failed", len(rep.Resize.Failed))
			}
			planned := map[int64]bool{}
			for _, c := range rep.Resize.Planned {
				planned[c.JobID] = true
			}
			for _, p := range rep.Proposals {
				if planned[p.JobID] {
					log.Info("rewrite", "job_id", p.JobID, "rule", p.Rule, "from", p.From, "cpus", p.CPUs, "memory_mb", p.MemoryMB,
						"gpus", p.GPUs, "reason", p.Reason)
				}
			}
			for _, c := range rep.Resize.Applied {
				if _, ok := rw.elastic[c.JobID]; c.GPUs > 0 && !ok {
					rw.elastic[c.JobID] = c.From.GPUs
				}
				a := rw.asked[c.JobID]
				if c.CPUs > 0 && a.CPUs == 0 {
					a.CPUs = c.From.CPUs
				}
				if c.MemoryMB > 0 && a.MemoryMB == 0 {
					a.MemoryMB = c.From.MemoryMB
				}
				if a != (rewrite.Asked{}) {
					rw.asked[c.JobID] = a
				}
			}
		}
	}
	return rep
}

// partitionShape is what the rules need to know of a partition's nodes.
type partitionShape struct {
	cpusPerGPU, memPerGPU float64
	nodeCPUs              int
	nodeMem               int64
	shardsPerGPU          int
	maxFreeOnNode, free   int
}

// shape reads a partition's usable GPU nodes: the smallest CPUs and
// memory per GPU and per node (so a proposal fits every node), shards per
// GPU, and its free whole GPUs.
func shape(cl *slurmctl.Cluster, partition string) (partitionShape, bool) {
	var s partitionShape
	found := false
	for i := range cl.Nodes {
		nd := &cl.Nodes[i]
		if !slices.Contains(nd.Partitions, partition) || !nd.Usable() || nd.GPUs <= 0 {
			continue
		}
		cpg, mpg := float64(nd.CPUs)/float64(nd.GPUs), float64(nd.MemoryMB)/float64(nd.GPUs)
		if !found || cpg < s.cpusPerGPU {
			s.cpusPerGPU = cpg
		}
		if !found || mpg < s.memPerGPU {
			s.memPerGPU = mpg
		}
		if !found || nd.CPUs < s.nodeCPUs {
			s.nodeCPUs = nd.CPUs
		}
		if !found || nd.MemoryMB < s.nodeMem {
			s.nodeMem = nd.MemoryMB
		}
		spg := 0
		if nd.Shards > 0 {
			spg = nd.Shards / nd.GPUs
		}
		if !found || spg < s.shardsPerGPU {
			s.shardsPerGPU = spg
		}
		busy := nd.AllocGPUs
		if spg > 0 {
			busy += (nd.AllocShards + spg - 1) / spg
		}
		f := max(nd.GPUs-busy, 0)
		s.free += f
		s.maxFreeOnNode = max(s.maxFreeOnNode, f)
		found = true
	}
	return s, found
}

// propose runs the CPU, memory and elastic rules on the pending jobs of
// the enabled partitions, in Fairway's ranking order (unranked jobs last).
func (rw *Rewriter) propose(now time.Time, cl *slurmctl.Cluster, comments map[int64]string, predicted map[int64]time.Duration, ranking []policy.Score) []rewrite.Proposal {
	rank := make(map[int64]int, len(ranking))
	for i, s := range ranking {
		rank[s.JobID] = i
	}
	byRank := func(a, b *slurmctl.Job) int {
		ra, oka := rank[a.ID]
		rb, okb := rank[b.ID]
		switch {
		case oka && okb:
			return ra - rb
		case oka != okb:
			if oka {
				return -1
			}
			return 1
		}
		return cmp.Compare(a.ID, b.ID)
	}
	// byPart: the jobs the rules may change; queued: every pending job of
	// a partition, opted out or not, for the GPUs the jobs ranked ahead of
	// an elastic one take first.
	byPart := map[string][]*slurmctl.Job{}
	queued := map[string][]*slurmctl.Job{}
	for i := range cl.Jobs {
		j := &cl.Jobs[i]
		if !j.Pending() {
			continue
		}
		parts := strings.Split(j.Partition, ",")
		queued[parts[0]] = append(queued[parts[0]], j)
		if j.HetJob || j.ArrayTasks != "" || rewrite.OptedOut(comments[j.ID]) || slices.Contains(rw.cfg.ExemptQOS, j.QOS) {
			continue
		}
		ok := true
		for _, p := range parts {
			ok = ok && slices.Contains(rw.cfg.Partitions, p)
		}
		if ok {
			byPart[parts[0]] = append(byPart[parts[0]], j)
		}
	}
	var out []rewrite.Proposal
	for _, part := range rw.cfg.Partitions {
		jobs := byPart[part]
		if len(jobs) == 0 {
			continue
		}
		sh, ok := shape(cl, part)
		if !ok {
			continue
		}
		slices.SortStableFunc(jobs, byRank)
		// Shards per GPU as the nodes declare them, else serve's setting.
		p := rewrite.Params{ShardsPerGPU: sh.shardsPerGPU, MinHistory: rw.cfg.MinHistory, GPUsPerNode: sh.maxFreeOnNode}
		if p.ShardsPerGPU == 0 {
			p.ShardsPerGPU = rw.cfg.ShardsPerGPU
		}
		if rw.cfg.Rules[rewrite.RuleCPUs] {
			p.CPUsPerGPU, p.NodeCPUs = rw.cfg.CPUsPerGPU, sh.nodeCPUs
			if p.CPUsPerGPU == 0 {
				p.CPUsPerGPU = sh.cpusPerGPU
			}
		}
		if rw.cfg.Rules[rewrite.RuleMemory] {
			p.MemPerGPUMB, p.NodeMemMB = rw.cfg.MemPerGPUMB, sh.nodeMem
			if p.MemPerGPUMB == 0 {
				p.MemPerGPUMB = int64(sh.memPerGPU)
			}
		}
		rules, err := rewrite.New(p)
		if err != nil {
			rw.log.Warn("rewrite: partition settings", "partition", part, "err", err)
			continue
		}
		gpus := map[int64]int{}
		if rw.cfg.Rules[rewrite.RuleElastic] {
			mine := make(map[int64]bool, len(jobs))
			for _, j := range jobs {
				mine[j.ID] = true
			}
			all := queued[part]
			slices.SortStableFunc(all, byRank)
			ahead := 0 // GPUs the jobs ranked so far that are not elastic take first
			var cands []rewrite.ElasticJob
			for _, j := range all {
				lo, hi, isElastic, err := rewrite.ParseElastic(comments[j.ID])
				if err != nil && mine[j.ID] {
					rw.log.Warn("rewrite: ignoring a malformed elastic marker", "job_id", j.ID, "err", err)
				}
				if asked, grown := rw.elastic[j.ID]; mine[j.ID] && isElastic && err == nil && (!grown || j.GPUs == asked) {
					cands = append(cands, rewrite.ElasticJob{Job: &j.Job, Min: lo, Max: hi, Profile: rw.profiles[rewrite.ProfileKey{User: j.User, Name: j.Name}],
						Predicted: predicted[j.ID], Ahead: ahead})
					continue
				}
				if need := j.GPUs; need > 0 && ahead+need <= sh.free && canStart(j, now) {
					ahead += need
				}
			}
			for _, pr := range rules.Elastic(cands, sh.free) {
				out = append(out, pr)
				gpus[pr.JobID] = pr.GPUs
			}
		}
		if rw.cfg.Rules[rewrite.RuleCPUs] || rw.cfg.Rules[rewrite.RuleMemory] {
			for _, j := range jobs {
				jj := j.Job
				if g, ok := gpus[j.ID]; ok {
					jj.GPUs = g // CPUs and memory follow the new GPU count
				}
				out = append(out, rules.Resources(&jj, rw.asked[j.ID], rw.profiles[rewrite.ProfileKey{User: j.User, Name: j.Name}])...)
			}
		}
	}
	return out
}

// forgetGone drops what Fairway remembers of jobs that are no longer
// pending: their requests cannot change any more.
func (rw *Rewriter) forgetGone(cl *slurmctl.Cluster) {
	pending := make(map[int64]bool, len(cl.Jobs))
	for i := range cl.Jobs {
		if cl.Jobs[i].State == policy.StatePending {
			pending[cl.Jobs[i].ID] = true
		}
	}
	for id := range rw.asked {
		if !pending[id] {
			delete(rw.asked, id)
		}
	}
	for id := range rw.elastic {
		if !pending[id] {
			delete(rw.elastic, id)
		}
	}
}

// canStart reports whether a pending job could start now if resources
// were free: not before its begin time (sbatch --begin) and not waiting on
// a dependency. One that cannot holds no GPUs back from the jobs ranked
// below it.
func canStart(j *slurmctl.Job, now time.Time) bool {
	switch j.Reason {
	case "BeginTime", "Dependency", "DependencyNeverSatisfied":
		return false
	}
	return j.Eligible.IsZero() || !j.Eligible.After(now)
}

// guardLimits keeps the CPU and memory proposals of jobs that no Slurm CPU
// or memory limit applies to, and withholds the others. A CPU or memory
// update by SlurmUser marks that resource admin-set, and Slurm then skips
// it in every association and QOS limit check until the job starts
// (slurmctl/limits.go), so a resized job could start past GrpTRES=cpu=N
// or MaxTRESPerUser=mem=M. Capping the change to what the limits leave
// room for now would not hold (the exemption outlives the moment of
// the check, and lowering a request exempts the job too), so a job that
// any such limit applies to keeps its CPUs and memory. When the limits
// cannot be read, or not told for a job, the change is withheld as well:
// fail safe. Elastic GPU counts are kept: a GRES update does not exempt.
func (rw *Rewriter) guardLimits(ctx context.Context, log *slog.Logger, cl *slurmctl.Cluster, ps []rewrite.Proposal) ([]rewrite.Proposal, []Withheld) {
	resource := func(p rewrite.Proposal) bool { return p.Rule == rewrite.RuleCPUs || p.Rule == rewrite.RuleMemory }
	if !slices.ContainsFunc(ps, resource) {
		return ps, nil
	}
	lim, readErr := rw.slurm.Limits(ctx)
	if readErr != nil {
		log.Warn("rewrite: cannot read Slurm's association and QOS limits: no job's CPUs or memory changed this cycle", "err", readErr)
	}
	byID := make(map[int64]*slurmctl.Job, len(cl.Jobs))
	for i := range cl.Jobs {
		byID[cl.Jobs[i].ID] = &cl.Jobs[i]
	}
	why := map[int64]string{}
	var kept []rewrite.Proposal
	var held []Withheld
	for _, p := range ps {
		if !resource(p) {
			kept = append(kept, p)
			continue
		}
		reason, seen := why[p.JobID]
		if !seen {
			switch j := byID[p.JobID]; {
			case readErr != nil:
				reason = "Slurm's limits could not be read"
			case j == nil:
				reason = "job not in the cluster read"
			default:
				l, err := lim.CPUMem(j)
				switch {
				case err != nil:
					reason = err.Error()
					log.Warn("rewrite: limits of a job unknown: its CPUs and memory left alone", "job_id", p.JobID, "err", err)
				case len(l) > 0:
					reason = "Slurm limits apply (" + strings.Join(l, "; ") + "); a resize by SlurmUser would exempt the job from them"
				}
			}
			why[p.JobID] = reason
		}
		if reason == "" {
			kept = append(kept, p)
			continue
		}
		held = append(held, Withheld{Proposal: p, Why: reason})
		log.Debug("rewrite withheld", "job_id", p.JobID, "rule", p.Rule, "from", p.From, "cpus", p.CPUs, "memory_mb", p.MemoryMB, "why", reason)
	}
	if len(held) > 0 {
		log.Info("rewrite: CPU and memory changes withheld where Slurm limits apply", "withheld", len(held))
	}
	return kept, held
}

// mergeProposals turns per-rule proposals into one resize per job.
func mergeProposals(ps []rewrite.Proposal) []slurmctl.Resize {
	by := map[int64]*slurmctl.Resize{}
	var order []int64
	for _, p := range ps {
		r := by[p.JobID]
		if r == nil {
			r = &slurmctl.Resize{JobID: p.JobID}
			by[p.JobID] = r
			order = append(order, p.JobID)
		}
		switch p.Rule {
		case rewrite.RuleCPUs:
			r.CPUs = p.CPUs
		case rewrite.RuleMemory:
			r.MemoryMB = p.MemoryMB
		case rewrite.RuleElastic:
			r.GPUs = p.GPUs
		}
	}
	out := make([]slurmctl.Resize, 0, len(order))
	for _, id := range order {
		out = append(out, *by[id])
	}
	return out
}
