package slurmctl

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// Slurm's association and QOS limits on CPUs and memory, for the resize
// guard.
//
// A NumCPUs= or MinMemoryNode= update issued with operator rights (as
// Fairway's ResizeWriter issues it) marks that resource of the job as
// set by an administrator: Slurm's update_job (job_mgr.c) copies
// ADMIN_SET_LIMIT into the job's limit_set for CPUs or memory, and
// acct_policy.c skips such a resource in every association and QOS limit
// check until the job starts. Raised or lowered, the job is then exempt
// from GrpTRES=cpu=…, MaxTRESPerUser=mem=… and the like (seen on the
// 22.05.8 lab: a job pending on AssocGrpCpuLimit started past the limit
// once its CPU count was changed; still so in SchedMD's master). A GRES
// count update does not do this.
//
// Capping the resize to the room left under the limits is not enough: the
// exemption stays with the job until it starts, however much else of the
// user's starts in between. So the rule is the simple one: Fairway never
// changes the CPUs or memory of a job that any CPU or memory limit applies
// to, and when it cannot tell which limits apply, it changes neither.

// ErrLimitsUnknown means the limits that apply to a job could not be
// determined (no association or QOS record for it): treat the job as
// limited.
var ErrLimitsUnknown = errors.New("limits unknown")

// The sacctmgr columns read. Every column after the leading identity ones
// is a TRES limit ("cpu=4,mem=8000M,gres/gpu=2").
var (
	assocLimitFields = []string{"Cluster", "Account", "User", "Partition", "ParentName",
		"GrpTRES", "GrpTRESMins", "GrpTRESRunMins", "MaxTRES", "MaxTRESPerNode", "MaxTRESMins", "MaxTRESRunMins"}
	qosLimitFields = []string{"Name",
		"GrpTRES", "GrpTRESMins", "GrpTRESRunMins", "MaxTRES", "MaxTRESPerNode", "MaxTRESMins",
		"MaxTRESPA", "MaxTRESPU", "MaxTRESRunMinsPA", "MaxTRESRunMinsPU", "MinTRES"}
)

const assocIdentity = 5 // Cluster, Account, User, Partition, ParentName

// sacctmgrAssocLimitArgs and sacctmgrQOSLimitArgs are the sacctmgr
// arguments whose output parseAssocLimits and parseQOSLimits read.
var (
	sacctmgrAssocLimitArgs = []string{"-nP", "show", "associations", "format=" + strings.Join(assocLimitFields, ",")}
	sacctmgrQOSLimitArgs   = []string{"-nP", "show", "qos", "format=" + strings.Join(qosLimitFields, ",")}
)

// assocRow is one association: a user's (User set) or an account's.
type assocRow struct {
	cluster, account, user, partition, parent string
	cpuMem                                    []string // its CPU and memory limits, e.g. "GrpTRES=cpu=4"
}

// Limits are the CPU and memory limits of every association and QOS, and
// each partition's QOS: what CPUMem needs to tell which limits apply to a
// job. Read them with ResizeWriter.Limits.
type Limits struct {
	assocs  []assocRow
	qos     map[string][]string // QOS name → its CPU and memory limits
	partQOS map[string]string   // partition → its QOS ("" for none)
}

// NewLimits assembles Limits from sacctmgr's and scontrol's output (see
// parseAssocLimits, parseQOSLimits, parsePartitionQOS).
func NewLimits(assocs, qos, partitions []byte) (*Limits, error) {
	a, err := parseAssocLimits(assocs)
	if err != nil {
		return nil, err
	}
	q, err := parseQOSLimits(qos)
	if err != nil {
		return nil, err
	}
	p, err := parsePartitionQOS(partitions)
	if err != nil {
		return nil, err
	}
	return &Limits{assocs: a, qos: q, partQOS: p}, nil
}

// cpuMemLimits returns the CPU and memory entries of one TRES limit column
// as "Column=tres=value". TRES are named (cpu, mem, gres/gpu, ...) in
// sacctmgr's output; the ids of cpu (1) and mem (2) are taken too, should
// a release print ids.
func cpuMemLimits(column, value string) ([]string, error) {
	if value == "" {
		return nil, nil
	}
	var out []string
	for _, kv := range strings.Split(value, ",") {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" || v == "" {
			return nil, fmt.Errorf("%s %q: want tres=value[,tres=value...]", column, value)
		}
		switch strings.ToLower(k) {
		case "cpu", "mem", "1", "2":
			out = append(out, column+"="+kv)
		}
	}
	return out, nil
}

// pipeRows splits sacctmgr -nP output into rows of want fields each.
func pipeRows(what string, out []byte, want int) ([][]string, error) {
	var rows [][]string
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	for line := 1; sc.Scan(); line++ {
		text := strings.TrimRight(sc.Text(), "\r")
		if strings.TrimSpace(text) == "" {
			continue
		}
		f := strings.Split(text, "|")
		if len(f) != want {
			return nil, fmt.Errorf("%s line %d: want %d '|'-separated fields, got %d", what, line, want, len(f))
		}
		rows = append(rows, f)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	if len(rows) == 0 {
		return nil, fmt.Errorf("%s: no records", what)
	}
	return rows, nil
}

// parseAssocLimits reads `sacctmgr -nP show associations` with
// sacctmgrAssocLimitArgs' columns. An association without an account, or a
// limit that is not a TRES list, is an error: the caller then leaves every
// job's CPUs and memory alone.
func parseAssocLimits(out []byte) ([]assocRow, error) {
	rows, err := pipeRows("sacctmgr show associations", out, len(assocLimitFields))
	if err != nil {
		return nil, err
	}
	as := make([]assocRow, 0, len(rows))
	for i, f := range rows {
		r := assocRow{cluster: f[0], account: f[1], user: f[2], partition: f[3], parent: f[4]}
		if r.account == "" {
			return nil, fmt.Errorf("sacctmgr show associations record %d: empty account", i+1)
		}
		for c := assocIdentity; c < len(f); c++ {
			l, err := cpuMemLimits(assocLimitFields[c], f[c])
			if err != nil {
				return nil, fmt.Errorf("sacctmgr show associations record %d (account %s, user %q): %w", i+1, r.account, r.user, err)
			}
			r.cpuMem = append(r.cpuMem, l...)
		}
		as = append(as, r)
	}
	return as, nil
}

// parseQOSLimits reads `sacctmgr -nP show qos` with sacctmgrQOSLimitArgs'
// columns: each QOS's CPU and memory limits by name.
func parseQOSLimits(out []byte) (map[string][]string, error) {
	rows, err := pipeRows("sacctmgr show qos", out, len(qosLimitFields))
	if err != nil {
		return nil, err
	}
	q := make(map[string][]string, len(rows))
	for i, f := range rows {
		if f[0] == "" {
			return nil, fmt.Errorf("sacctmgr show qos record %d: empty name", i+1)
		}
		l := []string{}
		for c := 1; c < len(f); c++ {
			lc, err := cpuMemLimits(qosLimitFields[c], f[c])
			if err != nil {
				return nil, fmt.Errorf("sacctmgr show qos record %d (%s): %w", i+1, f[0], err)
			}
			l = append(l, lc...)
		}
		q[f[0]] = l
	}
	return q, nil
}

// partitionQOSArgs lists every partition, hidden ones too, one a line.
var partitionQOSArgs = []string{"--all", "--oneliner", "show", "partition"}

// parsePartitionQOS reads `scontrol --all --oneliner show partition`: each partition's
// QOS (Partition QOS= in slurm.conf), "" where it has none ("QoS=N/A").
func parsePartitionQOS(out []byte) (map[string]string, error) {
	p := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	for line := 1; sc.Scan(); line++ {
		fields := strings.Fields(sc.Text())
		if len(fields) == 0 {
			continue
		}
		name, hasName := strings.CutPrefix(fields[0], "PartitionName=")
		qos, hasQOS := "", false
		for _, f := range fields[1:] {
			if v, ok := strings.CutPrefix(f, "QoS="); ok {
				qos, hasQOS = v, true
			}
		}
		if !hasName || name == "" || !hasQOS {
			return nil, fmt.Errorf("scontrol show partition line %d: want PartitionName=… and QoS=…", line)
		}
		if qos == "N/A" {
			qos = ""
		}
		p[name] = qos
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("scontrol show partition: %w", err)
	}
	if len(p) == 0 {
		return nil, errors.New("scontrol show partition: no partitions")
	}
	return p, nil
}

// CPUMem returns the CPU and memory limits that apply to job j, each named
// with where it is set ("GrpTRES=cpu=4 on account lim"): those of its
// association (the user's, partition-specific or not), of every account
// above it up to root, of its QOS and of its partitions' QOS. An error
// wrapping ErrLimitsUnknown means they cannot be told (no association for
// the job's user and account, a parent or QOS that is not listed, a job
// without an account or QOS): the job must be treated as limited.
//
// The association search is on the safe side: every association of the
// user and account that is not specific to another partition counts.
func (l *Limits) CPUMem(j *Job) ([]string, error) {
	if j.User == "" || j.Account == "" || j.QOS == "" {
		return nil, fmt.Errorf("%w: job %d: user %q, account %q, QOS %q", ErrLimitsUnknown, j.ID, j.User, j.Account, j.QOS)
	}
	parts := strings.Split(j.Partition, ",")
	inCluster := func(a *assocRow) bool { return j.Cluster == "" || a.cluster == j.Cluster }
	var out []string
	found := false
	for i := range l.assocs {
		a := &l.assocs[i]
		if !inCluster(a) || a.user != j.User || a.account != j.Account || (a.partition != "" && !slices.Contains(parts, a.partition)) {
			continue
		}
		found = true
		where := " on user " + a.user + " in account " + a.account
		if a.partition != "" {
			where += " partition " + a.partition
		}
		for _, c := range a.cpuMem {
			out = append(out, c+where)
		}
	}
	if !found {
		return nil, fmt.Errorf("%w: job %d: no association of user %s in account %s", ErrLimitsUnknown, j.ID, j.User, j.Account)
	}
	// The accounts, from the job's up to root. Account associations have
	// no user and no partition; the chain is bounded by the number of
	// associations, so a cycle in broken data cannot loop forever.
	acct := j.Account
	for hops := 0; acct != ""; hops++ {
		if hops > len(l.assocs) {
			return nil, fmt.Errorf("%w: job %d: account chain above %s does not end at root", ErrLimitsUnknown, j.ID, j.Account)
		}
		next, ok := "", false
		for i := range l.assocs {
			a := &l.assocs[i]
			if !inCluster(a) || a.user != "" || a.account != acct {
				continue
			}
			ok = true
			next = a.parent
			for _, c := range a.cpuMem {
				out = append(out, c+" on account "+a.account)
			}
		}
		if !ok {
			return nil, fmt.Errorf("%w: job %d: account %s is not listed", ErrLimitsUnknown, j.ID, acct)
		}
		acct = next
	}
	qoses := []string{j.QOS}
	for _, p := range parts {
		q, ok := l.partQOS[p]
		if !ok {
			return nil, fmt.Errorf("%w: job %d: partition %s is not listed", ErrLimitsUnknown, j.ID, p)
		}
		if q != "" && !slices.Contains(qoses, q) {
			qoses = append(qoses, q)
		}
	}
	for _, q := range qoses {
		lim, ok := l.qos[q]
		if !ok {
			return nil, fmt.Errorf("%w: job %d: QOS %s is not listed", ErrLimitsUnknown, j.ID, q)
		}
		for _, c := range lim {
			out = append(out, c+" on QOS "+q)
		}
	}
	return out, nil
}

// Limits reads the CPU and memory limits of every association and QOS
// (sacctmgr) and the partitions' QOS (scontrol), through the writer's
// Runner: what a caller checks with Limits.CPUMem before it asks for a CPU
// or memory change. It reads, never writes, also in dry-run mode.
func (w *ResizeWriter) Limits(ctx context.Context) (*Limits, error) {
	cctx, cancel := context.WithTimeout(ctx, w.cfg.CmdTimeout)
	defer cancel()
	run := func(name string, args ...string) ([]byte, error) {
		out, stderr, err := w.cfg.Runner.Run(cctx, nil, name, args...)
		if err != nil {
			return nil, fmt.Errorf("%s %s: %v: %s", name, strings.Join(args, " "), err, strings.TrimSpace(string(stderr)))
		}
		return out, nil
	}
	assocs, err := run(w.cfg.Sacctmgr, sacctmgrAssocLimitArgs...)
	if err != nil {
		return nil, fmt.Errorf("read association limits: %w", err)
	}
	qos, err := run(w.cfg.Sacctmgr, sacctmgrQOSLimitArgs...)
	if err != nil {
		return nil, fmt.Errorf("read QOS limits: %w", err)
	}
	parts, err := run(w.cfg.Scontrol, partitionQOSArgs...)
	if err != nil {
		return nil, fmt.Errorf("read partition QOS: %w", err)
	}
	l, err := NewLimits(assocs, qos, parts)
	if err != nil {
		return nil, fmt.Errorf("read limits: %w", err)
	}
	return l, nil
}
