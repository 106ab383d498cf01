package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/fairway-hpc/fairway/accounting/report"
	"github.com/fairway-hpc/fairway/policy/power"
	"github.com/fairway-hpc/fairway/slurmctl"
	"github.com/urfave/cli/v2"
)

// powerDBFlags are power eval's flags for reading the node use of the
// accounting database's finished jobs instead of a sequence file.
func powerDBFlags() []cli.Flag {
	return []cli.Flag{
		&cli.BoolFlag{Name: "from-db", Usage: "replay the node use of --cluster's finished jobs in the accounting database (a node jobs share counted once) instead of --sequence", EnvVars: []string{"FAIRWAY_POWER_FROM_DB"}},
		&cli.StringFlag{Name: "cluster", Usage: "with --from-db: the cluster (Slurm ClusterName); may be left out when the database holds one", EnvVars: []string{"FAIRWAY_CLUSTER"}},
		databaseFlag(),
		&cli.StringFlag{Name: "since", Usage: "with --from-db: node use from this instant (RFC 3339 or YYYY-MM-DD; default: the first job's start)", EnvVars: []string{"FAIRWAY_POWER_SINCE"}},
		&cli.StringFlag{Name: "until", Usage: "with --from-db: node use up to this instant (RFC 3339 or YYYY-MM-DD; default: the last job's end)", EnvVars: []string{"FAIRWAY_POWER_UNTIL"}},
		&cli.IntFlag{Name: "days", Usage: "with --from-db: node use over the last N days (instead of --since)", EnvVars: []string{"FAIRWAY_POWER_DAYS"}},
		&cli.StringFlag{Name: "partition", Usage: "with --from-db: only the jobs that ran in these comma-separated partitions (give their nodes as --total)", EnvVars: []string{"FAIRWAY_POWER_PARTITION"}},
	}
}

// powerDB is where power eval --from-db reads node use: the history of
// db, of the jobs that ran in Partitions (all where empty).
type powerDB struct {
	*tuneDB
	Partitions []string
}

// powerDBSettings reads the --from-db flags (c.Bool("from-db") set).
func powerDBSettings(c *cli.Context) (*powerDB, error) {
	if c.String("sequence") != "" {
		return nil, errors.New("--from-db and --sequence: give one source")
	}
	db, err := tuneDBSettings(c, time.Now())
	if err != nil {
		return nil, err
	}
	out := &powerDB{tuneDB: db}
	if v := c.String("partition"); v != "" {
		for _, p := range strings.Split(v, ",") {
			if p = strings.TrimSpace(p); p == "" {
				return nil, fmt.Errorf("--partition %q: an empty partition name", v)
			}
			out.Partitions = append(out.Partitions, p)
		}
	}
	return out, nil
}

// dbSequence is the node use of db's finished jobs, one sample a minute
// from its --since (else the first job's start) to its --until (else the
// last job's end), out of total nodes (else the most the history names or
// holds at once); it says what it read on note.
func dbSequence(ctx context.Context, db *powerDB, total int, note io.Writer) ([]power.Sample, error) {
	jobs, cluster, err := finishedHistory(ctx, db.URL, db.Cluster, db.Since, db.Until)
	if err != nil {
		return nil, fmt.Errorf("--from-db: %w", err)
	}
	where := ""
	if len(db.Partitions) > 0 {
		kept := jobs[:0]
		for _, j := range jobs {
			if slices.Contains(db.Partitions, j.Partition) {
				kept = append(kept, j)
			}
		}
		jobs = kept
		where = " in partition " + strings.Join(db.Partitions, ", ")
	}
	spans := power.JobSpans(jobs, slurmctl.ExpandHostlist)
	if len(spans) == 0 {
		return nil, fmt.Errorf("--from-db: cluster %s: no job%s that ended %s ran on a node", cluster, where, report.PeriodText(db.Since, db.Until))
	}
	from, to := db.Since, db.Until
	named, hosts := 0, map[string]bool{}
	for _, s := range spans {
		if db.Since.IsZero() && (from.IsZero() || s.Start.Before(from)) {
			from = s.Start
		}
		if db.Until.IsZero() && s.End.After(to) {
			to = s.End
		}
		if s.Hosts != nil {
			named++
		}
		for _, h := range s.Hosts {
			hosts[h] = true
		}
	}
	samples := power.UseSequence(spans, from, to, total)
	if len(samples) == 0 {
		return nil, fmt.Errorf("--from-db: cluster %s: no whole minute between %s and %s", cluster, from.Format(time.RFC3339), to.Format(time.RFC3339))
	}
	size := fmt.Sprintf("%d nodes (--total)", samples[0].Total)
	if total == 0 {
		size = fmt.Sprintf("%d nodes, the most the history names (%d) or holds at once: give the cluster's with --total", samples[0].Total, len(hosts))
	}
	fmt.Fprintf(note, "node use of cluster %s: %d jobs%s that ended %s, %d of them with their nodes named (a node jobs share counts once; the others count by node count); one sample a minute from %s to %s; cluster %s; jobs still running when it was read are not in it\n",
		cluster, len(spans), where, report.PeriodText(db.Since, db.Until), named, samples[0].Time.Format(time.DateTime),
		samples[len(samples)-1].Time.Add(time.Minute).Format(time.DateTime), size)
	return samples, nil
}
