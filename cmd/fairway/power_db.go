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

// ranHistory reads the finished jobs that ran during a period
// (report.RanHistory; tests replace it).
var ranHistory = report.RanHistory

// dbSequence is the node use of the finished jobs that ran during db's
// period, one sample a minute from its --since (else the first job's
// start) to its --until (else the last job's end; at most now, past which
// no job is recorded), out of total nodes (else the most of the nodes the
// history names and those it holds at once); it says what it read on note.
// A use above a given total is refused: replayed against a smaller
// cluster than the history ran on, every rule's count would be wrong.
func dbSequence(ctx context.Context, db *powerDB, total int, now time.Time, note io.Writer) ([]power.Sample, error) {
	jobs, cluster, err := ranHistory(ctx, db.URL, db.Cluster, db.Since, db.Until)
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
		return nil, fmt.Errorf("--from-db: cluster %s: no job%s ran on a node %s", cluster, where, report.PeriodText(db.Since, db.Until))
	}
	// UTC, as a sequence file's times and the split's days are.
	from, to := db.Since.UTC(), db.Until.UTC()
	named, hosts := 0, map[string]bool{}
	for _, s := range spans {
		if db.Since.IsZero() && (from.IsZero() || s.Start.Before(from)) {
			from = s.Start.UTC()
		}
		if db.Until.IsZero() && s.End.After(to) {
			to = s.End.UTC()
		}
		if s.Hosts != nil {
			named++
		}
		for _, h := range s.Hosts {
			hosts[h] = true
		}
	}
	if to.After(now) {
		to = now.UTC()
	}
	size := total
	if size == 0 {
		size = len(hosts) // UseSequence raises it to the most held at once
	}
	samples := power.UseSequence(spans, from, to, size)
	if len(samples) == 0 {
		return nil, fmt.Errorf("--from-db: cluster %s: no whole minute between %s and %s", cluster, from.Format(time.RFC3339), to.Format(time.RFC3339))
	}
	peak := slices.MaxFunc(samples, func(a, b power.Sample) int { return a.Active - b.Active })
	sizeText := fmt.Sprintf("%d nodes (--total)", total)
	if total > 0 && peak.Active > total {
		why := ""
		if named < len(spans) {
			why = fmt.Sprintf("; %d of its %d jobs have no node names and count by node count, a node they share once per job", len(spans)-named, len(spans))
		}
		return nil, fmt.Errorf("--total %d: cluster %s's jobs%s hold %d nodes at once at %s UTC%s: want the node count of the cluster they ran on",
			total, cluster, where, peak.Active, peak.Time.Format(time.DateTime), why)
	}
	if total == 0 {
		sizeText = fmt.Sprintf("%d nodes, the more of the %d the history names and the %d it holds at once: give the cluster's with --total", samples[0].Total, len(hosts), peak.Active)
	}
	fmt.Fprintf(note, "node use of cluster %s: %d jobs%s that ran %s, %d of them with their nodes named (a node jobs share counts once; the others count by node count); one sample a minute from %s to %s UTC; cluster %s; jobs still running when it was read are not in it\n",
		cluster, len(spans), where, report.PeriodText(db.Since, db.Until), named, samples[0].Time.Format(time.DateTime),
		samples[len(samples)-1].Time.Add(time.Minute).Format(time.DateTime), sizeText)
	return samples, nil
}
