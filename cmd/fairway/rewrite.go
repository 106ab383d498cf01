package main

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/fairway-hpc/fairway/accounting"
	"github.com/fairway-hpc/fairway/policy"
	"github.com/fairway-hpc/fairway/slurmctl"
	"github.com/urfave/cli/v2"
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
// Off by default. In dry run, or while another serve holds the lease,
// nothing is written (neither the table nor a job) and the cycle logs what
// would be. The rules themselves are policy.Rewriter's.

// The rewrite rules serve can run (--rewrite-rules).
var rewriteRuleNames = []string{policy.RuleShare, policy.RuleCPUs, policy.RuleMemory, policy.RuleElastic}

// rewriteConfig is serve's validated rewriting settings.
type rewriteConfig struct {
	Partitions   []string // rewriting is on in these partitions only; empty: off
	Rules        map[string]bool
	Table        string        // the job_submit.lua table
	TableMaxAge  time.Duration // job_submit.lua ignores an older table
	HistoryDays  int
	RefreshEvery int     // cycles between history reloads
	CPUsPerGPU   float64 // 0: each partition's nodes' CPUs over their GPUs
	MemPerGPUMB  int64   // 0: each partition's nodes' memory over their GPUs
	ShareMaxUtil float64
	MinHistory   int
	Sacct        bool // read CPU and memory use from sacct
	ShardsPerGPU int
	DryRun       bool
	Cluster      string
	ExemptQOS    []string // serve's --exempt-qos: never resized either
}

func rewriteFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringSliceFlag{Name: "rewrite-partitions", Usage: "rewrite requests (GPU sharing, CPUs per GPU, elastic GPU counts) in these partitions; default: nowhere", EnvVars: []string{"FAIRWAY_REWRITE_PARTITIONS"}},
		&cli.StringFlag{Name: "rewrite-rules", Value: "share,cpus", Usage: "rewrite rules to run: some of " + strings.Join(rewriteRuleNames, ","), EnvVars: []string{"FAIRWAY_REWRITE_RULES"}},
		&cli.StringFlag{Name: "rewrite-table", Usage: "table file job_submit.lua reads (beside slurm.conf: fairway-rewrite.table); required by the share rule", EnvVars: []string{"FAIRWAY_REWRITE_TABLE"}},
		&cli.DurationFlag{Name: "rewrite-table-max-age", Value: 15 * time.Minute, Usage: "job_submit.lua ignores a table older than this (serve rewrites it every cycle)", EnvVars: []string{"FAIRWAY_REWRITE_TABLE_MAX_AGE"}},
		&cli.IntFlag{Name: "rewrite-history-days", Value: 60, Usage: "days of usage history the rules look at", EnvVars: []string{"FAIRWAY_REWRITE_HISTORY_DAYS"}},
		&cli.IntFlag{Name: "rewrite-refresh-every", Value: 10, Usage: "cycles between reloads of the usage history", EnvVars: []string{"FAIRWAY_REWRITE_REFRESH_EVERY"}},
		&cli.Float64Flag{Name: "rewrite-cpus-per-gpu", Usage: "GPU-proportional CPU share; 0: each partition's nodes' CPUs over their GPUs", EnvVars: []string{"FAIRWAY_REWRITE_CPUS_PER_GPU"}},
		&cli.Int64Flag{Name: "rewrite-mem-per-gpu", Usage: "GPU-proportional memory share in MB (memory rule); 0: each partition's nodes' memory over their GPUs", EnvVars: []string{"FAIRWAY_REWRITE_MEM_PER_GPU"}},
		&cli.Float64Flag{Name: "rewrite-share-max-util", Value: 50, Usage: "share a job's GPU only when its runs used at most this % of it (90th percentile)", EnvVars: []string{"FAIRWAY_REWRITE_SHARE_MAX_UTIL"}},
		&cli.IntFlag{Name: "rewrite-min-history", Value: 3, Usage: "measured runs of the same user and job name a rule needs", EnvVars: []string{"FAIRWAY_REWRITE_MIN_HISTORY"}},
		&cli.BoolFlag{Name: "rewrite-sacct", Value: true, Usage: "read jobs' CPU and memory use (TotalCPU, MaxRSS) from sacct", EnvVars: []string{"FAIRWAY_REWRITE_SACCT"}},
	}
}

// rewriteSettings validates the rewriting flags; shardsPerGPU, dry and
// cluster come from serve's own settings.
func rewriteSettings(c *cli.Context, shardsPerGPU int, dry bool, cluster string) (rewriteConfig, error) {
	cfg := rewriteConfig{
		Partitions: c.StringSlice("rewrite-partitions"), Table: c.String("rewrite-table"), TableMaxAge: c.Duration("rewrite-table-max-age"),
		HistoryDays: c.Int("rewrite-history-days"), RefreshEvery: c.Int("rewrite-refresh-every"), CPUsPerGPU: c.Float64("rewrite-cpus-per-gpu"),
		MemPerGPUMB: c.Int64("rewrite-mem-per-gpu"), ShareMaxUtil: c.Float64("rewrite-share-max-util"), MinHistory: c.Int("rewrite-min-history"),
		Sacct: c.Bool("rewrite-sacct"), ShardsPerGPU: shardsPerGPU, DryRun: dry, Cluster: cluster, Rules: map[string]bool{},
		ExemptQOS: c.StringSlice("exempt-qos"),
	}
	for _, r := range strings.Split(c.String("rewrite-rules"), ",") {
		if r = strings.TrimSpace(r); r == "" {
			continue
		}
		if !slices.Contains(rewriteRuleNames, r) {
			return cfg, fmt.Errorf("--rewrite-rules: unknown rule %q: want some of %s", r, strings.Join(rewriteRuleNames, ","))
		}
		cfg.Rules[r] = true
	}
	switch {
	case len(cfg.Partitions) == 0:
		return cfg, nil // off
	case len(cfg.Rules) == 0:
		return cfg, errors.New("--rewrite-rules: empty while --rewrite-partitions is set")
	case cfg.Rules[policy.RuleShare] && cfg.Table == "":
		return cfg, errors.New("--rewrite-table is required by the share rule: the file job_submit.lua reads (fairway-rewrite.table beside slurm.conf)")
	case cfg.Rules[policy.RuleShare] && cfg.ShardsPerGPU < 2:
		return cfg, fmt.Errorf("--shards-per-gpu %d: the share rule needs at least 2", cfg.ShardsPerGPU)
	case cfg.TableMaxAge < time.Minute:
		return cfg, fmt.Errorf("--rewrite-table-max-age %s: want at least 1m", cfg.TableMaxAge)
	case cfg.HistoryDays < 1 || cfg.RefreshEvery < 1 || cfg.MinHistory < 1:
		return cfg, errors.New("--rewrite-history-days, --rewrite-refresh-every and --rewrite-min-history must be at least 1")
	case cfg.CPUsPerGPU < 0 || cfg.MemPerGPUMB < 0:
		return cfg, errors.New("--rewrite-cpus-per-gpu and --rewrite-mem-per-gpu must not be negative")
	case cfg.ShareMaxUtil <= 0 || cfg.ShareMaxUtil > 100:
		return cfg, fmt.Errorf("--rewrite-share-max-util %g: want more than 0 and at most 100", cfg.ShareMaxUtil)
	}
	if cfg.Table != "" {
		if st, err := os.Stat(filepath.Dir(cfg.Table)); err != nil || !st.IsDir() {
			return cfg, fmt.Errorf("--rewrite-table %s: its directory must exist", cfg.Table)
		}
	}
	return cfg, nil
}

// usageSource is where the rules' history comes from (accounting.Store).
type usageSource interface {
	UsageSamples(ctx context.Context, cluster string, since time.Time) ([]policy.UsageSample, error)
}

// resizer changes pending jobs' requests and reads their comments
// (slurmctl.ResizeWriter).
type resizer interface {
	Resize(ctx context.Context, jobs []slurmctl.Job, want []slurmctl.Resize) (slurmctl.ResizeReport, error)
	Comments(ctx context.Context) (map[int64]string, error)
}

// rewriter runs the rewrite rules inside serve's cycle.
type rewriter struct {
	cfg    rewriteConfig
	log    *slog.Logger
	usage  usageSource
	cpuUse func(ctx context.Context, since, until time.Time) (map[int64]accounting.CPUUse, error) // nil: not read
	write  resizer                                                                                // as configured (dry run or not)
	plan   resizer                                                                                // dry run, for followers
	now    func() time.Time

	share    *policy.Rewriter // profiles and the share rule (serve's shards per GPU)
	profiles map[policy.ProfileKey]*policy.UsageProfile
	loadedAt int64 // cycle of the last history load; 0: never
	elastic  map[int64]bool
}

// rewriteReport is what one cycle's rewriting decided.
type rewriteReport struct {
	Rules        []policy.ShareRule // the table's rows
	TableWritten bool
	Proposals    []policy.Proposal
	Resize       slurmctl.ResizeReport
	DryRun       bool
}

func newRewriter(cfg rewriteConfig, log *slog.Logger, usage usageSource, write, plan resizer) (*rewriter, error) {
	share, err := policy.NewRewriter(policy.RewriteParams{ShardsPerGPU: cfg.ShardsPerGPU, MinHistory: cfg.MinHistory, ShareMaxUtilPct: cfg.ShareMaxUtil})
	if err != nil {
		return nil, err
	}
	rw := &rewriter{cfg: cfg, log: log, usage: usage, write: write, plan: plan, now: time.Now, share: share, elastic: map[int64]bool{}}
	if cfg.Sacct {
		rw.cpuUse = func(ctx context.Context, since, until time.Time) (map[int64]accounting.CPUUse, error) {
			return accounting.SacctUsage(ctx, "", nil, since, until)
		}
	}
	return rw, nil
}

// refresh reloads the usage history into profiles.
func (rw *rewriter) refresh(ctx context.Context) error {
	now := rw.now()
	since := now.AddDate(0, 0, -rw.cfg.HistoryDays)
	samples, err := rw.usage.UsageSamples(ctx, rw.cfg.Cluster, since)
	if err != nil {
		return err
	}
	if rw.cpuUse != nil && (rw.cfg.Rules[policy.RuleCPUs] || rw.cfg.Rules[policy.RuleMemory]) {
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

// cycle runs the rules on one read of the cluster. predicted and ranking
// are the engine's (elastic jobs are judged in Fairway's order); leader
// says whether this process may write. It never fails the serve cycle:
// problems are logged and the report says what was done.
func (rw *rewriter) cycle(ctx context.Context, n int64, cl *slurmctl.Cluster,
	predicted map[int64]time.Duration, ranking []policy.Score, leader bool) *rewriteReport {
	log := rw.log.With("cycle", n)
	rep := &rewriteReport{DryRun: rw.cfg.DryRun || !leader}
	if rw.loadedAt == 0 || n-rw.loadedAt >= int64(rw.cfg.RefreshEvery) {
		if err := rw.refresh(ctx); err != nil {
			log.Warn("rewrite: load usage history", "err", err)
			if rw.profiles == nil {
				return rep // nothing to judge by yet
			}
		} else {
			rw.loadedAt = n
		}
	}
	keys := make([]policy.ProfileKey, 0, len(rw.profiles))
	for k := range rw.profiles {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b policy.ProfileKey) int {
		return strings.Compare(a.User+"\x00"+a.Name, b.User+"\x00"+b.Name)
	})

	if rw.cfg.Rules[policy.RuleShare] {
		for _, k := range keys {
			if r, ok := rw.share.Share(rw.profiles[k]); ok && tableSafe(r.User) && tableSafe(r.Name) {
				rep.Rules = append(rep.Rules, r)
			}
		}
		if rep.DryRun {
			log.Info("rewrite: dry run: would write the share table", "path", rw.cfg.Table, "rules", len(rep.Rules))
		} else if err := writeRewriteTable(rw.cfg.Table, rw.now(), rw.cfg.TableMaxAge, rw.cfg.Partitions, rep.Rules); err != nil {
			log.Error("rewrite: write the share table", "path", rw.cfg.Table, "err", err)
		} else {
			rep.TableWritten = true
		}
	}

	if rw.cfg.Rules[policy.RuleCPUs] || rw.cfg.Rules[policy.RuleMemory] || rw.cfg.Rules[policy.RuleElastic] {
		w := rw.write
		if rep.DryRun {
			w = rw.plan
		}
		comments, err := w.Comments(ctx)
		if err != nil {
			log.Warn("rewrite: cannot read job comments (opt-outs): no job resized this cycle", "err", err)
			return rep
		}
		rep.Proposals = rw.propose(cl, comments, predicted, ranking)
		want := mergeProposals(rep.Proposals)
		if len(want) > 0 {
			rep.Resize, err = w.Resize(ctx, cl.Jobs, want)
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
						"gpus", p.GPUs, "reason", p.Reason, "dry_run", rep.DryRun)
				}
			}
			if !rep.DryRun {
				for _, c := range rep.Resize.Applied {
					if c.GPUs > 0 {
						rw.elastic[c.JobID] = true
					}
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
func (rw *rewriter) propose(cl *slurmctl.Cluster, comments map[int64]string, predicted map[int64]time.Duration, ranking []policy.Score) []policy.Proposal {
	rank := make(map[int64]int, len(ranking))
	for i, s := range ranking {
		rank[s.JobID] = i
	}
	byPart := map[string][]*slurmctl.Job{}
	for i := range cl.Jobs {
		j := &cl.Jobs[i]
		if !j.Pending() || j.HetJob || j.ArrayTasks != "" || policy.OptedOut(comments[j.ID]) || slices.Contains(rw.cfg.ExemptQOS, j.QOS) {
			continue
		}
		parts := strings.Split(j.Partition, ",")
		ok := true
		for _, p := range parts {
			ok = ok && slices.Contains(rw.cfg.Partitions, p)
		}
		if ok {
			byPart[parts[0]] = append(byPart[parts[0]], j)
		}
	}
	var out []policy.Proposal
	for _, part := range rw.cfg.Partitions {
		jobs := byPart[part]
		if len(jobs) == 0 {
			continue
		}
		sh, ok := shape(cl, part)
		if !ok {
			continue
		}
		slices.SortStableFunc(jobs, func(a, b *slurmctl.Job) int {
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
		})
		// Shards per GPU as the nodes declare them, else serve's setting.
		p := policy.RewriteParams{ShardsPerGPU: sh.shardsPerGPU, MinHistory: rw.cfg.MinHistory, GPUsPerNode: sh.maxFreeOnNode}
		if p.ShardsPerGPU == 0 {
			p.ShardsPerGPU = rw.cfg.ShardsPerGPU
		}
		if rw.cfg.Rules[policy.RuleCPUs] {
			p.CPUsPerGPU, p.NodeCPUs = rw.cfg.CPUsPerGPU, sh.nodeCPUs
			if p.CPUsPerGPU == 0 {
				p.CPUsPerGPU = sh.cpusPerGPU
			}
		}
		if rw.cfg.Rules[policy.RuleMemory] {
			p.MemPerGPUMB, p.NodeMemMB = rw.cfg.MemPerGPUMB, sh.nodeMem
			if p.MemPerGPUMB == 0 {
				p.MemPerGPUMB = int64(sh.memPerGPU)
			}
		}
		rules, err := policy.NewRewriter(p)
		if err != nil {
			rw.log.Warn("rewrite: partition settings", "partition", part, "err", err)
			continue
		}
		gpus := map[int64]int{}
		if rw.cfg.Rules[policy.RuleElastic] {
			free := sh.free
			var cands []policy.ElasticJob
			for _, j := range jobs {
				lo, hi, isElastic, err := policy.ParseElastic(comments[j.ID])
				if err != nil {
					rw.log.Warn("rewrite: ignoring a malformed elastic marker", "job_id", j.ID, "err", err)
				}
				if !isElastic || err != nil || rw.elastic[j.ID] {
					if need := j.GPUs; need > 0 && need <= free {
						free -= need // ranked ahead: it takes its GPUs first
					}
					continue
				}
				cands = append(cands, policy.ElasticJob{Job: &j.Job, Min: lo, Max: hi, Profile: rw.profiles[policy.ProfileKey{User: j.User, Name: j.Name}], Predicted: predicted[j.ID]})
			}
			for _, pr := range rules.Elastic(cands, free) {
				out = append(out, pr)
				gpus[pr.JobID] = pr.GPUs
			}
		}
		if rw.cfg.Rules[policy.RuleCPUs] || rw.cfg.Rules[policy.RuleMemory] {
			for _, j := range jobs {
				jj := j.Job
				if g, ok := gpus[j.ID]; ok {
					jj.GPUs = g // CPUs and memory follow the new GPU count
				}
				out = append(out, rules.Resources(&jj, rw.profiles[policy.ProfileKey{User: j.User, Name: j.Name}])...)
			}
		}
	}
	return out
}

// mergeProposals turns per-rule proposals into one resize per job.
func mergeProposals(ps []policy.Proposal) []slurmctl.Resize {
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
		case policy.RuleCPUs:
			r.CPUs = p.CPUs
		case policy.RuleMemory:
			r.MemoryMB = p.MemoryMB
		case policy.RuleElastic:
			r.GPUs = p.GPUs
		}
	}
	out := make([]slurmctl.Resize, 0, len(order))
	for _, id := range order {
		out = append(out, *by[id])
	}
	return out
}

// tableSafe reports whether a user or job name can be a field of the
// table: no tab, newline or carriage return (the field separators).
func tableSafe(s string) bool { return s != "" && !strings.ContainsAny(s, "\t\n\r") }

// renderRewriteTable renders the table job_submit.lua reads (its format
// is documented at the top of contrib/slurm/job_submit.lua).
func renderRewriteTable(now time.Time, maxAge time.Duration, partitions []string, rules []policy.ShareRule) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "# Written by fairway serve for contrib/slurm/job_submit.lua at %s; do not edit.\n", now.UTC().Format(time.RFC3339))
	fmt.Fprintf(&b, "fairway-rewrite\t1\ngenerated\t%d\nmax_age\t%d\n", now.Unix(), int64(maxAge.Seconds()))
	for _, p := range partitions {
		if tableSafe(p) {
			fmt.Fprintf(&b, "partition\t%s\n", p)
		}
	}
	for _, r := range rules {
		fmt.Fprintf(&b, "# %s\nshard\t%s\t%d\t%s\n", strings.NewReplacer("\n", " ", "\r", " ").Replace(r.Reason), r.User, r.Shards, r.Name)
	}
	return b.Bytes()
}

// writeRewriteTable writes the table atomically: a temporary file in the
// same directory, synced, then renamed over the old one, so job_submit.lua
// reads either the old table or the new one, never a part.
func writeRewriteTable(path string, now time.Time, maxAge time.Duration, partitions []string, rules []policy.ShareRule) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return fmt.Errorf("write rewrite table: %w", err)
	}
	tmp := f.Name()
	defer os.Remove(tmp) // a no-op once renamed
	if _, err := f.Write(renderRewriteTable(now, maxAge, partitions, rules)); err != nil {
		f.Close()
		return fmt.Errorf("write rewrite table: %w", err)
	}
	if err := f.Chmod(0o644); err != nil {
		f.Close()
		return fmt.Errorf("write rewrite table: %w", err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("write rewrite table: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("write rewrite table: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("write rewrite table: %w", err)
	}
	return nil
}

// buildRewriter wires the rewriter for serve, or returns nil when
// rewriting is off.
func buildRewriter(cfg rewriteConfig, store usageSource, base *slog.Logger) (*rewriter, error) {
	if len(cfg.Partitions) == 0 {
		return nil, nil
	}
	log := base.With("component", "rewrite")
	write, err := slurmctl.NewResizeWriter(slurmctl.ResizeConfig{DryRun: cfg.DryRun}, log)
	if err != nil {
		return nil, err
	}
	plan, err := slurmctl.NewResizeWriter(slurmctl.ResizeConfig{DryRun: true}, log)
	if err != nil {
		return nil, err
	}
	return newRewriter(cfg, log, store, write, plan)
}

// printRewrite prints a cycle's rewriting for `serve --once`.
func printRewrite(w io.Writer, rep *rewriteReport) error {
	if rep == nil {
		return nil
	}
	mode := "written"
	if rep.DryRun {
		mode = "dry run: nothing written"
	}
	fmt.Fprintf(w, "\nrewrite: %d share rules (table %s), %d job changes planned, %d applied, %d failed (%s)\n",
		len(rep.Rules), map[bool]string{true: "written", false: "not written"}[rep.TableWritten],
		len(rep.Resize.Planned), len(rep.Resize.Applied), len(rep.Resize.Failed), mode)
	if len(rep.Rules) > 0 {
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "USER\tJOB NAME\tSHARDS\tREASON")
		for _, r := range rep.Rules {
			fmt.Fprintf(tw, "%s\t%s\t%d\t%s\n", r.User, r.Name, r.Shards, r.Reason)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	if len(rep.Proposals) > 0 {
		fmt.Fprintln(tw, "JOB\tRULE\tFROM\tTO\tREASON")
		for _, p := range rep.Proposals {
			to := int64(p.CPUs)
			switch p.Rule {
			case policy.RuleMemory:
				to = p.MemoryMB
			case policy.RuleElastic:
				to = int64(p.GPUs)
			}
			fmt.Fprintf(tw, "%d\t%s\t%d\t%d\t%s\n", p.JobID, p.Rule, p.From, to, p.Reason)
		}
		for _, sk := range rep.Resize.Skipped {
			fmt.Fprintf(tw, "%d\t-\t\t\tnot changed: %s\n", sk.JobID, sk.Reason)
		}
	}
	return tw.Flush()
}
