package slurmctl

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/fairway-hpc/fairway/policy"
)

// PriorityConfig is what slurmctld ranks pending jobs by, as `scontrol show
// config` prints it: the multifactor settings the "slurm" policy replays,
// and the scheduling cadence that decides when Slurm acts on them.
type PriorityConfig struct {
	// Type is PriorityType: priority/multifactor or priority/basic.
	Type string
	// Multifactor holds the weights, PriorityMaxAge, PriorityFavorSmall,
	// PriorityDecayHalfLife, FairShareDampeningFactor and the
	// PriorityFlags it models: FairTree unless NO_FAIR_TREE (Slurm's
	// default since 19.05). Partition factors and the cluster's size
	// are not in the config: ParsePartitions and the node list fill
	// them.
	Multifactor policy.MultifactorParams
	// Flags is PriorityFlags, as printed (comma-separated).
	Flags []string
	// CalcPeriod is PriorityCalcPeriod: how often slurmctld charges usage
	// and recomputes pending jobs' priorities.
	CalcPeriod time.Duration
	// BackfillInterval is SchedulerParameters' bf_interval (Slurm's
	// default 30 s), when SchedulerType is sched/backfill.
	BackfillInterval time.Duration
	// SchedulerType is sched/backfill or sched/builtin.
	SchedulerType string
	// Unmodelled names the settings in effect that the slurm policy does
	// not replay ("PriorityWeightTRES = GRES/gpu=3000", "PriorityFlags
	// MAX_TRES"), so that a replay can say what it leaves out.
	Unmodelled []string
	// UncountedTRES are PriorityWeightTRES's non-zero terms the slurm
	// policy does not count (billing, licenses, a weight with a unit), as
	// written ("Billing=5"): Unmodelled names them, MaxMove adds them.
	UncountedTRES []string
	// BootTime is BOOT_TIME, slurmctld's start, in this host's time zone
	// (scontrol prints it without one): its recalculations every
	// CalcPeriod count from it. Zero when not printed.
	BootTime time.Time
}

// MaxMove is how far Slurm's own priority terms can move a pending job's
// priority, the sum of the weights in effect (each factor is at most 1;
// a TRES term is a request over its partition's total), and the non-zero
// weights that make it up ("PriorityWeightAge=1000"). Unbounded is set
// when a term has no bound (PriorityFlags=NO_NORMAL_TRES with a TRES
// weight: weight × request; NO_NORMAL_PART, NO_NORMAL_QOS or
// NO_NORMAL_ASSOC with that weight: weight × the partition's, QOS's or
// association's priority itself), or when a TRES weight the policy does not
// count (billing, a license) is in effect and cannot be summed. A site
// factor written by Fairway keeps its order in Slurm only with a gap
// above MaxMove.
func (c PriorityConfig) MaxMove() (sum float64, weights []string, unbounded bool) {
	m := c.Multifactor
	for _, w := range []struct {
		name string
		v    float64
	}{{"PriorityWeightAge", m.WeightAge}, {"PriorityWeightAssoc", m.WeightAssoc}, {"PriorityWeightFairshare", m.WeightFairshare},
		{"PriorityWeightJobSize", m.WeightJobSize}, {"PriorityWeightPartition", m.WeightPartition}, {"PriorityWeightQOS", m.WeightQOS}} {
		if w.v > 0 {
			sum += w.v
			weights = append(weights, fmt.Sprintf("%s=%g", w.name, w.v))
		}
	}
	names := slices.Sorted(maps.Keys(m.WeightTRES))
	for _, name := range names {
		sum += m.WeightTRES[name]
		weights = append(weights, fmt.Sprintf("PriorityWeightTRES %s=%g", name, m.WeightTRES[name]))
	}
	// The TRES the policy does not count (billing, licenses) weigh as
	// much; a weight written with a unit ("Mem=1G") cannot be summed.
	for _, term := range c.UncountedTRES {
		name, v, _ := strings.Cut(term, "=")
		w, err := strconv.ParseFloat(v, 64)
		if err != nil || w < 0 || math.IsInf(w, 0) || math.IsNaN(w) {
			unbounded = true
			w = 0
		}
		sum += w
		weights = append(weights, "PriorityWeightTRES "+strings.ToLower(name)+"="+v)
	}
	unbounded = unbounded || (m.NoNormalTRES && (len(names) > 0 || len(c.UncountedTRES) > 0)) ||
		(m.NoNormalPartition && m.WeightPartition > 0) || (m.NoNormalAssoc && m.WeightAssoc > 0) ||
		(m.WeightQOS > 0 && slices.ContainsFunc(c.Flags, func(f string) bool { return strings.EqualFold(f, "NO_NORMAL_QOS") }))
	return sum, weights, unbounded
}

// ReadPriorityConfig runs `scontrol show config` and parses it
// (ParsePriorityConfig).
func (c Commands) ReadPriorityConfig(ctx context.Context, scontrol string) (PriorityConfig, error) {
	if scontrol == "" {
		scontrol = "scontrol"
	}
	out, err := c.output(ctx, "scontrol", scontrol, "show", "config")
	if err != nil {
		return PriorityConfig{}, err
	}
	return ParsePriorityConfig(out)
}

// ReadPartitions runs `scontrol show partition -o` and parses it
// (ParsePartitions).
func (c Commands) ReadPartitions(ctx context.Context, scontrol string) (Partitions, error) {
	if scontrol == "" {
		scontrol = "scontrol"
	}
	out, err := c.output(ctx, "scontrol", scontrol, "show", "partition", "-o")
	if err != nil {
		return Partitions{}, err
	}
	return ParsePartitions(out)
}

// ParsePriorityConfig reads the priority settings from the output of
// `scontrol show config` ("Key = value" lines; 22.05 to 26.05 print them
// alike). Settings it needs that are missing take Slurm's defaults; a
// value it cannot read is an error naming the setting.
func ParsePriorityConfig(out []byte) (PriorityConfig, error) {
	kv := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), "=")
		if !ok {
			continue
		}
		kv[strings.TrimSpace(k)] = strings.TrimSpace(v)
	}
	if err := sc.Err(); err != nil {
		return PriorityConfig{}, fmt.Errorf("scontrol show config: %w", err)
	}
	if _, ok := kv["PriorityType"]; !ok {
		return PriorityConfig{}, fmt.Errorf("scontrol show config: no PriorityType line: not the output of scontrol show config")
	}
	if kv["PriorityType"] == "" {
		// slurmctld always names its plugin; none would pass for an
		// unknown one further on
		return PriorityConfig{}, fmt.Errorf("scontrol show config: PriorityType is empty: want priority/multifactor or priority/basic")
	}
	c := PriorityConfig{Type: kv["PriorityType"], SchedulerType: kv["SchedulerType"],
		CalcPeriod: 5 * time.Minute, BackfillInterval: 30 * time.Second}
	m := &c.Multifactor
	m.FairTree = true
	weights := []struct {
		key string
		dst *float64
	}{
		{"PriorityWeightAge", &m.WeightAge}, {"PriorityWeightFairShare", &m.WeightFairshare},
		{"PriorityWeightJobSize", &m.WeightJobSize}, {"PriorityWeightPartition", &m.WeightPartition},
		{"PriorityWeightQOS", &m.WeightQOS}, {"PriorityWeightAssoc", &m.WeightAssoc},
	}
	for _, w := range weights {
		v, ok := kv[w.key]
		if !ok {
			continue
		}
		n, err := strconv.ParseUint(v, 10, 32)
		if err != nil {
			return PriorityConfig{}, fmt.Errorf("scontrol show config: %s = %q: want a whole number", w.key, v)
		}
		*w.dst = float64(n)
	}
	durations := []struct {
		key string
		dst *time.Duration
	}{
		{"PriorityMaxAge", &m.MaxAge}, {"PriorityDecayHalfLife", &m.DecayHalfLife}, {"PriorityCalcPeriod", &c.CalcPeriod},
	}
	for _, d := range durations {
		v, ok := kv[d.key]
		if !ok {
			continue
		}
		dur, err := parseSlurmDuration(v)
		if err != nil {
			return PriorityConfig{}, fmt.Errorf("scontrol show config: %s: %w", d.key, err)
		}
		*d.dst = dur
	}
	if m.DecayHalfLife == 0 {
		// Slurm: 0 turns decay off (usage is reset by
		// PriorityUsageResetPeriod instead); the Ledger spells that
		// with a negative half-life.
		m.DecayHalfLife = -1
	}
	switch v := strings.ToLower(kv["PriorityFavorSmall"]); v {
	case "yes", "1":
		m.FavorSmall = true
	case "", "no", "0":
	default:
		return PriorityConfig{}, fmt.Errorf("scontrol show config: PriorityFavorSmall = %q: want yes or no", kv["PriorityFavorSmall"])
	}
	if v, ok := kv["FairShareDampeningFactor"]; ok {
		n, err := strconv.ParseUint(v, 10, 16)
		if err != nil || n == 0 {
			return PriorityConfig{}, fmt.Errorf("scontrol show config: FairShareDampeningFactor = %q: want a whole number >= 1", v)
		}
		m.Dampening = float64(n)
	}
	for _, f := range strings.Split(kv["PriorityFlags"], ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		c.Flags = append(c.Flags, f)
		switch strings.ToUpper(f) {
		case "NO_FAIR_TREE":
			m.FairTree = false
		case "SMALL_RELATIVE_TO_TIME":
			m.SizeRelative = true
		case "NO_NORMAL_PART":
			m.NoNormalPartition = true
		case "NO_NORMAL_TRES":
			m.NoNormalTRES = true
		case "NO_NORMAL_ASSOC":
			m.NoNormalAssoc = true
		case "FAIR_TREE", "CALCULATE_RUNNING", "ACCRUE_ALWAYS":
			// The default; running jobs' priorities; age from submit,
			// as a replay without holds or dependencies counts it.
		default:
			c.Unmodelled = append(c.Unmodelled, "PriorityFlags "+f)
		}
	}
	tres, left, err := parseTRESWeights(kv["PriorityWeightTRES"])
	if err != nil {
		return PriorityConfig{}, fmt.Errorf("scontrol show config: PriorityWeightTRES = %q: %w", kv["PriorityWeightTRES"], err)
	}
	m.WeightTRES, c.UncountedTRES = tres, left
	if len(left) > 0 {
		c.Unmodelled = append(c.Unmodelled, "PriorityWeightTRES "+strings.Join(left, ","))
	}
	if v, ok := kv["BOOT_TIME"]; ok {
		t, err := time.ParseInLocation("2006-01-02T15:04:05", v, time.Local)
		if err != nil {
			return PriorityConfig{}, fmt.Errorf("scontrol show config: BOOT_TIME = %q: want YYYY-MM-DDTHH:MM:SS", v)
		}
		c.BootTime = t
	}
	// As sched/backfill reads it (backfill.c): the first "bf_interval="
	// in any case anywhere in the string (xstrcasestr), its atoi; -1
	// turns the backfill loop off, and any other value outside 1 to 3 h
	// is logged as invalid and replaced by the default. Refusing what
	// slurmctld runs with would stop serve.
	if i := indexFold(kv["SchedulerParameters"], "bf_interval="); i >= 0 {
		v := kv["SchedulerParameters"][i+len("bf_interval="):]
		switch n := atoi(v); {
		case n == -1:
			v, _, _ = strings.Cut(v, ",")
			c.Unmodelled = append(c.Unmodelled, "SchedulerParameters bf_interval="+v+" (the backfill loop off; the replay still backfills)")
		case n < 1 || n > maxBackfillInterval:
			c.BackfillInterval = defaultBackfillInterval
		default:
			c.BackfillInterval = time.Duration(n) * time.Second
		}
	}
	return c, nil
}

// maxBackfillInterval is the largest bf_interval sched/backfill takes
// (MAX_BACKFILL_INTERVAL, 3 hours); it logs a larger one as invalid and
// uses defaultBackfillInterval (BACKFILL_INTERVAL) instead.
const (
	maxBackfillInterval     = 10800
	defaultBackfillInterval = 30 * time.Second
)

// atoi is glibc's atoi, (int) strtol(s, NULL, 10) on a 64-bit long: the
// optional sign and digits after leading white space, 0 where there are
// none, saturated at the long's bounds and then cut to 32 bits (so 2^32 - 1,
// or a value past any long, reads as -1).
func atoi(s string) int32 {
	s = strings.TrimLeft(s, " \t\n\v\f\r")
	neg := false
	if s != "" && (s[0] == '-' || s[0] == '+') {
		neg = s[0] == '-'
		s = s[1:]
	}
	const limit = 1 << 63 // the magnitude of math.MinInt64
	var n uint64
	for i := 0; i < len(s) && s[i] >= '0' && s[i] <= '9'; i++ {
		d := uint64(s[i] - '0')
		if n > (limit-d)/10 {
			n = limit
			break
		}
		n = n*10 + d
	}
	var l int64
	switch {
	case neg:
		l = int64(-n) // two's complement: limit is math.MinInt64
	case n >= limit:
		l = math.MaxInt64
	default:
		l = int64(n)
	}
	return int32(l)
}

// indexFold is the index of the first instance of substr in s, ASCII
// letters matched in either case (Slurm's xstrcasestr), or -1.
func indexFold(s, substr string) int {
	lower := func(b byte) byte {
		if 'A' <= b && b <= 'Z' {
			return b + 'a' - 'A'
		}
		return b
	}
next:
	for i := 0; i+len(substr) <= len(s); i++ {
		for j := 0; j < len(substr); j++ {
			if lower(s[i+j]) != lower(substr[j]) {
				continue next
			}
		}
		return i
	}
	return -1
}

// parseTRESWeights reads PriorityWeightTRES ("CPU=1000,Mem=2000,
// GRES/gpu=3000"; "(null)" or empty when unset): the weights of the TRES
// the slurm policy counts (policy.TRESNames, gres/gpu:TYPE), by name in
// lower case as slurmctld matches them, and the non-zero terms it does
// not count (billing, licenses, a weight with a unit), as written.
func parseTRESWeights(v string) (map[string]float64, []string, error) {
	var weights map[string]float64
	var left []string
	for _, term := range strings.Split(v, ",") {
		term = strings.TrimSpace(term)
		if term == "" || term == "(null)" {
			continue
		}
		name, w, ok := strings.Cut(term, "=")
		if !ok || strings.TrimSpace(name) == "" {
			return nil, nil, fmt.Errorf("%q: want TRES=weight", term)
		}
		name = strings.ToLower(strings.TrimSpace(name))
		x, err := strconv.ParseFloat(strings.TrimSpace(w), 64)
		switch {
		case err == nil && x == 0:
		case err == nil && x > 0 && !math.IsInf(x, 0) && policy.CountsTRES(name):
			if weights == nil {
				weights = map[string]float64{}
			}
			weights[name] = x
		default:
			left = append(left, term)
		}
	}
	return weights, left, nil
}

// Partitions is what the slurm policy reads of each partition, by name;
// the name "" holds the default partition's (Default=YES), where a job
// that names none runs.
type Partitions struct {
	// Factor is PriorityJobFactor (Slurm's default 1 when not printed).
	Factor map[string]float64
	// TRES is the partition's TRES totals (TRES=), by name in lower
	// case, memory in MB: what a job's TRES factors are divided by.
	TRES map[string]map[string]float64
}

// ParsePartitions reads every partition's PriorityJobFactor and TRES
// totals from the output of `scontrol show partition -o` (one partition a
// line).
func ParsePartitions(out []byte) (Partitions, error) {
	got := Partitions{Factor: map[string]float64{}, TRES: map[string]map[string]float64{}}
	for i, line := range strings.Split(string(out), "\n") {
		if strings.TrimSpace(line) == "" {
			continue
		}
		name, factor, tres, def := "", "", "", false
		for _, f := range strings.Fields(line) {
			k, v, _ := strings.Cut(f, "=")
			switch k {
			case "PartitionName":
				name = v
			case "Default":
				def = v == "YES"
			case "PriorityJobFactor":
				factor = v
			case "TRES":
				tres = v
			}
		}
		if name == "" {
			return Partitions{}, fmt.Errorf("scontrol show partition -o: line %d has no PartitionName: %.60q", i+1, line)
		}
		if factor == "" {
			factor = "1"
		}
		n, err := strconv.ParseUint(factor, 10, 16)
		if err != nil {
			return Partitions{}, fmt.Errorf("scontrol show partition -o: partition %s PriorityJobFactor=%q: want a whole number", name, factor)
		}
		got.Factor[name] = float64(n)
		if got.TRES[name], err = ParseTRESTotals(tres); err != nil {
			return Partitions{}, fmt.Errorf("scontrol show partition -o: partition %s: %w", name, err)
		}
		if def {
			got.Factor[""], got.TRES[""] = got.Factor[name], got.TRES[name]
		}
	}
	if len(got.Factor) == 0 {
		return Partitions{}, fmt.Errorf("scontrol show partition -o: no partition")
	}
	return got, nil
}

// AssocPriorities are the associations' priorities the slurm policy's
// association factor reads (policy.MultifactorParams.AssocPriority).
type AssocPriorities struct {
	// ByAssoc is each association's Priority by account and user (""
	// for an account's own), as sacctmgr prints it; an empty Priority
	// (none set, none inherited) is 0, as slurmctld counts it.
	ByAssoc map[policy.Assoc]float64
	// Max is the highest of all, partition-specific associations
	// included: the factor's divisor.
	Max float64
	// PerPartition counts the partition-specific associations, which
	// ByAssoc leaves out: a job of such an association takes its
	// user's association's priority in a replay.
	PerPartition int
}

// ParseAssocPriorities reads `sacctmgr -nP show associations
// format=Account,User,Partition,Priority`.
func ParseAssocPriorities(out []byte) (AssocPriorities, error) {
	rows, err := pipeRows("sacctmgr show associations format=Account,User,Partition,Priority", out, 4)
	if err != nil {
		return AssocPriorities{}, err
	}
	got := AssocPriorities{ByAssoc: make(map[policy.Assoc]float64, len(rows))}
	for i, f := range rows {
		acct, user, part, v := strings.TrimSpace(f[0]), strings.TrimSpace(f[1]), strings.TrimSpace(f[2]), strings.TrimSpace(f[3])
		if acct == "" {
			return AssocPriorities{}, fmt.Errorf("sacctmgr show associations record %d: empty account", i+1)
		}
		n := uint64(0)
		if v != "" {
			if n, err = strconv.ParseUint(v, 10, 32); err != nil {
				return AssocPriorities{}, fmt.Errorf("sacctmgr show associations record %d (account %s, user %q): Priority %q: want a whole number", i+1, acct, user, v)
			}
			if n >= 0xfffffffe { // INFINITE or NO_VAL: none set, 0 to slurmctld
				n = 0
			}
		}
		got.Max = max(got.Max, float64(n))
		if part != "" {
			got.PerPartition++
			continue
		}
		got.ByAssoc[policy.Assoc{Account: acct, User: user}] = float64(n)
	}
	return got, nil
}

// ParseQOSPriorities reads each QOS's Priority, which the slurm policy's
// QOS factor divides by the highest, from `sacctmgr -nP show qos
// format=Name,Priority`.
func ParseQOSPriorities(out []byte) (map[string]float64, error) {
	rows, err := pipeRows("sacctmgr show qos format=Name,Priority", out, 2)
	if err != nil {
		return nil, err
	}
	got := make(map[string]float64, len(rows))
	for _, f := range rows {
		name, v := strings.TrimSpace(f[0]), strings.TrimSpace(f[1])
		if name == "" {
			return nil, fmt.Errorf("sacctmgr show qos: a QOS without a name (priority %q)", v)
		}
		n := uint64(0)
		if v != "" {
			if n, err = strconv.ParseUint(v, 10, 32); err != nil {
				return nil, fmt.Errorf("sacctmgr show qos: QOS %s Priority %q: want a whole number", name, v)
			}
		}
		got[name] = float64(n)
	}
	return got, nil
}

// parseSlurmDuration reads a duration as scontrol prints one: [D-]HH:MM:SS,
// MM:SS, or a number of minutes. NONE, UNLIMITED and INFINITE are refused:
// no setting this package reads takes them. slurmctld keeps each of them
// in 32-bit seconds; a longer one is refused, not wrapped.
func parseSlurmDuration(s string) (time.Duration, error) {
	days := 0
	d, rest, hasDays := strings.Cut(s, "-")
	if hasDays {
		n, err := strconv.Atoi(d)
		if err != nil || n < 0 {
			return 0, fmt.Errorf("%q: want [D-]HH:MM:SS", s)
		}
		days = n
	} else {
		rest = s
	}
	parts := strings.Split(rest, ":")
	if len(parts) > 3 {
		return 0, fmt.Errorf("%q: want [D-]HH:MM:SS", s)
	}
	nums := make([]int, len(parts))
	for i, p := range parts {
		n, err := strconv.Atoi(p)
		if err != nil || n < 0 {
			return 0, fmt.Errorf("%q: want [D-]HH:MM:SS", s)
		}
		nums[i] = n
	}
	var h, m, sec int
	switch len(nums) {
	case 1:
		if hasDays {
			h = nums[0] // D-HH
		} else {
			m = nums[0] // minutes
		}
	case 2:
		if hasDays {
			h, m = nums[0], nums[1] // D-HH:MM
		} else {
			m, sec = nums[0], nums[1] // MM:SS
		}
	case 3:
		h, m, sec = nums[0], nums[1], nums[2]
	}
	// in float64, where no count of these can overflow
	total := float64(days)*86400 + float64(h)*3600 + float64(m)*60 + float64(sec)
	if total > math.MaxUint32 {
		return 0, fmt.Errorf("%q: more than %d seconds, slurmctld's limit", s, uint32(math.MaxUint32))
	}
	return time.Duration(total) * time.Second, nil
}
