package report

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/fairway-hpc/fairway/accounting"
)

// table is one table of the report, built once from a Report and rendered
// the same way into HTML, Markdown and CSV, so that every format carries
// the same numbers.
type table struct {
	Name  string // CSV file stem and HTML id
	Title string
	Cols  []col
	Rows  [][]cell
}

// col is a column header; Key links it to a definition ("" for none).
type col struct {
	Head string
	Key  string
	Num  bool // right-aligned
}

// cell is one formatted value; Key links it to a definition (row headers).
type cell struct {
	Text string
	Key  string
}

func c(s string) cell { return cell{Text: s} }

// Formats. Missing figures show as "–".
const missing = "–"

// fmtHours spells unit-hours with enough digits for small amounts: one
// decimal from 10 up, two significant digits below (3.2, 0.40, 0.0042), so
// that a small month never shows 0 where it delivered something. Every
// table, card and sentence uses it.
func fmtHours(n Num) string {
	if !n.OK() {
		return missing
	}
	return fmtSig(float64(n))
}

// fmtSig is fmtHours' rule for any amount.
func fmtSig(x float64) string {
	a := math.Abs(x)
	switch {
	case x == 0:
		return "0"
	case a >= 10:
		return strconv.FormatFloat(x, 'f', 1, 64)
	}
	prec := min(1-int(math.Floor(math.Log10(a))), 8)
	return strconv.FormatFloat(x, 'f', prec, 64)
}

// fmtPct spells a fraction as a percentage: one decimal, or two
// significant digits under 1% so that a small share is not shown as 0.0%.
func fmtPct(n Num) string {
	if !n.OK() {
		return missing
	}
	p := 100 * float64(n)
	if p != 0 && math.Abs(p) < 1 {
		return fmtSig(p) + "%"
	}
	return strconv.FormatFloat(p, 'f', 1, 64) + "%"
}

// or is text when n exists, else why: a figure that cannot be computed
// says why instead of showing a bare dash.
func or(n Num, text, why string) string {
	if n.OK() {
		return text
	}
	return why
}

// Why a figure is missing, as the tables and cards say it.
const (
	whyNoneStarted = "none started"
	whyNoHours     = "nothing ran"
	whyNoPrevious  = "no previous month"
	whyNoMeasure   = "not measured"
	whyNoBacklog   = "never two users waiting"
	whyOneAccount  = "one account"
)

// figureText is a month's figure get(s) as format writes it or, when it is
// missing and why is set, why says why.
func figureText(s *Summary, get func(*Summary) Num, format func(Num) string, why func(*Summary) string) string {
	if n := get(s); !n.OK() && why != nil {
		return why(s)
	}
	return format(get(s))
}

// jainWhy says why a month has no Jain's index over accounts: nothing
// ran, or one account had all the jobs (an index of one says nothing).
func jainWhy(s *Summary) string {
	if s.Accounts == 1 {
		return whyOneAccount
	}
	return whyNoHours
}

func fmtFloat(n Num, prec int) string {
	if !n.OK() {
		return missing
	}
	return strconv.FormatFloat(float64(n), 'f', prec, 64)
}

// fmtDur spells seconds the way people read waits: 42 s, 12 min, 3.4 h,
// 2.5 d.
func fmtDur(n Num) string {
	if !n.OK() {
		return missing
	}
	s := float64(n)
	switch {
	case s < 60:
		return fmt.Sprintf("%.0f s", s)
	case s < 3600:
		return fmt.Sprintf("%.0f min", s/60)
	case s < 48*3600:
		return fmt.Sprintf("%.1f h", s/3600)
	}
	return fmt.Sprintf("%.1f d", s/86400)
}

func fmtInt(n int) string { return strconv.Itoa(n) }

// waitOr spells a wait, or says no job started.
func waitOr(n Num) string { return or(n, fmtDur(n), whyNoneStarted) }

// fmtChange spells the change from prev to cur: a relative change for
// amounts, a difference in percentage points for fractions.
func fmtChange(cur, prev Num, fraction bool) string {
	if !cur.OK() || !prev.OK() {
		return "not comparable"
	}
	if fraction {
		return fmt.Sprintf("%+.1f pts", 100*float64(cur-prev))
	}
	if prev == 0 {
		return "was 0"
	}
	return fmt.Sprintf("%+.0f%%", 100*float64(cur-prev)/math.Abs(float64(prev)))
}

// tables builds every table of r, in reading order.
func tables(r *Report) []table {
	h := r.Unit + "-hours"
	H := capitalize(h)
	var out []table

	sum := table{Name: "summary", Title: "Cluster summary",
		Cols: []col{{Head: "Figure"}, {Head: "This month (" + r.Month + ")", Num: true}}}
	p := r.Previous
	if p != nil {
		sum.Cols = append(sum.Cols, col{Head: "Previous month (" + p.Month + ")", Num: true}, col{Head: "Change", Num: true})
	}
	type line struct {
		name, key string
		get       func(*Summary) Num
		format    func(Num) string
		fraction  bool
		// why, when set, says why a month's figure is missing.
		why func(*Summary) string
	}
	lines := []line{
		{"Jobs ended", "jobs", func(s *Summary) Num { return Num(s.Jobs) }, func(n Num) string { return fmtFloat(n, 0) }, false, nil},
		{"Jobs started (of those ended)", "jobsstarted", func(s *Summary) Num { return Num(s.Started) }, func(n Num) string { return fmtFloat(n, 0) }, false, nil},
		{"Accounts with jobs", "", func(s *Summary) Num { return Num(s.Accounts) }, func(n Num) string { return fmtFloat(n, 0) }, false, nil},
		{"Users with jobs", "", func(s *Summary) Num { return Num(s.Users) }, func(n Num) string { return fmtFloat(n, 0) }, false, nil},
		{H + " delivered", "hours", func(s *Summary) Num { return s.Hours }, fmtHours, false, nil},
		{H + " available", "available", func(s *Summary) Num { return s.Available }, fmtHours, false, nil},
		{"Utilization", "utilization", func(s *Summary) Num { return s.Utilization }, func(n Num) string { return or(n, fmtPct(n), "no capacity") }, true, nil},
		{"Jain's index over accounts", "jain", func(s *Summary) Num { return s.Jain }, func(n Num) string { return fmtFloat(n, 3) }, false, jainWhy},
		{"Median wait", "wait", func(s *Summary) Num { return s.MedianWait }, waitOr, false, nil},
		{"95th-percentile wait", "p95", func(s *Summary) Num { return s.P95Wait }, waitOr, false, nil},
		{"Median finish-time fairness ρ", "rho", func(s *Summary) Num { return s.MedianRho }, func(n Num) string { return or(n, fmtFloat(n, 2), whyNoneStarted) }, false, nil},
		{"Cancelled " + h, "cancelled", func(s *Summary) Num { return s.CancelledHours }, fmtHours, false, nil},
		{"Failed " + h, "failed", func(s *Summary) Num { return s.FailedHours }, fmtHours, false, nil},
		{"Share of " + h + " cancelled or failed", "lost", func(s *Summary) Num { return s.Lost }, func(n Num) string { return or(n, fmtPct(n), whyNoHours) }, true, nil},
	}
	for _, l := range lines {
		row := []cell{{Text: l.name, Key: l.key}, c(figureText(&r.Summary, l.get, l.format, l.why))}
		if p != nil {
			row = append(row, c(figureText(p, l.get, l.format, l.why)), c(fmtChange(l.get(&r.Summary), l.get(p), l.fraction)))
		}
		sum.Rows = append(sum.Rows, row)
	}
	out = append(out, sum)

	daily := table{Name: "daily", Title: "Utilization by day (UTC)",
		Cols: []col{{Head: "Day"}, {Head: H, Key: "hours", Num: true}, {Head: "Utilization", Key: "utilization", Num: true}}}
	for _, d := range r.Daily {
		daily.Rows = append(daily.Rows, []cell{c(d.Date), c(fmtHours(d.Hours)), c(fmtPct(d.Utilization))})
	}
	out = append(out, daily)

	states := table{Name: "states", Title: "Jobs by final state",
		Cols: []col{{Head: "State", Key: "state"}, {Head: "Jobs ended", Key: "jobs", Num: true}, {Head: H, Key: "hours", Num: true}, {Head: "Share of " + h, Num: true}}}
	for _, s := range r.States {
		states.Rows = append(states.Rows, []cell{c(s.State), c(fmtInt(s.Jobs)), c(fmtHours(s.Hours)), c(fmtPct(s.Share))})
	}
	out = append(out, states)

	groupCols := func(first []col) []col {
		return append(first,
			col{Head: "Shares", Key: "shares", Num: true}, col{Head: "Entitled share", Key: "entitled", Num: true},
			col{Head: "Used share", Key: "used", Num: true}, col{Head: H, Key: "hours", Num: true},
			col{Head: "Jobs ended", Key: "jobs", Num: true})
	}
	tail := []col{{Head: "Median wait", Key: "wait", Num: true}, {Head: "95th-pct wait", Key: "p95", Num: true},
		{Head: "Median ρ", Key: "rho", Num: true}, {Head: "Cancelled " + h, Key: "cancelled", Num: true}, {Head: "Failed " + h, Key: "failed", Num: true}}
	groupCells := func(g Row) []cell {
		return []cell{c(fmtFloat(g.Shares, 0)), c(fmtPct(g.Entitled)), c(or(g.Used, fmtPct(g.Used), whyNoHours)), c(fmtHours(g.Hours)), c(fmtInt(g.Jobs))}
	}
	tailCells := func(g Row) []cell {
		return []cell{c(waitOr(g.MedianWait)), c(waitOr(g.P95Wait)), c(or(g.MedianRho, fmtFloat(g.MedianRho, 2), whyNoneStarted)), c(fmtHours(g.Cancelled)), c(fmtHours(g.Failed))}
	}
	accts := table{Name: "accounts", Title: "Accounts",
		Cols: append(append(groupCols([]col{{Head: "Account"}}), col{Head: "Users", Num: true}), tail...)}
	for _, a := range r.Accounts {
		row := append([]cell{c(a.Account)}, groupCells(a)...)
		row = append(row, c(fmtInt(a.Users)))
		accts.Rows = append(accts.Rows, append(row, tailCells(a)...))
	}
	out = append(out, accts)

	users := table{Name: "users", Title: "Users",
		Cols: append(groupCols([]col{{Head: "User"}, {Head: "Account"}}), tail...)}
	for _, u := range r.Users {
		row := append([]cell{c(u.User), c(u.Account)}, groupCells(u)...)
		users.Rows = append(users.Rows, append(row, tailCells(u)...))
	}
	out = append(out, users)

	pred := table{Name: "predictions", Title: "Run-time prediction quality, by partition",
		Cols: []col{{Head: "Partition"}, {Head: "Predictor", Key: "predictor"}, {Head: "Jobs ended", Key: "jobs", Num: true},
			{Head: "MedAE", Key: "medae", Num: true}, {Head: "Within ±50%", Key: "within50", Num: true}, {Head: "Median run time", Key: "medianrun", Num: true}}}
	for _, p := range r.Predictions {
		pred.Rows = append(pred.Rows, []cell{c(orNone(p.Partition)), c(p.Predictor), c(fmtInt(p.Jobs)), c(fmtDur(p.MedAE)), c(fmtPct(p.Within50)), c(fmtDur(p.MedianRun))})
	}
	out = append(out, pred)

	e := r.Efficiency
	eff := table{Name: "efficiency", Title: "GPU efficiency, by account",
		Cols: []col{{Head: "Account"}, {Head: "Jobs measured", Key: "jobsmeasured", Num: true}, {Head: "GPU-hours held", Key: "held", Num: true},
			{Head: "GPU-hours busy", Key: "busy", Num: true}, {Head: "Utilization unknown", Key: "unknownutil", Num: true}, {Head: "Efficiency", Key: "efficiency", Num: true}}}
	effJobs := 0
	for _, a := range e.Accounts {
		effJobs += a.Jobs
		eff.Rows = append(eff.Rows, []cell{c(a.Account), c(fmtInt(a.Jobs)), c(fmtHours(a.Allocated)), c(fmtHours(a.Busy)), c(fmtHours(a.Unknown)), c(or(a.Ratio, fmtPct(a.Ratio), whyNoMeasure))})
	}
	if len(e.Accounts) > 0 {
		eff.Rows = append(eff.Rows, []cell{c("All accounts"), c(fmtInt(effJobs)), c(fmtHours(e.Allocated)), c(fmtHours(e.Busy)), c(fmtHours(e.Unknown)), c(or(e.Ratio, fmtPct(e.Ratio), whyNoMeasure))})
	}
	out = append(out, eff)

	idle := table{Name: "idle_jobs", Title: "Jobs that held GPUs idle the longest",
		Cols: []col{{Head: "Job"}, {Head: "User"}, {Head: "Account"}, {Head: "State", Key: "state"}, {Head: "GPUs", Num: true},
			{Head: "GPU-hours held", Key: "held", Num: true}, {Head: "Average utilization", Key: "busy", Num: true}, {Head: "Idle GPU-hours", Key: "idle", Num: true}}}
	for _, j := range e.IdleJobs {
		idle.Rows = append(idle.Rows, []cell{c(strconv.FormatInt(j.JobID, 10)), c(j.User), c(j.Account), c(j.State), c(fmtInt(j.GPUs)),
			c(fmtHours(j.Hours)), c(fmtPct(j.AvgUtil)), c(fmtHours(j.Idle))})
	}
	out = append(out, idle)

	ch := r.Changes
	cy := ch.Cycles
	chg := table{Name: "changes", Title: "What Fairway changed", Cols: []col{{Head: "Figure"}, {Head: "This month", Num: true}}}
	for _, l := range []struct {
		name, key, val string
	}{
		{"Policy", "", orNoLog(ch.Policy)},
		{"Predictor", "predictor", orNoLog(ch.Predictor)},
		{"Decision-log entries", "", fmtInt(ch.Rows)},
		{"Jobs ranked", "decided", fmtInt(ch.Jobs)},
		{"Jobs re-ranked while waiting", "reranked", fmtInt(ch.Reranked)},
		{"Jobs ranked in dry run only", "dryrun", fmtInt(ch.Planned)},
		{"Cycles", "cycle", fmtInt(cy.Cycles)},
		{"Cycles in dry run", "cycle", fmtInt(cy.Planned)},
		{"Values written to Slurm", "", strconv.FormatInt(cy.Written, 10)},
		{"Values Slurm refused", "", strconv.FormatInt(cy.WriteErrors, 10)},
		{"Cycles that failed", "cycle", fmtInt(cy.Failed)},
		{"Median cycle duration", "cycle", cycleDur(cy)},
	} {
		chg.Rows = append(chg.Rows, []cell{{Text: l.name, Key: l.key}, c(l.val)})
	}
	out = append(out, chg)

	pw := table{Name: "power", Title: "Power saving", Cols: []col{{Head: "Figure"}}}
	for _, p := range r.Power {
		head := "Done"
		if p.Planned {
			head = "Dry run (planned only)"
		}
		pw.Cols = append(pw.Cols, col{Head: head, Num: true})
	}
	if len(r.Power) > 0 {
		for _, l := range []struct {
			name string
			f    func(accounting.PowerSummary) string
		}{
			{"Node-hours powered off", func(p accounting.PowerSummary) string { return fmtHours(Num(p.NodeHoursOff)) }},
			{"Estimated energy saved (kWh)", func(p accounting.PowerSummary) string {
				if p.IdleWatts <= 0 {
					return "no idle power given"
				}
				return fmtFloat(Num(p.EnergyKWh), 1)
			}},
			{"Power-downs", func(p accounting.PowerSummary) string { return fmtInt(p.PowerDowns) }},
			{"Power-ups", func(p accounting.PowerSummary) string { return fmtInt(p.PowerUps) }},
			{"Changes Slurm refused", func(p accounting.PowerSummary) string { return fmtInt(p.Refused) }},
			{"Lack (node-hours)", func(p accounting.PowerSummary) string { return fmtHours(Num(p.LackNodeHours)) }},
			{"Cycles with lack", func(p accounting.PowerSummary) string { return fmtInt(p.LackCycles) }},
		} {
			row := []cell{c(l.name)}
			for _, p := range r.Power {
				row = append(row, c(l.f(p)))
			}
			pw.Rows = append(pw.Rows, row)
		}
	}
	out = append(out, pw)

	if cf := r.Counterfactual; cf != nil {
		t := table{Name: "counterfactual", Title: "The same jobs under Slurm's plain fair-share", Cols: []col{{Head: "Figure"}}}
		for _, s := range cf.Scenarios {
			t.Cols = append(t.Cols, col{Head: s.Label, Num: true})
		}
		for _, l := range []struct {
			name, key string
			f         func(Scenario) string
		}{
			{"Median wait", "wait", func(s Scenario) string { return waitOr(s.MedianWait) }},
			{"Mean wait", "wait", func(s Scenario) string { return waitOr(s.AvgWait) }},
			{"95th-percentile wait", "p95", func(s Scenario) string { return waitOr(s.P95Wait) }},
			{"Mean bounded slowdown", "bsld", func(s Scenario) string { return or(s.AvgBSLD, fmtFloat(s.AvgBSLD, 2), whyNoneStarted) }},
			{"Jain's index while waiting", "jainbacklog", func(s Scenario) string { return or(s.Jain, fmtFloat(s.Jain, 3), whyNoBacklog) }},
			{"95th-percentile ρ", "p95rho", func(s Scenario) string { return or(s.P95Rho, fmtFloat(s.P95Rho, 2), whyNoneStarted) }},
		} {
			row := []cell{{Text: l.name, Key: l.key}}
			for _, s := range cf.Scenarios {
				row = append(row, c(l.f(s)))
			}
			t.Rows = append(t.Rows, row)
		}
		out = append(out, t)

		ta := table{Name: "counterfactual_accounts", Title: "Median wait by account, as it happened and simulated",
			Cols: []col{{Head: "Account"}, {Head: "Jobs replayed", Key: "jobsreplayed", Num: true}}}
		for _, s := range cf.Scenarios {
			ta.Cols = append(ta.Cols, col{Head: s.Label, Key: "wait", Num: true})
		}
		for _, a := range cf.Accounts {
			row := []cell{c(a.Account), c(fmtInt(a.Jobs))}
			for _, w := range a.MedianWait {
				row = append(row, c(waitOr(w)))
			}
			ta.Rows = append(ta.Rows, row)
		}
		out = append(out, ta)
	}
	return out
}

func cycleDur(cy CycleStats) string {
	if cy.Cycles == 0 {
		return "no cycle"
	}
	return strconv.FormatFloat(cy.MedianSeconds, 'f', 2, 64) + " s"
}

// orNone names an empty partition.
func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}

// orNoLog is a decision-log figure, or says there was no log.
func orNoLog(s string) string {
	if s == "" {
		return "no decision logged"
	}
	return s
}

// tableByName finds a table; nil when absent.
func tableByName(ts []table, name string) *table {
	for i := range ts {
		if ts[i].Name == name {
			return &ts[i]
		}
	}
	return nil
}

// groupDigits puts thousands separators into the integer part of a
// formatted number ("12345.6" → "12,345.6"), for people; CSV keeps plain
// digits.
func groupDigits(s string) string {
	start := 0
	if strings.HasPrefix(s, "+") || strings.HasPrefix(s, "-") {
		start = 1
	}
	end := start
	for end < len(s) && s[end] >= '0' && s[end] <= '9' {
		end++
	}
	if end-start <= 4 {
		return s
	}
	var b strings.Builder
	b.WriteString(s[:start])
	digits := s[start:end]
	for i, d := range digits {
		if i > 0 && (len(digits)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(d)
	}
	b.WriteString(s[end:])
	return b.String()
}

// capitalize upper-cases the first letter of s.
func capitalize(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}
