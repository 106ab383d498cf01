package sim

import (
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/fairway-hpc/fairway/internal/trace"
	"github.com/fairway-hpc/fairway/policy"
)

// Reference is the policy the split protocol's fairness constraints
// compare against: Slurm's own fair-share (issue 31's criteria).
const Reference = "fairshare"

// Constraints says which of the fairness constraints a policy meets
// against the Reference: an average wait no longer than its, Jain's index
// at least its − 0.01, a maximum ρ no larger than its.
type Constraints struct {
	Wait bool `json:"avg_wait"`
	Jain bool `json:"jain"`
	Rho  bool `json:"max_rho"`
}

// All reports whether every constraint is met.
func (c Constraints) All() bool { return c.Wait && c.Jain && c.Rho }

// JainSlack is how far below the Reference's Jain index a policy may be.
const JainSlack = 0.01

// Meets judges m against the reference's metrics ref.
func Meets(m, ref Metrics) Constraints {
	return Constraints{Wait: m.AvgWait <= ref.AvgWait, Jain: m.Jain >= ref.Jain-JainSlack, Rho: m.MaxRho <= ref.MaxRho}
}

// ProtocolRow is one policy of a ProtocolTable.
type ProtocolRow struct {
	Evaluation
	// Meets is nil for Sequences, and for Split when the table has no
	// Reference row.
	Meets *Constraints `json:"meets,omitempty"`
}

// ProtocolTable is every policy under one protocol on one trace.
type ProtocolTable struct {
	Trace    string       `json:"trace"`
	Cluster  ClusterInfo  `json:"cluster"`
	Kind     ProtocolKind `json:"protocol"`
	Backfill Backfill     `json:"backfill"`
	// Predictor names the predictor ("none") and Predictions its mode.
	Predictor   string         `json:"predictor"`
	Predictions PredictionMode `json:"predictions"`
	Cold        bool           `json:"cold,omitempty"`
	Tau         float64        `json:"tau_s"`
	// Jobs is the trace's replayable jobs; Window the evaluated part, as
	// indices [lo, hi) in submit order.
	Jobs   int    `json:"jobs"`
	Window [2]int `json:"window"`
	// LeftOut counts the trace's jobs no replay runs, by reason: the
	// Evaluator's (RunProtocol sets it, nil when none) and the records the
	// trace reader left out (its caller adds them). Printed unless nil.
	LeftOut map[string]int `json:"left_out,omitempty"`
	// Unroutable counts, by reason, the replayable jobs no node of a
	// partitioned cluster can run (Unroutable): every replay skips them.
	// RunProtocol adds them to LeftOut too; nil when none.
	Unroutable map[string]int `json:"unroutable,omitempty"`
	// CutAtLimit counts the jobs without a time limit that ran longer than
	// the one a replay gives them and are cut there (CutAtDefaultLimit).
	CutAtLimit int `json:"cut_at_default_limit,omitempty"`
	// Split is the split fraction, SplitAt the first evaluated submit and
	// History the jobs that warm the replay (Split only).
	Split   float64   `json:"split,omitempty"`
	SplitAt time.Time `json:"split_at,omitzero"`
	History int       `json:"history_jobs,omitempty"`
	// Sequences, Length, Seed, From, To and Starts: the sequences drawn
	// (Sequences only).
	Sequences int     `json:"sequences,omitempty"`
	Length    int     `json:"length,omitempty"`
	Seed      uint64  `json:"seed,omitempty"`
	From      float64 `json:"from,omitempty"`
	To        float64 `json:"to,omitempty"`
	Starts    []int   `json:"starts,omitempty"`
	// Histories are the jobs that warm each sequence, in Starts order.
	Histories []int `json:"history_jobs_per_sequence,omitempty"`
	// SameSchedule is set when every policy started every job at the same
	// instant: no order can change anything, and every constraint counts
	// as met.
	SameSchedule bool          `json:"same_schedule"`
	Rows         []ProtocolRow `json:"rows"`
	// Verdicts are the time split's criterion for the rows asked about
	// (Verdict), printed after the table.
	Verdicts []Verdict `json:"verdicts,omitempty"`
	// SequenceVerdicts are RLScheduler's protocol's criterion for the rows
	// asked about (SequenceVerdict), printed after the table.
	SequenceVerdicts []SequenceVerdict `json:"sequence_verdicts,omitempty"`
}

// SequenceComparators are the heuristics a row must beat under
// RLScheduler's protocol (issue 31): F1 (Carastan-Santos & de Camargo,
// SC'17) and SJF by time limit, RLScheduler's SJF (Zhang et al., SC'20).
var SequenceComparators = []string{"f1", "sjf-limit"}

// SequenceVerdict is RLScheduler's protocol's criterion for one row of a
// Sequences table: a lower average bounded slowdown (the mean over the
// sequences) than every SequenceComparators row.
type SequenceVerdict struct {
	Row  string  `json:"row"`
	Met  bool    `json:"met"`
	BSLD float64 `json:"avg_bsld"`
	// Against holds each comparator's avg bsld, in SequenceComparators'
	// order.
	Against []RowBSLD `json:"against"`
}

// RowBSLD is a row's average bounded slowdown.
type RowBSLD struct {
	Row  string  `json:"row"`
	BSLD float64 `json:"avg_bsld"`
}

// SequenceVerdict judges the row named row of a Sequences table that holds
// the SequenceComparators' rows too.
func (t *ProtocolTable) SequenceVerdict(row string) (SequenceVerdict, error) {
	if t.Kind != Sequences {
		return SequenceVerdict{}, fmt.Errorf("sequence verdict for %s: only RLScheduler's protocol has one", row)
	}
	find := func(name string) (ProtocolRow, bool) {
		i := slices.IndexFunc(t.Rows, func(r ProtocolRow) bool { return r.Name == name })
		if i < 0 {
			return ProtocolRow{}, false
		}
		return t.Rows[i], true
	}
	me, ok := find(row)
	if !ok {
		return SequenceVerdict{}, fmt.Errorf("sequence verdict for %s: no such row", row)
	}
	v := SequenceVerdict{Row: row, Met: true, BSLD: me.AvgBSLD}
	for _, c := range SequenceComparators {
		r, ok := find(c)
		if !ok {
			return SequenceVerdict{}, fmt.Errorf("sequence verdict for %s: no %s row to compare with (replay %s)", row, c, strings.Join(SequenceComparators, " and "))
		}
		v.Against = append(v.Against, RowBSLD{Row: c, BSLD: r.AvgBSLD})
		v.Met = v.Met && me.AvgBSLD < r.AvgBSLD
	}
	return v, nil
}

// text says a sequence verdict in one line.
func (v SequenceVerdict) text() string {
	var against []string
	for _, a := range v.Against {
		against = append(against, fmt.Sprintf("%s %.2f", a.Row, a.BSLD))
	}
	verdict := "NOT met"
	if v.Met {
		verdict = "met"
	}
	return fmt.Sprintf("RLScheduler's criterion for %s: %s: avg bsld %.2f against %s (lower than each wanted)", v.Row, verdict, v.BSLD, strings.Join(against, ", "))
}

// Verdict is the time split's criterion for one row of a Split table: it
// meets the three constraints and has a lower average bounded slowdown
// than every registered policy's row that meets them, the policies that
// need true run times (sjf-oracle, the simulator's bound) aside; other
// policy files' rows are not rivals. Where every policy gave the same
// schedule it is met: every constraint counts as met, and no order can
// do better.
type Verdict struct {
	Row   string      `json:"row"`
	Met   bool        `json:"met"`
	Meets Constraints `json:"meets"`
	// Rival is the other row meeting the three constraints with the lowest
	// avg bsld, RivalBSLD its avg bsld ("" when no other row meets them).
	Rival     string  `json:"rival,omitempty"`
	RivalBSLD float64 `json:"rival_bsld,omitempty"`
	// SameSchedule: every policy gave the same schedule.
	SameSchedule bool `json:"same_schedule,omitempty"`
}

// Verdict judges the row named row of a Split table whose constraints were
// judged (the Reference is one of its rows).
func (t *ProtocolTable) Verdict(row string) (Verdict, error) {
	if t.Kind != Split {
		return Verdict{}, fmt.Errorf("verdict for %s: only the time split has one", row)
	}
	i := slices.IndexFunc(t.Rows, func(r ProtocolRow) bool { return r.Name == row })
	switch {
	case i < 0:
		return Verdict{}, fmt.Errorf("verdict for %s: no such row", row)
	case t.Rows[i].Meets == nil:
		return Verdict{}, fmt.Errorf("verdict for %s: constraints not judged (%s was not evaluated)", row, Reference)
	}
	me := t.Rows[i]
	v := Verdict{Row: row, Meets: *me.Meets, SameSchedule: t.SameSchedule}
	for _, r := range t.Rows {
		if r.Name == row || r.Meets == nil || !r.Meets.All() {
			continue
		}
		if e, ok := policy.Lookup(r.Name); !ok || e.Traits.NeedsTrueRunTimes {
			continue
		}
		if v.Rival == "" || r.AvgBSLD < v.RivalBSLD {
			v.Rival, v.RivalBSLD = r.Name, r.AvgBSLD
		}
	}
	v.Met = t.SameSchedule || v.Meets.All() && (v.Rival == "" || me.AvgBSLD < v.RivalBSLD)
	return v, nil
}

// text says a verdict in one line.
func (v Verdict) text(bsld float64) string {
	switch {
	case v.SameSchedule:
		return fmt.Sprintf("criterion for %s: met: every policy gave the same schedule", v.Row)
	case v.Met && v.Rival == "":
		return fmt.Sprintf("criterion for %s: met: it meets the three constraints and no other policy does (sjf-oracle aside)", v.Row)
	case v.Met:
		return fmt.Sprintf("criterion for %s: met: it meets the three constraints with the lowest avg bsld of the policies meeting them (%.2f; next %s %.2f; sjf-oracle aside)", v.Row, bsld, v.Rival, v.RivalBSLD)
	case !v.Meets.All():
		var missed []string
		for _, m := range []struct {
			ok   bool
			name string
		}{{v.Meets.Wait, "avg wait"}, {v.Meets.Jain, "Jain"}, {v.Meets.Rho, "max ρ"}} {
			if !m.ok {
				missed = append(missed, m.name)
			}
		}
		return fmt.Sprintf("criterion for %s: NOT met: it misses %s against %s", v.Row, strings.Join(missed, ", "), Reference)
	}
	return fmt.Sprintf("criterion for %s: NOT met: it meets the three constraints, but %s has a lower avg bsld among the policies meeting them (%.2f against %.2f; sjf-oracle aside)", v.Row, v.Rival, v.RivalBSLD, bsld)
}

// ProtocolConfig is a protocol run over several policies by name.
type ProtocolConfig struct {
	Trace    string
	Policies []string
	Params   map[string]any // parameters by policy name (see policy.Entry.New); a policy not named gets its defaults
	// Factories makes the policies that are not registered under their
	// row's name, by row name: a tuned policy file's row ("tuned"). A
	// name found here is not looked up in the registry.
	Factories map[string]PolicyFactory
	Protocol  Protocol
	Predictor string // the name of Protocol.NewPredictor's predictor, "none" for none
	// Parallel bounds the policies evaluated at once (at least 1).
	Parallel int
	// Progress, when set, is told of each policy done.
	Progress func(name string)
}

// RunProtocol evaluates every policy of cfg on jobs and c, cfg.Parallel at
// a time, and judges them: under Split, each row's Constraints against the
// Reference row, when there is one. The table's LeftOut counts the jobs
// the evaluation left out.
func RunProtocol(ctx context.Context, jobs []policy.Job, c Cluster, cfg ProtocolConfig) (*ProtocolTable, error) {
	e, err := NewEvaluator(jobs, c, cfg.Protocol)
	if err != nil {
		return nil, err
	}
	t, err := e.Table(ctx, cfg)
	if err != nil {
		return nil, err
	}
	t.LeftOut, t.CutAtLimit = e.Skipped(), CutAtDefaultLimit(jobs)
	// The Evaluator admits a job whatever its partition; a replay then
	// skips those no node of the layout can run. Said as the plain
	// comparison says them, not replayed silently by no policy.
	if u := Unroutable(e.jobs, c); len(u) > 0 {
		t.Unroutable, t.LeftOut = u, trace.MergeLeftOut(t.LeftOut, u)
	}
	return t, nil
}

// Table evaluates every policy of cfg with e, cfg.Parallel at a time, and
// judges them as RunProtocol does. cfg.Protocol is ignored: e's is used,
// so that a caller holding an Evaluator (the tuner's validation window)
// does not prepare it twice.
func (e *Evaluator) Table(ctx context.Context, cfg ProtocolConfig) (*ProtocolTable, error) {
	p, c := e.proto, e.cluster
	t := &ProtocolTable{Trace: cfg.Trace, Cluster: InfoOf(c), Kind: p.Kind, Backfill: p.Backfill, Predictor: cfg.Predictor,
		Predictions: p.Predictions, Cold: p.Cold, Tau: p.Metrics.Tau.Seconds(), Jobs: e.Jobs()}
	if t.Backfill == "" {
		t.Backfill = EASY
	}
	if t.Predictions == "" {
		t.Predictions = PredictOnline
	}
	if t.Tau == 0 {
		t.Tau = 10
	}
	lo, hi := e.Window()
	t.Window = [2]int{lo, hi}
	switch p.Kind {
	case Split:
		t.Split, t.SplitAt, t.History = p.Split, e.Job(lo).Submit, e.History(lo)
	case Sequences:
		t.Sequences, t.Length, t.Seed, t.From, t.To, t.Starts = p.Sequences, p.Length, p.Seed, p.From, p.To, e.Starts()
		for _, s := range t.Starts {
			t.Histories = append(t.Histories, e.History(s))
		}
	}
	t.Rows = make([]ProtocolRow, len(cfg.Policies))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(max(cfg.Parallel, 1))
	var mu sync.Mutex
	for i, name := range cfg.Policies {
		g.Go(func() error {
			mk := cfg.Factories[name]
			if mk == nil {
				mk = func() (policy.Policy, error) { return policy.New(name, cfg.Params[name]) }
			}
			ev, err := e.Evaluate(gctx, mk)
			if err != nil {
				return fmt.Errorf("%s: %w", name, err)
			}
			ev.Name = name
			t.Rows[i].Evaluation = ev
			if cfg.Progress != nil {
				mu.Lock()
				defer mu.Unlock()
				cfg.Progress(name)
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	t.judge()
	return t, nil
}

// judge sets SameSchedule and, under Split, each row's Constraints.
func (t *ProtocolTable) judge() {
	t.SameSchedule = len(t.Rows) > 1
	for _, r := range t.Rows {
		if r.Schedule != t.Rows[0].Schedule {
			t.SameSchedule = false
		}
	}
	if t.Kind != Split {
		return
	}
	var ref *Metrics
	for i := range t.Rows {
		if t.Rows[i].Name == Reference {
			ref = &t.Rows[i].Metrics
		}
	}
	if ref == nil {
		return
	}
	for i := range t.Rows {
		c := Meets(t.Rows[i].Metrics, *ref)
		if t.SameSchedule {
			c = Constraints{true, true, true}
		}
		t.Rows[i].Meets = &c
	}
}

// WriteText prints the table for people.
func (t *ProtocolTable) WriteText(w io.Writer) error {
	backfill := "EASY backfill"
	if t.Backfill == NoBackfill {
		backfill = "no backfill"
	}
	warm := fmt.Sprintf("the %d jobs that ended before it warm the fair-share ledger and the predictor", t.History)
	if t.Kind == Sequences && len(t.Histories) > 0 {
		warm = fmt.Sprintf("the jobs that ended before each (%d to %d) warm the fair-share ledger and the predictor", slices.Min(t.Histories), slices.Max(t.Histories))
	}
	if t.Cold {
		warm = "no history (cold)"
	}
	pred := t.Predictor
	if pred != "none" {
		pred += " (" + string(t.Predictions) + ")"
	}
	fmt.Fprintf(w, "%s: %d jobs on %s, %s, predictor %s, bounded slowdown τ = %gs\n",
		t.Trace, t.Jobs, t.Cluster, backfill, pred, t.Tau)
	if t.LeftOut != nil {
		fmt.Fprintf(w, "left out: %s\n", trace.FormatLeftOut(t.LeftOut))
	}
	for _, r := range slices.Sorted(maps.Keys(t.Unroutable)) {
		fmt.Fprintln(w, SkipWarning(t.Unroutable[r], r))
	}
	if t.CutAtLimit > 0 {
		fmt.Fprintln(w, CutWarning(t.CutAtLimit))
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	switch t.Kind {
	case Split:
		fmt.Fprintf(w, "time split at %g: replays the last %d jobs (submits %d–%d, from %s) on an empty cluster; %s\n",
			t.Split, t.Window[1]-t.Window[0], t.Window[0], t.Window[1]-1, t.SplitAt.UTC().Format(time.RFC3339), warm)
		fmt.Fprintf(tw, "policy\tavg wait (s)\tavg bsld\tJain\tmax ρ\twait ≤ %s\tJain ≥ %s − %g\tmax ρ ≤ %s\t\n", Reference, Reference, JainSlack, Reference)
		for _, r := range t.Rows {
			flags := "\t-\t-\t-"
			if r.Meets != nil {
				flags = fmt.Sprintf("\t%s\t%s\t%s", yes(r.Meets.Wait), yes(r.Meets.Jain), yes(r.Meets.Rho))
			}
			fmt.Fprintf(tw, "%s\t%.0f\t%.2f\t%.3f\t%.1f%s\t\n", r.Name, r.AvgWait, r.AvgBSLD, r.Jain, r.MaxRho, flags)
		}
	case Sequences:
		fmt.Fprintf(w, "RLScheduler's protocol: %d sequences × %d jobs, seed %d, drawn from submits [%g, %g) (jobs %d–%d), each on an empty cluster; %s\n",
			t.Sequences, t.Length, t.Seed, t.From, t.To, t.Window[0], t.Window[1]-1, warm)
		fmt.Fprintf(w, "starts: %s\n", joinInts(t.Starts))
		fmt.Fprintln(tw, "policy\tavg bsld (mean)\tsd\tmin\tmax\tavg wait (s)\tJain\tmax ρ\t")
		for _, r := range t.Rows {
			fmt.Fprintf(tw, "%s\t%.2f\t%.2f\t%.2f\t%.2f\t%.0f\t%.3f\t%.1f\t\n", r.Name, r.AvgBSLD, r.BSLDStd, r.BSLDMin, r.BSLDMax, r.AvgWait, r.Jain, r.MaxRho)
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if t.SameSchedule {
		fmt.Fprintln(w, "every policy gave the same schedule: no order changes anything here, so every constraint counts as met")
	}
	if t.Kind == Split && len(t.Rows) > 0 && t.Rows[0].Meets == nil {
		fmt.Fprintf(w, "constraints not judged: %s was not evaluated\n", Reference)
	} else if t.untestedJain() {
		fmt.Fprintf(w, "Jain tested nothing here: under no policy were two users backlogged throughout one Jain window of the replayed part, so every row reads Jain 1 and meets the Jain constraint; fairness between users is judged on a period where users queue at once\n")
	}
	for _, v := range t.Verdicts {
		bsld := 0.0
		if i := slices.IndexFunc(t.Rows, func(r ProtocolRow) bool { return r.Name == v.Row }); i >= 0 {
			bsld = t.Rows[i].AvgBSLD
		}
		fmt.Fprintln(w, v.text(bsld))
	}
	for _, v := range t.SequenceVerdicts {
		fmt.Fprintln(w, v.text())
	}
	return nil
}

// untestedJain reports a split table whose Jain constraint judged
// nothing: no row's schedule had a window with two users backlogged
// throughout (JainWindows 0 everywhere), so every row's Jain is 1. A
// verdict "meets Jain" from it says nothing about fairness between users,
// and a later, busier period can fail it (the tuner's Philly-MIX1 windows).
func (t *ProtocolTable) untestedJain() bool {
	if t.Kind != Split || t.SameSchedule || len(t.Rows) == 0 {
		return false
	}
	for _, r := range t.Rows {
		if r.JainWindows > 0 {
			return false
		}
	}
	return true
}

func yes(b bool) string {
	if b {
		return "yes"
	}
	return "NO"
}

func joinInts(xs []int) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = fmt.Sprint(x)
	}
	return strings.Join(s, " ")
}
