package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/fairway-hpc/fairway/accounting"
	"github.com/fairway-hpc/fairway/accounting/report"
	"github.com/fairway-hpc/fairway/policy"
	"github.com/fairway-hpc/fairway/policy/sim"
	"github.com/urfave/cli/v2"
)

// tuneDB is where `fairway tune --from-db` reads its history: the finished
// jobs of one cluster that ended in [Since, Until) (zero: open).
type tuneDB struct {
	URL          string
	Cluster      string // "": the database's only cluster
	Since, Until time.Time
	Unit         sim.Unit // "": told from the history
}

// tuneDBFlags are tune's flags for reading the accounting database.
func tuneDBFlags() []cli.Flag {
	return []cli.Flag{
		&cli.BoolFlag{Name: "from-db", Usage: "tune on the finished jobs of --cluster in the accounting database instead of a trace", EnvVars: []string{"FAIRWAY_TUNE_FROM_DB"}},
		&cli.StringFlag{Name: "cluster", Usage: "with --from-db: the cluster (Slurm ClusterName); may be left out when the database holds one", EnvVars: []string{"FAIRWAY_CLUSTER"}},
		databaseFlag(),
		&cli.StringFlag{Name: "since", Usage: "with --from-db: the jobs that ended at or after this instant (RFC 3339 or YYYY-MM-DD; default: all the database holds)", EnvVars: []string{"FAIRWAY_TUNE_SINCE"}},
		&cli.StringFlag{Name: "until", Usage: "with --from-db: the jobs that ended before this instant (RFC 3339 or YYYY-MM-DD; default: now)", EnvVars: []string{"FAIRWAY_TUNE_UNTIL"}},
		&cli.IntFlag{Name: "days", Usage: "with --from-db: the jobs that ended in the last N days (instead of --since)", EnvVars: []string{"FAIRWAY_TUNE_DAYS"}},
		&cli.IntFlag{Name: "months", Usage: "with --from-db: the jobs that ended in the last N months (instead of --since)", EnvVars: []string{"FAIRWAY_TUNE_MONTHS"}},
		&cli.StringFlag{Name: "unit", Usage: "with --from-db: what jobs are counted in, gpu or cpu (default: gpu when a job of the history asked for GPUs)", EnvVars: []string{"FAIRWAY_TUNE_UNIT"}},
	}
}

// tuneDBSettings reads the --from-db flags (c.Bool("from-db") set), naming
// the bad one; now ends --days and --months.
func tuneDBSettings(c *cli.Context, now time.Time) (*tuneDB, error) {
	db := &tuneDB{URL: c.String("database-url"), Cluster: c.String("cluster")}
	switch {
	case c.String("trace") != "":
		return nil, errors.New("--from-db and --trace: give one source")
	case c.String("format") != "":
		return nil, errors.New("--format: only with --trace")
	case db.URL == "":
		return nil, errors.New("--from-db: no database: set --database-url or FAIRWAY_DATABASE_URL")
	}
	given := 0
	for _, f := range []string{"since", "days", "months"} {
		if c.IsSet(f) {
			given++
		}
	}
	if given > 1 {
		return nil, errors.New("--since, --days, --months: give at most one")
	}
	var err error
	if s := c.String("since"); s != "" {
		if db.Since, err = accounting.ParseSince(s); err != nil {
			return nil, ingestFlagError(err)
		}
	}
	if s := c.String("until"); s != "" {
		if db.Until, err = accounting.ParseSince(s); err != nil {
			return nil, fmt.Errorf("--until %q: want RFC 3339 (2026-10-01T00:00:00Z) or YYYY-MM-DD", s)
		}
	}
	end := now
	if !db.Until.IsZero() {
		end = db.Until
	}
	switch d, m := c.Int("days"), c.Int("months"); {
	case c.IsSet("days") && d < 1:
		return nil, fmt.Errorf("--days %d: want at least 1", d)
	case c.IsSet("months") && m < 1:
		return nil, fmt.Errorf("--months %d: want at least 1", m)
	case c.IsSet("days"):
		db.Since = end.AddDate(0, 0, -d)
	case c.IsSet("months"):
		db.Since = end.AddDate(0, -m, 0)
	}
	if !db.Since.IsZero() && !db.Until.IsZero() && !db.Since.Before(db.Until) {
		return nil, fmt.Errorf("--since %s, --until %s: an empty period", db.Since.Format(time.RFC3339), db.Until.Format(time.RFC3339))
	}
	switch u := c.String("unit"); u {
	case "":
	case "gpu", "cpu":
		db.Unit, _ = report.ParseUnit(u)
	default:
		return nil, fmt.Errorf("--unit %q: want gpu or cpu", u)
	}
	return db, nil
}

// load reads the history and sizes the machine it ran on: nodes × perNode
// when given, else what the history shows (historyCluster).
func (db *tuneDB) load(ctx context.Context, nodes, perNode int) (*sim.Workload, error) {
	jobs, cluster, err := report.FinishedHistory(ctx, db.URL, db.Cluster, db.Since, db.Until)
	if err != nil {
		return nil, fmt.Errorf("--from-db: %w", err)
	}
	c, err := historyCluster(jobs, db.Unit, nodes, perNode)
	if err != nil {
		return nil, fmt.Errorf("--from-db: cluster %s: %w", cluster, err)
	}
	// Submit order, as a trace is read: the time split cuts by submits.
	slices.SortStableFunc(jobs, func(a, b policy.Job) int {
		if c := a.Submit.Compare(b.Submit); c != 0 {
			return c
		}
		return cmp.Compare(a.ID, b.ID)
	})
	return &sim.Workload{Name: cluster, Format: "accounting database", Jobs: jobs, Cluster: c,
		LeftOut: map[string]int{}}, nil
}

// source says where the history came from, for the policy file.
func (db *tuneDB) source() string {
	return "accounting database, jobs that ended " + report.PeriodText(db.Since, db.Until)
}

// historyCluster is the machine a database history is replayed on. The
// database keeps no node inventory, only what each job asked for, so the
// history tells a lower bound: a node holds at least the most units one
// job asked for on one node (units ÷ nodes, rounded up), and there are at
// least as many nodes as the widest job spanned and as the most units in
// use at once need. nodes and perNode, when > 0, override; unit "" is GPUs
// when a job asked for GPUs, else processors.
func historyCluster(jobs []policy.Job, unit sim.Unit, nodes, perNode int) (sim.Cluster, error) {
	if unit == "" {
		unit = sim.CPUs
		if slices.ContainsFunc(jobs, func(j policy.Job) bool { return j.GPUs > 0 }) {
			unit = sim.GPUs
		}
	}
	c := sim.Cluster{Nodes: nodes, PerNode: perNode, Unit: unit}
	if nodes > 0 && perNode > 0 {
		return c, nil
	}
	type ev struct {
		t time.Time
		d int
	}
	var evs []ev
	widest, most := 0, 0
	for i := range jobs {
		j := &jobs[i]
		need := c.Need(j)
		if need <= 0 || j.Start.IsZero() || !j.End.After(j.Start) {
			continue
		}
		n := max(j.Nodes, 1)
		widest = max(widest, n)
		most = max(most, (need+n-1)/n)
		evs = append(evs, ev{j.Start, need}, ev{j.End, -need})
	}
	if most == 0 {
		return c, fmt.Errorf("no job of the history ran with %s: give --nodes and --per-node, or --unit", unit)
	}
	// Ends before starts at the same instant: the units are free again.
	slices.SortFunc(evs, func(a, b ev) int {
		if c := a.t.Compare(b.t); c != 0 {
			return c
		}
		return cmp.Compare(a.d, b.d)
	})
	peak, cur := 0, 0
	for _, e := range evs {
		cur += e.d
		peak = max(peak, cur)
	}
	if c.PerNode == 0 {
		c.PerNode = most
	}
	if c.Nodes == 0 {
		c.Nodes = max(widest, (peak+c.PerNode-1)/c.PerNode)
	}
	return c, nil
}
