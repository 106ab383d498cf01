package accounting

import (
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"math"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/fairway-hpc/fairway/policy"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// Source yields jobs to import, one at a time, in input order.
type Source interface {
	// Next advances to the next job; false at the end or on an error.
	Next() bool
	// Job is the job Next advanced to.
	Job() policy.Job
	// Err is the error that stopped Next, nil at a clean end.
	Err() error
	// Where locates the current job for messages, e.g. "log.csv:12".
	Where() string
	// Skipped counts malformed records the source skipped on its own
	// (under a skip-bad option); they count as read and rejected.
	Skipped() int
}

// ImportOptions tune Import.
type ImportOptions struct {
	// Source names where the jobs come from (slurmdbd, sacct-json, swf,
	// helios, philly-mix, slurmctld), recorded in job.source.
	Source string
	// SkipBad rejects invalid jobs and imports the rest. By default the
	// first invalid job fails the whole import and nothing is written.
	SkipBad bool
	// Phase, when set, is told when the import moves on: "copy" (reading
	// the input into the staging table), "merge" (the upsert) and
	// "commit" (everything is written, the commit follows).
	Phase func(phase string)
	// Watermark, when set, is stored in the same transaction as the jobs,
	// so an incremental source resumes exactly where the committed data
	// ends.
	Watermark *WatermarkUpdate
}

// WatermarkUpdate moves the watermark of an incremental source.
type WatermarkUpdate struct {
	Cluster string
	Source  string
	At      time.Time
}

// Summary counts what an import did. Read = Inserted + Updated + Unchanged
// + Duplicates + Unfinished + Rejected.
type Summary struct {
	Read       int // records read from the input
	Inserted   int // jobs new to the database
	Updated    int // jobs already there, with different values now
	Unchanged  int // jobs already there with the same values
	Duplicates int // repeats of a key earlier in the same input; the last one wins
	Unfinished int // pending or running jobs: not history yet, left out
	Rejected   int // invalid records (only under SkipBad; otherwise the import fails)
	// LeftOut counts records the source left out as not replayable (an
	// archive trace's unknown submit or run times), by reason.
	LeftOut map[string]int
	// Rejects holds the first MaxRejects reasons, with their locations.
	Rejects []error
}

// MaxRejects is how many reject reasons a Summary keeps.
const MaxRejects = 20

// ErrInvalidJob is wrapped by the reasons a job is refused.
var ErrInvalidJob = errors.New("invalid job")

// validate refuses a job that cannot be keyed or stored faithfully.
func validate(j *policy.Job) error {
	bad := func(format string, a ...any) error {
		return fmt.Errorf("%w: "+format, append([]any{ErrInvalidJob}, a...)...)
	}
	switch {
	case j.Cluster == "":
		return bad("no cluster name")
	case j.ID < 0: // traces may count from 0 (Philly-MIX does)
		return bad("negative job id %d", j.ID)
	case j.ArrayTask < -1 || j.ArrayTask > math.MaxInt32:
		return bad("array task %d", j.ArrayTask)
	case j.Submit.IsZero():
		return bad("no submit time")
	case j.Nodes < 0 || j.CPUs < 0 || j.GPUs < 0 || j.Shards < 0 || j.MemoryMB < 0:
		return bad("negative resources (nodes %d, cpus %d, gpus %d, shards %d, memory %d MB)", j.Nodes, j.CPUs, j.GPUs, j.Shards, j.MemoryMB)
	case j.Nodes > math.MaxInt32 || j.CPUs > math.MaxInt32 || j.GPUs > math.MaxInt32 || j.Shards > math.MaxInt32:
		// The columns are integer: converted, the count would wrap into
		// another (often negative) one. Only a corrupt record or a Slurm
		// marker (NO_VAL) read as a count is this large.
		return bad("more than an integer column holds (nodes %d, cpus %d, gpus %d, shards %d)", j.Nodes, j.CPUs, j.GPUs, j.Shards)
	case j.ExitCode < math.MinInt32 || j.ExitCode > math.MaxInt32:
		return bad("exit code %d", j.ExitCode)
	case j.TimeLimit < 0:
		return bad("negative time limit %s", j.TimeLimit)
	case !isText(j.Cluster):
		return bad("cluster name %q is not UTF-8 text without NUL bytes", j.Cluster)
	}
	for _, t := range []time.Time{j.Submit, j.Eligible, j.Start, j.End, j.Deadline} {
		if !t.IsZero() && (t.Year() < 1900 || t.Year() > 9999) {
			return bad("time %s out of range", t.Format(time.RFC3339))
		}
	}
	return nil
}

// cleanJobText makes j's free text storable as PostgreSQL text, which
// refuses invalid UTF-8 and NUL bytes, no longer than maxText, and
// reports whether it changed any.
// The text a user chooses (job name, account where associations are not
// enforced) may hold any byte but NUL in Slurm. Decoding Slurm's JSON
// replaces invalid UTF-8 but turns a \u0000 escape into NUL, and traces
// (CSV) and hand-edited files reach here byte for byte. Left in, one such
// job failed the COPY of its whole batch, naming no job: the whole import,
// and RecordFinished's batch, which serve's buffer then retried forever.
// The cluster is part of the key and is checked by validate instead.
func cleanJobText(j *policy.Job) bool {
	changed := false
	for _, f := range []*string{&j.User, &j.Account, &j.Partition, &j.QOS, &j.Name, &j.GPUType} {
		if s, ok := cleanText(*f); ok {
			*f, changed = s, true
		}
	}
	// A node list cut short would name other nodes: one that is not text
	// or too long to be Slurm's is dropped, and the job counts by its
	// node count instead.
	if j.Hosts != "" && (len(j.Hosts) > maxHosts || !isText(j.Hosts)) {
		j.Hosts, changed = "", true
	}
	return changed
}

// maxHosts bounds a job's node list in bytes: a hostlist expression names
// thousands of nodes in far less.
const maxHosts = 64 << 10

// maxText is the longest free text a job keeps, in bytes: Slurm's own
// limit on a job's name, account, wckey and the like (slurmctld refuses
// longer ones, _test_job_desc_fields in job_mgr.c). Longer text comes only
// from files, or from invalid bytes that JSON decoding widened to U+FFFD
// (three bytes each). Kept whole, an account of a few thousand bytes
// failed every rebuild of the usage ledger: usage_daily's key (cluster,
// day, account, user) outgrew a B-tree entry (2704 bytes).
const maxText = 1024

// cleanText returns s as validText does, cut to maxText bytes on a
// character boundary, and whether it changed.
func cleanText(s string) (string, bool) {
	if len(s) <= maxText && isText(s) {
		return s, false
	}
	s = validText(s)
	if len(s) > maxText {
		cut := maxText
		for !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut]
	}
	return s, true
}

// isText reports whether PostgreSQL text takes s: UTF-8 without NUL.
func isText(s string) bool { return utf8.ValidString(s) && strings.IndexByte(s, 0) < 0 }

// validText returns s with each run of invalid UTF-8 and each NUL byte
// replaced by U+FFFD, which PostgreSQL text takes.
func validText(s string) string {
	if isText(s) {
		return s
	}
	return strings.ReplaceAll(strings.ToValidUTF8(s, "\uFFFD"), "\x00", "\uFFFD")
}

const stageTable = "fairway_stage_job"

// stageColumns are the columns copied into the staging table, in Values
// order. seq keeps input order, so that of two rows with one key the later
// wins.
var stageColumns = []string{"seq", "cluster", "job_id", "array_task", "submit_time", "array_job_id", "het_job",
	"user_name", "account", "partition", "qos", "name", "eligible_time", "start_time", "end_time", "time_limit_s",
	"nodes", "cpus", "memory_mb", "gpus", "gpu_type", "shards", "state", "exit_code", "deadline", "hosts"}

// directColumns are the columns copied straight into job.
var directColumns = append(append([]string(nil), stageColumns[1:]...), "source")

// jobKey and jobData split job's columns into key and the rest.
var (
	jobKey  = []string{"cluster", "job_id", "array_task", "submit_time"}
	jobData = stageColumns[5:]
)

// keepKnown are the columns some sources cannot fill: a merged row with
// NULL there keeps the stored value. The deadline is known to slurmctld
// (the jobs serve saw finish) and to the Philly-MIX trace, never to
// slurmdbd or sacct (see sacctJob), which later re-import the same jobs.
// The price: re-importing cannot clear a stored deadline.
var keepKnown = map[string]bool{"deadline": true, "hosts": true}

const createStage = `CREATE TEMP TABLE IF NOT EXISTS ` + stageTable + ` (
	seq bigint, cluster text, job_id bigint, array_task integer, submit_time timestamptz,
	array_job_id bigint, het_job boolean, user_name text, account text, partition text, qos text, name text,
	eligible_time timestamptz, start_time timestamptz, end_time timestamptz, time_limit_s bigint,
	nodes integer, cpus integer, memory_mb bigint, gpus integer, gpu_type text, shards integer,
	state text, exit_code integer, deadline timestamptz, hosts text)`

// mergeSQL merges the staging relation from into job in one MERGE. A row
// whose values did not change is not touched (no new row version,
// updated_at kept), so re-importing leaves the table identical; a NULL in
// a keepKnown column keeps the stored value and is no change. MERGE
// rather than INSERT ... ON CONFLICT: speculative insertion writes an
// extra WAL record per row and, on this server, made bulk ingest 2.4 times
// slower (docs/BENCHMARKS.md). MERGE does not guard against a concurrent
// insert of the same key; Import serialises imports per cluster with an
// advisory lock instead.
func mergeSQL(from string) string {
	cols := strings.Join(stageColumns[1:], ", ")
	var on, set, old, neu, vals []string
	for _, c := range jobKey {
		on = append(on, "j."+c+" = s."+c)
	}
	for _, c := range jobData {
		v := "s." + c
		if keepKnown[c] {
			v = "COALESCE(s." + c + ", j." + c + ")"
		}
		set = append(set, c+" = "+v)
		old = append(old, "j."+c)
		neu = append(neu, v)
	}
	for _, c := range stageColumns[1:] {
		vals = append(vals, "s."+c)
	}
	return `MERGE INTO job j USING ` + from + ` ON ` + strings.Join(on, " AND ") + `
WHEN MATCHED AND (` + strings.Join(old, ", ") + `) IS DISTINCT FROM (` + strings.Join(neu, ", ") + `) THEN
	UPDATE SET ` + strings.Join(set, ", ") + `, source = $1::text, updated_at = now()
WHEN NOT MATCHED THEN
	INSERT (` + cols + `, source) VALUES (` + strings.Join(vals, ", ") + `, $1::text)`
}

var dedupedStage = `(SELECT DISTINCT ON (` + strings.Join(jobKey, ", ") + `) * FROM ` + stageTable +
	` ORDER BY ` + strings.Join(jobKey, ", ") + `, seq DESC) s`

// importLock serialises imports of one cluster (see mergeSQL).
const importLock = `SELECT pg_advisory_xact_lock(hashtext('fairway import ' || c)) FROM unnest($1::text[]) c ORDER BY c`

// Rewinder is implemented by a Source that can start over from its first
// record (a file, jobs in memory). Import reads such a source twice: once
// to check it, once to write it.
type Rewinder interface {
	// Rewind restarts the source; an error means it cannot.
	Rewind() error
}

// Import stores the finished jobs of src in the job table, idempotently:
// the key is cluster, job id, array task and submit time, and importing the
// same input twice leaves the tables identical. Whatever happens (bad
// input, a dead database, a cancelled context) nothing is written unless
// everything is: the jobs, the marks on the usage ledger and the optional
// watermark commit in one transaction. Pending and running jobs are counted
// and left out. An invalid record fails the import with its location
// (file:line and the reason), unless opt.SkipBad, which counts it as
// rejected.
//
// The general path streams the jobs with COPY into a session-private
// staging table and merges that into job with one MERGE. A source that can
// Rewind is first read once without the database, which validates every
// record before anything is written and gives the months and key span; if
// no key repeats, the jobs are then copied straight into job under a
// savepoint, with the primary key as the arbiter: either every job is new
// and the import is done at close to COPY speed (about twice the speed of
// the staging path, docs/BENCHMARKS.md), or the copy stops at the first
// key already stored, rolls back to the savepoint, and the staging path
// runs in the same transaction.
func (s *Store) Import(ctx context.Context, src Source, opt ImportOptions) (Summary, error) {
	if opt.Source == "" {
		return Summary{}, errors.New("import: no source name")
	}
	pc, err := s.pool.Acquire(ctx)
	if err != nil {
		return Summary{}, fmt.Errorf("connect to the accounting database: %w", err)
	}
	defer pc.Release()
	conn := pc.Conn()
	// A larger temp_buffers keeps the staging table in memory; it only
	// takes effect on a session that has not used temp tables yet.
	if _, err := conn.Exec(ctx, `SET temp_buffers = '256MB'`); err != nil {
		return Summary{}, fmt.Errorf("prepare import: %w", err)
	}
	defer func() {
		if !conn.IsClosed() {
			_, _ = conn.Exec(context.WithoutCancel(ctx), `DROP TABLE IF EXISTS pg_temp.`+stageTable)
		}
	}()
	im := &importer{conn: conn, src: src, opt: opt, store: s}
	var sum Summary
	if rw, ok := src.(Rewinder); ok && rw.Rewind() == nil {
		im.rewind = rw
		sum, err = im.twoPass(ctx)
	} else {
		sum, err = im.onePass(ctx)
	}
	if err == nil && im.cs != nil && im.cs.repaired > 0 {
		s.log.Warn("stored jobs whose text held bytes PostgreSQL refuses (invalid UTF-8, NUL) with U+FFFD in their place, or cut text longer than Slurm allows, or without a node list that was not text or too long",
			"source", opt.Source, "jobs", im.cs.repaired, "first", im.cs.repairedAt, "max_text_bytes", maxText, "max_hosts_bytes", maxHosts)
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "23514" {
		// No partition for a row: another process dropped a month this
		// Store believed exists. Forget, so the next import creates it.
		s.forgetMonths()
	}
	return sum, err
}

// importer is one run of Import.
type importer struct {
	store  *Store
	conn   *pgx.Conn
	src    Source
	rewind Rewinder // nil for a source read once
	opt    ImportOptions
	sum    Summary
	cs     *copySource // what the input covers: months, spans, repeats
	staged int64
}

func (im *importer) phase(p string) {
	if im.opt.Phase != nil {
		im.opt.Phase(p)
	}
}

// onePass stages the input while reading it, creates its months, then
// merges in one transaction.
func (im *importer) onePass(ctx context.Context) (Summary, error) {
	im.phase("copy")
	if err := im.stage(ctx, im.conn); err != nil {
		return Summary{}, err
	}
	if err := im.store.ensureMonths(ctx, im.conn, "job", im.cs.months); err != nil {
		return Summary{}, err
	}
	err := pgx.BeginFunc(ctx, im.conn, func(tx pgx.Tx) error {
		if err := im.begin(ctx, tx); err != nil {
			return err
		}
		im.phase("merge")
		if err := im.merge(ctx, tx); err != nil {
			return err
		}
		return im.finish(ctx, tx)
	})
	if err != nil {
		return Summary{}, fmt.Errorf("import %s jobs: %w", im.opt.Source, err)
	}
	return im.sum, nil
}

// twoPass checks the whole input first, then copies it straight into job,
// falling back to staging and MERGE when a key is already stored.
func (im *importer) twoPass(ctx context.Context) (Summary, error) {
	im.phase("check")
	im.cs = newCopySource(im.src, im.opt.SkipBad, &im.sum)
	im.cs.checkOnly = true
	for im.cs.Next() {
	}
	if im.cs.err != nil {
		return Summary{}, im.cs.err
	}
	im.sum.Read += im.src.Skipped()
	im.sum.Rejected += im.src.Skipped()
	checked := im.sum
	if err := im.store.ensureMonths(ctx, im.conn, "job", im.cs.months); err != nil {
		return Summary{}, err
	}
	err := pgx.BeginFunc(ctx, im.conn, func(tx pgx.Tx) error {
		if err := im.begin(ctx, tx); err != nil {
			return err
		}
		if im.cs.seq == 0 { // nothing finished to store
			return im.finish(ctx, tx)
		}
		if !im.cs.mayRepeat {
			// An input that overlaps what is stored (a re-import, the
			// overlap of a slurmdbd window) usually starts or ends with a
			// stored job: two key lookups spare a doomed COPY (and an
			// error in the server's log).
			stored, err := im.endsStored(ctx, tx)
			if err != nil {
				return err
			}
			if !stored {
				im.phase("copy")
				done, err := im.copyDirect(ctx, tx)
				if err != nil || done {
					return err
				}
			}
		}
		// Some key is stored already, or the input repeats one: stage the
		// input again and merge it.
		im.phase("copy")
		if err := im.rewind.Rewind(); err != nil {
			return fmt.Errorf("re-read input: %w", err)
		}
		if err := im.stage(ctx, tx); err != nil {
			return err
		}
		im.phase("merge")
		if err := im.merge(ctx, tx); err != nil {
			return err
		}
		return im.finish(ctx, tx)
	})
	if err != nil {
		return Summary{}, fmt.Errorf("import %s jobs: %w", im.opt.Source, err)
	}
	// The counts of reading come from the check; the write passes saw the
	// same records.
	im.sum.Read, im.sum.Unfinished, im.sum.Rejected, im.sum.Rejects = checked.Read, checked.Unfinished, checked.Rejected, checked.Rejects
	return im.sum, nil
}

// endsStored reports whether the first or the last job of the input is
// stored already.
func (im *importer) endsStored(ctx context.Context, tx pgx.Tx) (bool, error) {
	var stored bool
	f, l := im.cs.first, im.cs.last
	err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM job WHERE
		(cluster, job_id, array_task, submit_time) IN (($1, $2, $3, $4), ($5, $6, $7, $8)))`,
		f.Cluster, f.ID, f.ArrayTask, f.Submit, l.Cluster, l.ID, l.ArrayTask, l.Submit).Scan(&stored)
	if err != nil {
		return false, fmt.Errorf("look up stored jobs: %w", err)
	}
	return stored, nil
}

// copyDirect copies the input straight into job under a savepoint. It
// reports done when every job was new and the import is complete; false
// (and the savepoint rolled back) when a key was already stored.
func (im *importer) copyDirect(ctx context.Context, tx pgx.Tx) (bool, error) {
	if err := im.rewind.Rewind(); err != nil {
		return false, fmt.Errorf("re-read input: %w", err)
	}
	sp, err := tx.Begin(ctx)
	if err != nil {
		return false, fmt.Errorf("savepoint: %w", err)
	}
	cs := newCopySource(im.src, im.opt.SkipBad, &Summary{})
	cs.source, cs.noTrack = im.opt.Source, true
	n, err := sp.CopyFrom(ctx, pgx.Identifier{"job"}, directColumns, cs)
	if cs.err != nil {
		return false, cs.err // the input changed under us: it passed the check
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "23505" { // unique_violation: a key is stored
		if err := sp.Rollback(ctx); err != nil {
			return false, fmt.Errorf("roll back to savepoint: %w", err)
		}
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("copy jobs into job: %w", err)
	}
	if err := sp.Commit(ctx); err != nil {
		return false, fmt.Errorf("release savepoint: %w", err)
	}
	im.sum.Inserted = int(n)
	return true, im.finish(ctx, tx)
}

// stage streams the input into the staging table (on conn or inside tx)
// and analyses it.
func (im *importer) stage(ctx context.Context, db stager) error {
	if _, err := db.Exec(ctx, createStage); err != nil {
		return fmt.Errorf("create staging table: %w", err)
	}
	if _, err := db.Exec(ctx, `TRUNCATE `+stageTable); err != nil {
		return fmt.Errorf("clear staging table: %w", err)
	}
	sum := &im.sum
	if im.rewind != nil {
		sum = &Summary{} // counted by the check already
	}
	cs := newCopySource(im.src, im.opt.SkipBad, sum)
	cs.noTrack = im.rewind != nil
	staged, err := db.CopyFrom(ctx, pgx.Identifier{stageTable}, stageColumns, cs)
	if cs.err != nil {
		return cs.err
	}
	if err != nil {
		return fmt.Errorf("copy jobs into staging table: %w", err)
	}
	if im.rewind == nil {
		im.cs = cs
		im.sum.Read += im.src.Skipped()
		im.sum.Rejected += im.src.Skipped()
	}
	im.staged = staged
	// Temp tables are never auto-analysed; without statistics the planner
	// guesses the staging table tiny and may probe job row by row.
	if staged > 0 {
		if _, err := db.Exec(ctx, `ANALYZE `+stageTable); err != nil {
			return fmt.Errorf("analyse staging table: %w", err)
		}
	}
	return nil
}

// stager is a connection or a transaction.
type stager interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	CopyFrom(ctx context.Context, table pgx.Identifier, cols []string, src pgx.CopyFromSource) (int64, error)
}

// begin takes the per-cluster import lock and records the clusters.
func (im *importer) begin(ctx context.Context, tx pgx.Tx) error {
	clusters := sortedKeys(im.cs.submits)
	if wm := im.opt.Watermark; wm != nil {
		if _, ok := im.cs.submits[wm.Cluster]; !ok {
			clusters = append(clusters, wm.Cluster)
			sort.Strings(clusters)
		}
	}
	if _, err := tx.Exec(ctx, importLock, clusters); err != nil {
		return fmt.Errorf("take import lock: %w", err)
	}
	return ensureClusters(ctx, tx, clusters)
}

// merge merges the staging table into job and counts what it did.
func (im *importer) merge(ctx context.Context, tx pgx.Tx) error {
	if im.staged == 0 {
		return nil
	}
	before, err := countSpans(ctx, tx, im.cs.submits)
	if err != nil {
		return err
	}
	// Room for the join's hash table (and the de-duplicating sort) in
	// memory; the default 4 MB spills a million-job merge to disk.
	if _, err := tx.Exec(ctx, `SET LOCAL work_mem = '256MB'`); err != nil {
		return fmt.Errorf("prepare merge: %w", err)
	}
	merged, err := merge(ctx, tx, im.opt.Source, im.cs.mayRepeat)
	if err != nil {
		return err
	}
	// Counting again costs a scan of the span; it is needed only when the
	// merge wrote rows and some could have been updates.
	after := before + merged
	if before > 0 && merged > 0 {
		if after, err = countSpans(ctx, tx, im.cs.submits); err != nil {
			return err
		}
	}
	distinct := int(im.staged)
	if im.cs.mayRepeat {
		if err := tx.QueryRow(ctx, `SELECT count(*) FROM (SELECT DISTINCT `+strings.Join(jobKey, ", ")+` FROM `+stageTable+`) k`).Scan(&distinct); err != nil {
			return fmt.Errorf("count staged keys: %w", err)
		}
	}
	im.sum.Inserted = after - before
	im.sum.Updated = merged - im.sum.Inserted
	im.sum.Duplicates = int(im.staged) - distinct
	im.sum.Unchanged = distinct - im.sum.Inserted - im.sum.Updated
	return nil
}

// finish marks the usage ledger and moves the watermark.
func (im *importer) finish(ctx context.Context, tx pgx.Tx) error {
	if im.sum.Inserted > 0 {
		// Updated rows mark their days through the job_usage_dirty
		// trigger; new rows are marked here, in one statement per cluster.
		if err := markDirty(ctx, tx, im.cs.runs); err != nil {
			return err
		}
	}
	if wm := im.opt.Watermark; wm != nil {
		if err := setWatermark(ctx, tx, wm.Cluster, wm.Source, wm.At); err != nil {
			return err
		}
	}
	im.phase("commit")
	return nil
}

// merge runs the MERGE over the staging table and returns how many rows
// it inserted or updated. When the input may repeat a key (one MERGE would
// then act on the first or the last occurrence depending on what is already
// stored), it merges the de-duplicated staging table instead, the last
// occurrence winning.
func merge(ctx context.Context, tx pgx.Tx, source string, mayRepeat bool) (int, error) {
	from := stageTable + " s"
	if mayRepeat {
		from = dedupedStage
	}
	tag, err := tx.Exec(ctx, mergeSQL(from), source)
	if err != nil {
		return 0, fmt.Errorf("merge staged jobs: %w", err)
	}
	return int(tag.RowsAffected()), nil
}

// countSpans counts the jobs of each cluster submitted within its span:
// before and after the merge, the difference is what it inserted. Only the
// partitions of the span are read.
func countSpans(ctx context.Context, tx pgx.Tx, spans map[string]window) (int, error) {
	total := 0
	for _, c := range sortedKeys(spans) {
		w := spans[c]
		var n int
		err := tx.QueryRow(ctx, `SELECT count(*) FROM job WHERE cluster = $1 AND submit_time >= $2 AND submit_time <= $3`, c, w.lo, w.hi).Scan(&n)
		if err != nil {
			return 0, fmt.Errorf("count jobs of %s: %w", c, err)
		}
		total += n
	}
	return total, nil
}

// markDirty marks the UTC days of each cluster's run window stale in the
// usage ledger.
func markDirty(ctx context.Context, tx pgx.Tx, runs map[string]window) error {
	for _, c := range sortedKeys(runs) {
		w := runs[c]
		_, err := tx.Exec(ctx, `INSERT INTO usage_dirty (cluster, day)
			SELECT $1, d::date FROM generate_series(date_trunc('day', $2::timestamptz AT TIME ZONE 'UTC'),
				date_trunc('day', $3::timestamptz AT TIME ZONE 'UTC'), interval '1 day') d
			ON CONFLICT DO NOTHING`, c, w.lo, w.hi)
		if err != nil {
			return fmt.Errorf("mark usage ledger of %s stale: %w", c, err)
		}
	}
	return nil
}

// window is a span of time an input covers on one cluster.
type window struct{ lo, hi time.Time }

// copySource feeds CopyFrom from a Source, validating each job and noting
// the months, clusters and run-time windows the input covers.
type copySource struct {
	src     Source
	skipBad bool
	sum     *Summary
	seq     int64
	vals    []any
	err     error

	months  map[month]bool
	submits map[string]window // per cluster, first and last submit time
	runs    map[string]window // per cluster, first start and last end

	// seen holds a 64-bit hash of every key staged. A repeated hash means
	// the input may repeat a key (or, about once in 10^10 imports of a
	// million jobs, two keys collide): the merge then de-duplicates.
	seed        maphash.Seed
	seen        map[uint64]struct{}
	mayRepeat   bool
	first, last policy.Job // the first and last job tracked

	// repaired counts the jobs whose text cleanJobText changed,
	// repairedAt locates the first.
	repaired   int
	repairedAt string

	// source, when set, makes Values give the direct-to-job columns
	// (directColumns) instead of the staging ones.
	source string
	// checkOnly skips building row values: the check pass of twoPass;
	// noTrack skips tracking: the write passes after it.
	checkOnly, noTrack bool
}

type keyOf struct {
	cluster string
	id      int64
	task    int
	submit  int64
}

func newCopySource(src Source, skipBad bool, sum *Summary) *copySource {
	return &copySource{src: src, skipBad: skipBad, sum: sum, vals: make([]any, len(stageColumns)+1),
		months: map[month]bool{}, submits: map[string]window{}, runs: map[string]window{},
		seed: maphash.MakeSeed(), seen: map[uint64]struct{}{}}
}

func (c *copySource) Next() bool {
	for c.src.Next() {
		j := c.src.Job()
		c.sum.Read++
		if !j.State.Finished() {
			c.sum.Unfinished++
			continue
		}
		if err := validate(&j); err != nil {
			e := &RecordError{Where: c.src.Where(), Err: err}
			if !c.skipBad {
				c.err = e
				return false
			}
			c.sum.Rejected++
			if len(c.sum.Rejects) < MaxRejects {
				c.sum.Rejects = append(c.sum.Rejects, e)
			}
			continue
		}
		if cleanJobText(&j) && !c.noTrack {
			if c.repaired == 0 {
				c.repairedAt = c.src.Where()
			}
			c.repaired++
		}
		c.fill(&j)
		return true
	}
	if err := c.src.Err(); err != nil {
		c.err = err
	}
	return false
}

func (c *copySource) fill(j *policy.Job) {
	c.seq++
	if !c.noTrack {
		c.track(j)
	}
	if c.checkOnly {
		return
	}
	v := c.vals
	v[0] = c.seq
	v[1] = j.Cluster
	v[2] = j.ID
	v[3] = int32(j.ArrayTask)
	v[4] = j.Submit
	v[5] = j.ArrayJob
	v[6] = j.HetJob
	v[7] = j.User
	v[8] = j.Account
	v[9] = j.Partition
	v[10] = j.QOS
	v[11] = j.Name
	v[12] = timeOrNil(j.Eligible)
	v[13] = timeOrNil(j.Start)
	v[14] = timeOrNil(j.End)
	if j.TimeLimit > 0 {
		v[15] = int64(j.TimeLimit / time.Second)
	} else {
		v[15] = nil
	}
	v[16] = int32(j.Nodes)
	v[17] = int32(j.CPUs)
	v[18] = j.MemoryMB
	v[19] = int32(j.GPUs)
	v[20] = j.GPUType
	v[21] = int32(j.Shards)
	v[22] = j.State.String()
	v[23] = int32(j.ExitCode)
	v[24] = timeOrNil(j.Deadline)
	if j.Hosts != "" {
		v[25] = j.Hosts
	} else {
		v[25] = nil
	}
}

// track notes the month, spans and key of a job.
func (c *copySource) track(j *policy.Job) {
	if c.seq == 1 {
		c.first = *j
	}
	c.last = *j
	c.months[monthOf(j.Submit)] = true
	h := maphash.Comparable(c.seed, keyOf{j.Cluster, j.ID, j.ArrayTask, j.Submit.UnixNano()})
	if _, dup := c.seen[h]; dup {
		c.mayRepeat = true
	}
	c.seen[h] = struct{}{}
	widen(c.submits, j.Cluster, j.Submit, j.Submit)
	if !j.Start.IsZero() && !j.End.IsZero() && !j.End.Before(j.Start) {
		widen(c.runs, j.Cluster, j.Start, j.End)
	}
}

// widen grows m[key] to cover [lo, hi].
func widen(m map[string]window, key string, lo, hi time.Time) {
	w, ok := m[key]
	if !ok || lo.Before(w.lo) {
		w.lo = lo
	}
	if !ok || hi.After(w.hi) {
		w.hi = hi
	}
	m[key] = w
}

func (c *copySource) Values() ([]any, error) {
	if c.source != "" {
		c.vals[len(stageColumns)] = c.source
		return c.vals[1:], nil
	}
	return c.vals[:len(stageColumns)], nil
}
func (c *copySource) Err() error { return c.err }

func timeOrNil(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// JobsSource is a Source over jobs already in memory: a decoded sacct
// document, a slurmdbd window, the jobs serve saw finish.
type JobsSource struct {
	jobs  []policy.Job
	where []string
	bad   int
	i     int
}

// NewJobsSource returns a Source over jobs. where, when not nil, locates
// each job for messages; skipped counts records the caller already dropped
// as malformed.
func NewJobsSource(jobs []policy.Job, where []string, skipped int) *JobsSource {
	return &JobsSource{jobs: jobs, where: where, bad: skipped, i: -1}
}

// Next implements Source.
func (s *JobsSource) Next() bool { s.i++; return s.i < len(s.jobs) }

// Rewind implements Rewinder.
func (s *JobsSource) Rewind() error { s.i = -1; return nil }

// Job implements Source.
func (s *JobsSource) Job() policy.Job { return s.jobs[s.i] }

// Err implements Source.
func (s *JobsSource) Err() error { return nil }

// Skipped implements Source.
func (s *JobsSource) Skipped() int { return s.bad }

// Where implements Source.
func (s *JobsSource) Where() string {
	if s.i < len(s.where) {
		return s.where[s.i]
	}
	j := s.jobs[s.i]
	return fmt.Sprintf("job %d", j.ID)
}

// RecordFinished stores jobs serve saw finish (source names where they came
// from, e.g. "slurmctld"). Invalid jobs are rejected and counted, never
// fatal: one odd job must not stop the daemon's history.
func (s *Store) RecordFinished(ctx context.Context, source string, jobs []policy.Job) (Summary, error) {
	return s.Import(ctx, NewJobsSource(jobs, nil, 0), ImportOptions{Source: source, SkipBad: true})
}
