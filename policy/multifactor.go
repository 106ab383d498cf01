package policy

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"sync"
	"time"
)

// MultifactorParams are a site's priority/multifactor settings, as
// `scontrol show config` prints them (slurmctl.ReadPriorityConfig reads
// them). The zero value is Slurm's defaults with every weight 0: a site's
// settings must be given for the policy to rank by anything but age ties.
type MultifactorParams struct {
	// Weights: PriorityWeightAge, ...Fairshare, ...JobSize, ...Partition,
	// ...QOS. Slurm multiplies each normalised factor by its weight and
	// truncates the sum to an integer.
	WeightAge, WeightFairshare, WeightJobSize, WeightPartition, WeightQOS float64
	// MaxAge is PriorityMaxAge, where the age factor reaches 1. 0 means
	// Slurm's default, 7 days.
	MaxAge time.Duration
	// FavorSmall is PriorityFavorSmall: the job size factor grows as the
	// job shrinks.
	FavorSmall bool
	// SizeRelative is PriorityFlags=SMALL_RELATIVE_TO_TIME: the job size
	// factor is the job's CPUs divided by its time limit in minutes.
	SizeRelative bool
	// NoNormalPartition is PriorityFlags=NO_NORMAL_PART: the partition
	// factor is PriorityJobFactor itself, not divided by the highest.
	NoNormalPartition bool
	// FairTree ranks fair share by Slurm's Fair Tree, its default since
	// 19.05 (PriorityFlags without NO_FAIR_TREE), instead of the classic
	// factor.
	FairTree bool
	// DecayHalfLife is PriorityDecayHalfLife. The fair-share usage it
	// decays is the Ledger's, so the cycle owner must build its Ledger
	// with it (LedgerParams); NewMultifactor only checks it.
	DecayHalfLife time.Duration
	// Dampening is FairShareDampeningFactor. 0 means Slurm's default, 1.
	Dampening float64
	// PartitionFactor is each partition's PriorityJobFactor (scontrol
	// show partition). A partition not named has Slurm's default, 1.
	PartitionFactor map[string]float64
	// QOSPriority is each QOS's Priority (sacctmgr show qos); the QOS
	// factor is it divided by the highest. A QOS not named has 0.
	QOSPriority map[string]float64
	// ClusterNodes and ClusterCPUs are the cluster's size, which the job
	// size factor is relative to. Required when WeightJobSize > 0.
	ClusterNodes, ClusterCPUs int
	// CalcPeriod is PriorityCalcPeriod. When set, the policy ranks as
	// slurmctld does between its recalculations, at CalcEpoch + k ×
	// CalcPeriod: an association's fair-share factor is the one of the
	// last recalculation (of the first ranking after it: the usage the
	// Ledger charged by then), and a job's age the one it had then (0 for
	// a job submitted since). 0 recomputes every factor at every ranking.
	CalcPeriod time.Duration
	// CalcEpoch is when slurmctld's recalculations are counted from: its
	// start (`scontrol show config`'s BOOT_TIME). Zero: the Unix epoch.
	CalcEpoch time.Time
	// WeightTRES is PriorityWeightTRES by TRES name in lower case, as
	// slurmdbd names them: "cpu", "mem" (MB), "node", "gres/gpu",
	// "gres/gpu:h100", "gres/shard". Names a Job does not count (billing,
	// licenses, energy) are refused: ParsePriorityConfig leaves them out
	// and says so.
	WeightTRES map[string]float64
	// PartitionTRES is each partition's TRES totals (scontrol show
	// partition's TRES=), by partition and then TRES name; the entry ""
	// is for a job whose partition is not listed: the default
	// partition's, or the whole cluster's.
	// A TRES with no total gives the job a factor of 0, as slurmctld
	// does for a partition without that TRES.
	PartitionTRES map[string]map[string]float64
	// NoNormalTRES is PriorityFlags=NO_NORMAL_TRES: a TRES factor is the
	// job's count itself, not divided by the partition's total.
	NoNormalTRES bool
	// WeightAssoc is PriorityWeightAssoc, and AssocPriority each
	// association's Priority by account and user (User "" for an
	// account's own), as `sacctmgr show associations` prints it: where an
	// association sets none, the one it inherits. The association factor
	// is the job's association's priority divided by AssocMax, the
	// highest of every association's (slurmctld's g_assoc_max_priority,
	// partition-specific associations included; 0: the highest in
	// AssocPriority), or with NoNormalAssoc (PriorityFlags=
	// NO_NORMAL_ASSOC) the priority itself. A job without an account
	// takes its user's association when the user has one; a job whose
	// association is not listed has 0.
	WeightAssoc   float64
	AssocPriority map[Assoc]float64
	AssocMax      float64
	NoNormalAssoc bool
}

// TRESNames are the TRES a Job counts, which WeightTRES may weigh: a
// typed GPU TRES ("gres/gpu:h100") counts the GPUs of jobs of that type.
var TRESNames = []string{"cpu", "mem", "node", "gres/gpu", "gres/shard"}

// tresCount is job j's count of TRES name (one of TRESNames, or
// "gres/gpu:TYPE"): what slurmctld holds in a pending job's tres_req_cnt.
func tresCount(j *Job, name string) float64 {
	switch name {
	case "cpu":
		return float64(max(0, j.CPUs))
	case "mem":
		return float64(max(0, j.MemoryMB))
	case "node":
		return float64(max(1, j.Nodes))
	case "gres/gpu":
		return float64(max(0, j.GPUs))
	case "gres/shard":
		return float64(max(0, j.Shards))
	}
	if typ, ok := strings.CutPrefix(name, "gres/gpu:"); ok && strings.EqualFold(typ, j.GPUType) {
		return float64(max(0, j.GPUs))
	}
	return 0
}

// CountsTRES reports whether name is a TRES a Job counts (TRESNames, or
// "gres/gpu:TYPE").
func CountsTRES(name string) bool {
	if slices.Contains(TRESNames, name) {
		return true
	}
	typ, ok := strings.CutPrefix(name, "gres/gpu:")
	return ok && typ != "" && !strings.ContainsAny(typ, ",=")
}

// multifactor is Slurm's priority/multifactor plugin with a site's own
// settings (Slurm documentation, "Multifactor Priority Plugin"):
//
//	priority = ⌊ W_age·age + W_fs·fairshare + W_js·jobsize + W_part·partition + W_qos·qos + W_assoc·assoc + tres ⌋, at least 1
//
//	age       = min(1, (now − eligible)/PriorityMaxAge)
//	fairshare = 2^(−(UE_u/S_u)/FairShareDampeningFactor)  (the classic factor, see fairshare),
//	            or with FairTree the user's rank in the tree over the number of users (fairTreeFactors)
//	jobsize   = (nodes/N + cpus/C)/2, or with PriorityFavorSmall
//	            ((N − nodes)/N [0 when nodes ≥ N] + (C − cpus)/C)/2; with
//	            SMALL_RELATIVE_TO_TIME max(nodes·C/N, cpus)/limit_minutes/C
//	            (favor small: 1 minus it); clamped to [0, 1]. N, C: the
//	            cluster's nodes and CPUs.
//	partition = PriorityJobFactor(p) / max over partitions
//	qos       = Priority(q) / max over QOS
//	assoc     = Priority(a) / max over associations
//	tres      = Σ PriorityWeightTRES(t) · count_t / total_t(p)  (already weighted: slurmctld
//	            adds it as it is; with NO_NORMAL_TRES Σ weight · count)
//
// Equal priorities go to the older job, then the lower id. Parts: priority
// (the truncated sum, the Value), the six normalised factors and the
// weighted TRES sum.
//
// Where it differs from slurmctld: usage is the Ledger's GPU-seconds,
// decayed continuously, where Slurm charges TRES-billing CPU-seconds once
// per PriorityCalcPeriod and recomputes pending jobs' priorities only then
// (and at submit) — with CalcPeriod set, the policy holds the factors
// between recalculations as slurmctld does; Fair Tree's tree has two levels, and users directly
// under the root are users of an account of that name; nice and the site factor are left
// out, and of the TRES only those a Job counts (TRESNames); a partition-specific association's priority is
// counted in the highest only. A job in several partitions has one priority,
// its highest (partitionTerms), where slurmctld keeps one per partition.
type multifactor struct {
	p MultifactorParams
	// tresNames are WeightTRES's names in order, so that the TRES sum,
	// and the integer priority it is truncated into, is the same on
	// every ranking (a map's order is not).
	tresNames []string
	maxAge    float64
	maxPF     float64
	maxQOS    float64
	// maxAssoc is AssocMax (or the highest in AssocPriority), and
	// userAssoc the priority of each user's association for a job that
	// names no account, for the users with exactly one.
	maxAssoc  float64
	userAssoc map[string]float64
	sc        scorer

	// With CalcPeriod: the recalculation the factors in frozen are of,
	// and each association's fair-share factor then.
	mu     sync.Mutex
	tick   time.Time
	frozen map[Assoc]float64
}

// NewMultifactor returns the "slurm" policy.
func NewMultifactor(p MultifactorParams) (Policy, error) {
	for name, w := range map[string]float64{"PriorityWeightAge": p.WeightAge, "PriorityWeightFairshare": p.WeightFairshare,
		"PriorityWeightJobSize": p.WeightJobSize, "PriorityWeightPartition": p.WeightPartition, "PriorityWeightQOS": p.WeightQOS,
		"PriorityWeightAssoc": p.WeightAssoc} {
		if w < 0 || math.IsNaN(w) || math.IsInf(w, 0) {
			return nil, fmt.Errorf("slurm: %s %v: want a finite weight >= 0", name, w)
		}
	}
	if p.CalcPeriod < 0 {
		return nil, fmt.Errorf("slurm: PriorityCalcPeriod %v: want >= 0", p.CalcPeriod)
	}
	if p.MaxAge < 0 || p.Dampening < 0 || math.IsNaN(p.Dampening) {
		return nil, fmt.Errorf("slurm: PriorityMaxAge %v, FairShareDampeningFactor %v: want >= 0", p.MaxAge, p.Dampening)
	}
	for name, w := range p.WeightTRES {
		if !CountsTRES(name) {
			return nil, fmt.Errorf("slurm: PriorityWeightTRES %s: not a TRES a job's request counts (want one of %s or gres/gpu:TYPE)", name, strings.Join(TRESNames, ", "))
		}
		if w < 0 || math.IsNaN(w) || math.IsInf(w, 0) {
			return nil, fmt.Errorf("slurm: PriorityWeightTRES %s=%v: want a finite weight >= 0", name, w)
		}
	}
	for part, totals := range p.PartitionTRES {
		for name, v := range totals {
			if v < 0 || math.IsNaN(v) || math.IsInf(v, 0) {
				return nil, fmt.Errorf("slurm: partition %q TRES %s=%v: want a finite total >= 0", part, name, v)
			}
		}
	}
	if p.WeightJobSize > 0 && (p.ClusterNodes <= 0 || p.ClusterCPUs <= 0) {
		return nil, fmt.Errorf("slurm: PriorityWeightJobSize %v needs the cluster's size: %d nodes, %d CPUs", p.WeightJobSize, p.ClusterNodes, p.ClusterCPUs)
	}
	if p.MaxAge == 0 {
		p.MaxAge = 7 * 24 * time.Hour
	}
	if p.Dampening == 0 {
		p.Dampening = 1
	}
	m := &multifactor{p: p, tresNames: slices.Sorted(maps.Keys(p.WeightTRES)), maxAge: p.MaxAge.Seconds(), maxPF: 1, sc: scorer{
		names:   []string{"priority", "age", "fairshare", "jobsize", "partition", "qos", "assoc", "tres"},
		weights: []float64{1, 0, 0, 0, 0, 0, 0, 0},
	}}
	for name, f := range p.PartitionFactor {
		if f < 0 || math.IsNaN(f) {
			return nil, fmt.Errorf("slurm: partition %q PriorityJobFactor %v: want >= 0", name, f)
		}
		m.maxPF = max(m.maxPF, f)
	}
	for name, q := range p.QOSPriority {
		if q < 0 || math.IsNaN(q) {
			return nil, fmt.Errorf("slurm: QOS %q priority %v: want >= 0", name, q)
		}
		m.maxQOS = max(m.maxQOS, q)
	}
	if p.AssocMax < 0 || math.IsNaN(p.AssocMax) || math.IsInf(p.AssocMax, 0) {
		return nil, fmt.Errorf("slurm: highest association priority %v: want a finite number >= 0", p.AssocMax)
	}
	m.maxAssoc = p.AssocMax
	users := map[string]int{}
	for a, v := range p.AssocPriority {
		if v < 0 || math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, fmt.Errorf("slurm: association %s/%s priority %v: want a finite number >= 0", a.Account, a.User, v)
		}
		m.maxAssoc = max(m.maxAssoc, v)
		if a.User != "" {
			users[a.User]++
		}
	}
	for a, v := range p.AssocPriority {
		if a.User != "" && users[a.User] == 1 {
			if m.userAssoc == nil {
				m.userAssoc = map[string]float64{}
			}
			m.userAssoc[a.User] = v
		}
	}
	return m, nil
}

func (*multifactor) Name() string { return "slurm" }

// factors returns job j's normalised factors at now and its weighted
// TRES sum; ff is its association's fair-share factor.
func (m *multifactor) factors(j *Job, now time.Time, ff float64) (age, fs, js, part, qos, assoc, tres float64) {
	age = min(1, max(0, now.Sub(waitingSince(j)).Seconds()/m.maxAge))
	fs = ff
	if m.p.WeightJobSize > 0 {
		js = m.jobSize(j)
	}
	part, tres = m.partitionTerms(j)
	if m.maxQOS > 0 {
		qos = m.p.QOSPriority[j.QOS] / m.maxQOS
	}
	if m.p.WeightAssoc > 0 {
		assoc = m.assoc(j)
	}
	return
}

// assoc is job j's association factor: its association's priority over
// the highest (priority_norm), or with NoNormalAssoc the priority itself.
func (m *multifactor) assoc(j *Job) float64 {
	var v float64
	if j.Account == "" {
		v = m.userAssoc[j.User]
	} else {
		v = m.p.AssocPriority[AssocOf(j)]
	}
	switch {
	case m.p.NoNormalAssoc:
		return v
	case m.maxAssoc > 0:
		return v / m.maxAssoc
	}
	return 0
}

// partitionTerms returns job j's partition factor and weighted TRES sum.
// A job submitted to several partitions ("gpu,gpuhi") waits in each
// partition's queue at that partition's priority (slurmctld keeps one per
// partition) and is considered first where it is highest: its terms are
// those of the partition where they weigh most.
func (m *multifactor) partitionTerms(j *Job) (part, tres float64) {
	if !strings.Contains(j.Partition, ",") {
		return m.partitionFactor(j.Partition), m.tres(j, j.Partition)
	}
	best := math.Inf(-1)
	for name := range strings.SplitSeq(j.Partition, ",") {
		name = strings.TrimSpace(name)
		f, t := m.partitionFactor(name), m.tres(j, name)
		if v := m.p.WeightPartition*f + t; v > best {
			best, part, tres = v, f, t
		}
	}
	return part, tres
}

// partitionFactor is partition name's normalised PriorityJobFactor.
func (m *multifactor) partitionFactor(name string) float64 {
	pf, ok := m.p.PartitionFactor[name]
	if !ok {
		pf = 1
	}
	if m.p.NoNormalPartition {
		return pf
	}
	return pf / m.maxPF
}

// tres is job j's weighted TRES sum in partition part: Σ weight · count /
// the partition's total (priority_multifactor.c: _get_tres_factors,
// _get_tres_prio_weighted).
func (m *multifactor) tres(j *Job, part string) float64 {
	if len(m.p.WeightTRES) == 0 {
		return 0
	}
	totals, ok := m.p.PartitionTRES[part]
	if !ok {
		totals = m.p.PartitionTRES[""]
	}
	sum := 0.0
	for _, name := range m.tresNames {
		w, v := m.p.WeightTRES[name], tresCount(j, name)
		switch {
		case w == 0 || v == 0:
		case m.p.NoNormalTRES:
			sum += w * v
		case totals[name] > 0:
			sum += w * v / totals[name]
		}
	}
	return sum
}

// jobSize is Slurm's job size factor of j (see multifactor).
func (m *multifactor) jobSize(j *Job) float64 {
	n, c := float64(m.p.ClusterNodes), float64(m.p.ClusterCPUs)
	nodes, cpus := float64(max(1, j.Nodes)), float64(max(0, j.CPUs))
	var f float64
	switch {
	case m.p.SizeRelative:
		f = max(nodes*c/n, cpus)
		if lim := j.TimeLimit.Minutes(); lim >= 1 {
			f /= math.Floor(lim)
		}
		f /= c
		if m.p.FavorSmall {
			f = 1 - f
		}
	case m.p.FavorSmall:
		if n > nodes {
			f = (n - nodes) / n
		}
		if cpus > 0 {
			f = (f + (c-cpus)/c) / 2
		}
	default:
		f = nodes / n
		if cpus > 0 {
			f = (f + cpus/c) / 2
		}
	}
	return min(1, max(0, f))
}

func (m *multifactor) Rank(s *Snapshot) ([]Score, error) {
	var ffs []fsFactor
	g, done := pooledGroups(s.Pending)
	defer done()
	switch {
	case m.p.WeightFairshare > 0 && m.p.FairTree:
		ft := fairTreeFactors(s, g.keys)
		ffs = make([]fsFactor, len(g.keys))
		for x, a := range g.keys {
			ffs[x].f = ft[a]
		}
	case m.p.WeightFairshare > 0:
		ffs = fairshareFactors(s, g, shareSums(s, g.keys), m.p.Dampening)
	}
	ageAt := s.Now
	if m.p.CalcPeriod > 0 {
		ageAt = m.freeze(s.Now, g.keys, ffs)
	}
	const k = 8
	parts := s.partsBuf(k * len(s.Pending))
	for i := range s.Pending {
		j := &s.Pending[i]
		ff := 0.0
		if ffs != nil {
			ff = ffs[g.of[i]].f
		}
		m.row(j, ageAt, ff, parts[k*i:k*i+k])
	}
	scores, err := m.sc.rank(s, parts, nil)
	if err != nil {
		return nil, fmt.Errorf("slurm: %w", err)
	}
	return scores, nil
}

// freeze makes ffs (the fair-share factors of keys at now) the ones of
// the last recalculation before now, keeping each association's factor
// from the first ranking since that recalculation, and returns the
// instant ages are counted to: that recalculation's.
func (m *multifactor) freeze(now time.Time, keys []Assoc, ffs []fsFactor) time.Time {
	per, epoch := m.p.CalcPeriod, m.p.CalcEpoch
	if epoch.IsZero() {
		epoch = time.Unix(0, 0)
	}
	since := now.Sub(epoch)
	n := since / per
	if since < 0 && since%per != 0 {
		n--
	}
	tick := epoch.Add(n * per)
	m.mu.Lock()
	defer m.mu.Unlock()
	if !tick.Equal(m.tick) || m.frozen == nil {
		m.tick, m.frozen = tick, map[Assoc]float64{}
	}
	for x, a := range keys {
		if ffs == nil {
			break
		}
		if f, ok := m.frozen[a]; ok {
			ffs[x].f = f
		} else {
			m.frozen[a] = ffs[x].f
		}
	}
	return tick
}

// row fills j's score parts, its ages counted to ageAt, ff its
// association's fair-share factor.
func (m *multifactor) row(j *Job, ageAt time.Time, ff float64, row []float64) {
	age, fs, js, part, qos, assoc, tres := m.factors(j, ageAt, ff)
	sum := m.p.WeightAge*age + m.p.WeightFairshare*fs + m.p.WeightJobSize*js + m.p.WeightPartition*part + m.p.WeightQOS*qos + m.p.WeightAssoc*assoc + tres
	row[0], row[1], row[2], row[3], row[4], row[5], row[6], row[7] = max(1, math.Floor(sum)), age, fs, js, part, qos, assoc, tres
}

// With PriorityWeightAge and PriorityWeightFairshare at 0 (Slurm's
// defaults) a job's priority depends on the job alone (size, partition,
// QOS, association), so its order of two waiting jobs never changes: the age and
// fair-share factors, both in [0, 1], add 0 × factor = 0 to the sum
// whenever they are computed.
func (m *multifactor) staticOrder() bool { return m.p.WeightAge == 0 && m.p.WeightFairshare == 0 }

func (m *multifactor) staticKey(s *Snapshot, j *Job) (float64, error) {
	var row [8]float64
	m.row(j, s.Now, 0, row[:])
	return m.sc.value(row[:]), nil
}

// WhatMovesIt names the factors of the site's formula that carry weight.
func (m *multifactor) WhatMovesIt(map[string]float64) string {
	var levers []string
	if m.p.WeightAge > 0 {
		levers = append(levers, fmt.Sprintf("its own wait (age, weight %g, full after %s)", m.p.WeightAge, m.p.MaxAge))
	}
	if m.p.WeightFairshare > 0 {
		levers = append(levers, fmt.Sprintf("its user's fair-share usage decaying (weight %g)", m.p.WeightFairshare))
	}
	if m.p.WeightJobSize > 0 {
		dir := "a larger"
		if m.p.FavorSmall {
			dir = "a smaller"
		}
		levers = append(levers, fmt.Sprintf("%s request (job size, weight %g)", dir, m.p.WeightJobSize))
	}
	if m.p.WeightPartition > 0 {
		levers = append(levers, fmt.Sprintf("a partition with a higher PriorityJobFactor (weight %g)", m.p.WeightPartition))
	}
	if m.p.WeightQOS > 0 {
		levers = append(levers, fmt.Sprintf("a QOS with a higher priority (weight %g)", m.p.WeightQOS))
	}
	if m.p.WeightAssoc > 0 {
		levers = append(levers, fmt.Sprintf("an association with a higher priority (weight %g)", m.p.WeightAssoc))
	}
	var tres []string
	for name, w := range m.p.WeightTRES {
		if w > 0 {
			tres = append(tres, fmt.Sprintf("%s %g", name, w))
		}
	}
	if len(tres) > 0 {
		slices.Sort(tres)
		levers = append(levers, fmt.Sprintf("a larger request of its partition's TRES (weights %s)", strings.Join(tres, ", ")))
	}
	if len(levers) == 0 {
		return "nothing: every PriorityWeight is 0, so jobs run oldest first."
	}
	return strings.Join(levers, "; ") + "."
}
