package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/fairway-hpc/fairway/accounting"
	"github.com/fairway-hpc/fairway/accounting/report"
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
	// readAt is when load read a period without --until: the end a later
	// command reads the same period up to (simulateFlags).
	readAt time.Time
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
			return nil, usageErr{ingestFlagError(err)}
		}
	}
	if s := c.String("until"); s != "" {
		if db.Until, err = accounting.ParseSince(s); err != nil {
			return nil, usagef("--until %q: want RFC 3339 (2026-10-01T00:00:00Z) or YYYY-MM-DD", s)
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

// load reads the history and replays it on the cluster of layout, else of
// nodes × perNode, else the least the history fits (report.ReplayWorkload).
func (db *tuneDB) load(ctx context.Context, nodes, perNode int, layout *sim.Layout) (*sim.Workload, error) {
	db.readAt = time.Now()
	jobs, cluster, err := finishedHistory(ctx, db.URL, db.Cluster, db.Since, db.Until)
	if err != nil {
		return nil, fmt.Errorf("--from-db: %w", err)
	}
	w, err := report.ReplayWorkload(cluster, jobs, db.Unit, nodes, perNode, layout)
	if err != nil {
		return nil, fmt.Errorf("--from-db: cluster %s: %w", cluster, err)
	}
	return w, nil
}

// source says where the history came from, for the policy file.
func (db *tuneDB) source() string {
	return "accounting database, jobs that ended " + report.PeriodText(db.Since, db.Until)
}

// simulateFlags are the flags that make simulate --from-db read the period
// db read: --days and --months as the --since they gave (simulate has
// neither), and an open end closed at the instant the history was read,
// so that the jobs that end later do not move the split. Instants are
// exact (RFC 3339 with the fraction, which --since and --until take).
func (db *tuneDB) simulateFlags() string {
	s := "--from-db"
	if !db.Since.IsZero() {
		s += " --since " + db.Since.UTC().Format(time.RFC3339Nano)
	}
	until := db.Until
	if until.IsZero() {
		until = db.readAt
	}
	if !until.IsZero() {
		s += " --until " + until.UTC().Format(time.RFC3339Nano)
	}
	return s
}
