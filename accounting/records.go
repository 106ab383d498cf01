package accounting

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// Decision is one row of the decision log: what a cycle decided for one
// pending job and why.
type Decision struct {
	Cluster   string
	At        time.Time // the cycle's start
	Cycle     int64
	JobID     int64
	Policy    string
	Rank      int // 1 is first
	Score     float64
	Parts     map[string]float64 // policy.Score.Parts.Map()
	Predicted time.Duration      // predicted run time used; 0 when none
	Predictor string
	Field     string // what is written: site_factor, priority or nice
	Value     int64  // the value written (or that would be, in dry run)
	Previous  *int64 // the value before, nil when unknown
	Planned   bool   `json:"DryRun"` // stamped by the Planner sink: a dry run, nothing reached Slurm (column dry_run)
	// Nice is, on priority rows, the job's nice before Fairway's first
	// admin priority (Slurm resets it to 0): what a hand-back restores.
	// nil on site-factor rows.
	Nice *int64
}

// RecordDecisions appends decisions to the log in one transaction.
// Recording the same (cluster, At, Cycle, JobID) again is a no-op, so a
// batch buffered during a database outage can be replayed safely. It
// returns how many rows were new. A batch is copied with COPY under a
// savepoint; only when some of it is stored already (a replay) does it go
// through INSERT ... ON CONFLICT DO NOTHING, which is many times slower
// (docs/BENCHMARKS.md).
func (s *Store) RecordDecisions(ctx context.Context, ds []Decision) (int, error) {
	if len(ds) == 0 {
		return 0, nil
	}
	parts := make([][]byte, len(ds))
	months := map[month]bool{}
	for i, d := range ds {
		if d.Cluster == "" || d.At.IsZero() || d.Policy == "" || d.Field == "" {
			return 0, fmt.Errorf("decision for job %d: cluster, time, policy and field are required: %w", d.JobID, ErrInvalidRecord)
		}
		b, err := json.Marshal(finiteParts(d.Parts))
		if err != nil {
			return 0, fmt.Errorf("decision for job %d: encode score parts: %w", d.JobID, err)
		}
		parts[i] = b
		months[monthOf(d.At)] = true
	}
	if err := s.ensureMonths(ctx, s.pool, "decision", months); err != nil {
		return 0, err
	}
	row := func(i int) []any {
		d := &ds[i]
		var pred any
		if d.Predicted > 0 {
			pred = d.Predicted.Seconds()
		}
		var prev any
		if d.Previous != nil {
			prev = *d.Previous
		}
		var nice any
		if d.Nice != nil {
			nice = *d.Nice
		}
		return []any{d.Cluster, d.At, d.Cycle, d.JobID, d.Policy, int32(d.Rank), d.Score, json.RawMessage(parts[i]), pred,
			d.Predictor, d.Field, d.Value, prev, d.Planned, nice}
	}
	var added int
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		sp, err := tx.Begin(ctx)
		if err != nil {
			return err
		}
		copied, err := sp.CopyFrom(ctx, pgx.Identifier{"decision"}, decisionColumns, pgx.CopyFromSlice(len(ds), func(i int) ([]any, error) {
			return row(i), nil
		}))
		if err == nil {
			added = int(copied)
			return sp.Commit(ctx)
		}
		if !isUniqueViolation(err) {
			return err
		}
		if err := sp.Rollback(ctx); err != nil {
			return err
		}
		// A replay: insert what is missing.
		n := len(ds)
		var (
			cluster, pol, predictor, field, js = make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n)
			at                                 = make([]time.Time, n)
			cycle, job, value                  = make([]int64, n), make([]int64, n), make([]int64, n)
			prev, nice                         = make([]*int64, n), make([]*int64, n)
			rank                               = make([]int32, n)
			score                              = make([]float64, n)
			pred                               = make([]*float64, n)
			dry                                = make([]bool, n)
		)
		for i, d := range ds {
			cluster[i], pol[i], predictor[i], field[i], js[i] = d.Cluster, d.Policy, d.Predictor, d.Field, string(parts[i])
			at[i], cycle[i], job[i], value[i], prev[i], nice[i] = d.At, d.Cycle, d.JobID, d.Value, d.Previous, d.Nice
			rank[i], score[i], dry[i] = int32(d.Rank), d.Score, d.Planned
			if d.Predicted > 0 {
				p := d.Predicted.Seconds()
				pred[i] = &p
			}
		}
		tag, err := tx.Exec(ctx, `
INSERT INTO decision (`+strings.Join(decisionColumns, ", ")+`)
SELECT * FROM unnest($1::text[], $2::timestamptz[], $3::bigint[], $4::bigint[], $5::text[], $6::integer[],
	$7::double precision[], $8::jsonb[], $9::double precision[], $10::text[], $11::text[], $12::bigint[],
	$13::bigint[], $14::boolean[], $15::bigint[])
ON CONFLICT DO NOTHING`, cluster, at, cycle, job, pol, rank, score, js, pred, predictor, field, value, prev, dry, nice)
		if err != nil {
			return err
		}
		added = int(tag.RowsAffected())
		return nil
	})
	if err != nil {
		s.forgetMonthsIfGone(err)
		return 0, fmt.Errorf("record %d decisions: %w", len(ds), err)
	}
	return added, nil
}

var decisionColumns = []string{"cluster", "decided_at", "cycle", "job_id", "policy", "rank", "score", "parts",
	"predicted_run_s", "predictor", "field", "value", "previous", "dry_run", "nice"}

// isUniqueViolation reports whether err is PostgreSQL's unique_violation.
func isUniqueViolation(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "23505"
}

// finiteParts returns parts for JSON, which has no infinities or NaN:
// those become null.
func finiteParts(parts map[string]float64) map[string]any {
	out := make(map[string]any, len(parts))
	for k, v := range parts {
		if math.IsInf(v, 0) || math.IsNaN(v) {
			out[k] = nil
		} else {
			out[k] = v
		}
	}
	return out
}

// Cycle is how one serve cycle went.
type Cycle struct {
	Cluster     string
	Cycle       int64
	Started     time.Time
	Policy      string
	Leader      bool
	Planned     bool `json:"DryRun"` // stamped by the Planner sink: a dry run (column dry_run)
	Pending     int
	Running     int
	Written     int
	WriteErrors int
	Read        time.Duration // reading Slurm
	Predict     time.Duration
	Rank        time.Duration
	Write       time.Duration // writing values to Slurm
	Record      time.Duration // writing history, decisions and predictions
	Total       time.Duration
	Error       string // what went wrong, "" when nothing did
}

// RecordCycle stores one cycle's timings; recording it again is a no-op.
// The error is free text from outside (an answer's body, a command's
// stderr): bytes PostgreSQL text refuses become U+FFFD, or the row would
// fail on every retry and hold up every record serve buffered after it.
func (s *Store) RecordCycle(ctx context.Context, c Cycle) error {
	if c.Cluster == "" || c.Started.IsZero() {
		return fmt.Errorf("cycle %d: cluster and start time are required: %w", c.Cycle, ErrInvalidRecord)
	}
	_, err := s.pool.Exec(ctx, `
INSERT INTO cycle (cluster, cycle, started_at, policy, leader, dry_run, pending, running, written, write_errors,
	read_seconds, predict_seconds, rank_seconds, write_seconds, record_seconds, total_seconds, error)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17)
ON CONFLICT DO NOTHING`,
		c.Cluster, c.Cycle, c.Started, c.Policy, c.Leader, c.Planned, c.Pending, c.Running, c.Written, c.WriteErrors,
		c.Read.Seconds(), c.Predict.Seconds(), c.Rank.Seconds(), c.Write.Seconds(), c.Record.Seconds(), c.Total.Seconds(), validText(c.Error))
	if err != nil {
		return fmt.Errorf("record cycle %d: %w", c.Cycle, err)
	}
	return nil
}

// PruneCycles deletes cycle rows that started before cutoff.
func (s *Store) PruneCycles(ctx context.Context, cutoff time.Time) (int64, error) {
	tag, err := s.pool.Exec(ctx, `DELETE FROM cycle WHERE started_at < $1`, cutoff)
	if err != nil {
		return 0, fmt.Errorf("prune cycles: %w", err)
	}
	return tag.RowsAffected(), nil
}

// Prediction is a run-time prediction made for a pending job.
type Prediction struct {
	Cluster   string
	JobID     int64
	ArrayTask int // -1 when not an array
	Submit    time.Time
	Predictor string
	At        time.Time
	Run       time.Duration
	Upper     time.Duration // 0 when the predictor gives none
	Quantile  float64
	Rule      string // policy.Prediction.Source
	Partition string
}

// RecordPredictions stores predictions, one per job and predictor: a newer
// prediction for the same job replaces the older, so the row left when the
// job starts is the prediction its scheduling used. Paired with the job's
// actual run time by the prediction_outcome view.
func (s *Store) RecordPredictions(ctx context.Context, ps []Prediction) error {
	if len(ps) == 0 {
		return nil
	}
	n := len(ps)
	var (
		cluster, predictor, rule, part = make([]string, n), make([]string, n), make([]string, n), make([]string, n)
		job                            = make([]int64, n)
		task                           = make([]int32, n)
		submit, at                     = make([]time.Time, n), make([]time.Time, n)
		run                            = make([]float64, n)
		upper, quant                   = make([]*float64, n), make([]*float64, n)
		months                         = map[month]bool{}
	)
	for i, p := range ps {
		if p.Cluster == "" || p.Submit.IsZero() || p.At.IsZero() || p.Predictor == "" {
			return fmt.Errorf("prediction for job %d: cluster, submit time, time and predictor are required: %w", p.JobID, ErrInvalidRecord)
		}
		cluster[i], predictor[i], rule[i], part[i] = p.Cluster, p.Predictor, p.Rule, p.Partition
		job[i], task[i], submit[i], at[i], run[i] = p.JobID, int32(p.ArrayTask), p.Submit, p.At, p.Run.Seconds()
		if p.Upper > 0 {
			u, q := p.Upper.Seconds(), p.Quantile
			upper[i], quant[i] = &u, &q
		}
		months[monthOf(p.Submit)] = true
	}
	if err := s.ensureMonths(ctx, s.pool, "prediction", months); err != nil {
		return err
	}
	_, err := s.pool.Exec(ctx, `
INSERT INTO prediction (cluster, job_id, array_task, submit_time, predictor, predicted_at, predicted_s, upper_s,
	quantile, rule, partition)
SELECT DISTINCT ON (c, j, t, s, p) * FROM unnest($1::text[], $2::bigint[], $3::integer[], $4::timestamptz[], $5::text[],
	$6::timestamptz[], $7::double precision[], $8::double precision[], $9::double precision[], $10::text[], $11::text[])
	AS u(c, j, t, s, p, a, r, up, q, ru, pa)
ORDER BY c, j, t, s, p, a DESC
ON CONFLICT (cluster, job_id, array_task, submit_time, predictor) DO UPDATE SET
	predicted_at = EXCLUDED.predicted_at, predicted_s = EXCLUDED.predicted_s, upper_s = EXCLUDED.upper_s,
	quantile = EXCLUDED.quantile, rule = EXCLUDED.rule, partition = EXCLUDED.partition
WHERE prediction.predicted_at <= EXCLUDED.predicted_at`,
		cluster, job, task, submit, predictor, at, run, upper, quant, rule, part)
	if err != nil {
		s.forgetMonthsIfGone(err)
		return fmt.Errorf("record %d predictions: %w", n, err)
	}
	return nil
}

// GPUUsage is what one GPU did for one job, as the epilog measured it.
type GPUUsage struct {
	Cluster  string
	JobID    int64
	Node     string
	GPUMinor int // /dev/nvidiaN
	Started  time.Time
	Ended    time.Time // when the epilog closed the record; part of the key
	UUID     string
	Model    string
	Shards   int // 0 for a whole-GPU job
	// Utilization and memory, nil when NVML could not tell.
	UtilAvgPct *float64
	UtilMaxPct *float64
	MemPeakMB  *int64
	MemTotalMB *int64
	EnergyJ    *float64 // device energy over the job, nil when unsupported
}

// RecordGPUUsage stores epilog usage records. A record already stored (same
// cluster, job, node, GPU and end) is left alone, so a spool can be flushed
// again after a crash without duplicates. It returns how many were new.
// It goes through fairway_record_gpu_usage (migrations 0004 and 0005), the
// one right a GPU node's database role holds: the function creates the
// month's partition and inserts, with the schema owner's rights.
//
// A node's login may store only its own node's records ending within a day
// of now (0005), and PostgreSQL takes no record holding a value it cannot
// store (Refused: a data exception such as a NUL byte in a name). When a
// call is refused for either reason, RecordGPUUsage splits it to find the
// records refused, stores the rest, and returns a *UsageRefusedError
// naming the refused ones: sending them again would be refused again, so
// the caller must set them aside, not retry them.
func (s *Store) RecordGPUUsage(ctx context.Context, us []GPUUsage) (int, error) {
	for _, u := range us {
		if u.Cluster == "" || u.Node == "" || u.Ended.IsZero() || u.JobID <= 0 {
			return 0, fmt.Errorf("GPU usage of job %d: cluster, node, job id and end time are required", u.JobID)
		}
	}
	stored := 0
	var refused []RefusedUsage
	for base := 0; base < len(us); base += gpuUsageBatch {
		batch := us[base:min(len(us), base+gpuUsageBatch)]
		n, err := s.recordGPUUsageSplitting(ctx, batch, base, &refused)
		stored += n
		if err != nil {
			return stored, err
		}
	}
	if len(refused) > 0 {
		return stored, &UsageRefusedError{Refused: refused}
	}
	return stored, nil
}

// ErrUsageRefused is what a *UsageRefusedError matches with errors.Is.
var ErrUsageRefused = errors.New("usage records refused by the database")

// RefusedUsage is one record fairway_record_gpu_usage refused: its index in
// the slice given to RecordGPUUsage and the database's reason.
type RefusedUsage struct {
	Index  int
	Reason string
}

// UsageRefusedError lists the records the database refused; every other
// record was stored.
type UsageRefusedError struct{ Refused []RefusedUsage }

func (e *UsageRefusedError) Error() string {
	return fmt.Sprintf("%d GPU usage records refused by the database, the first: %s", len(e.Refused), e.Refused[0].Reason)
}

func (e *UsageRefusedError) Is(target error) bool { return target == ErrUsageRefused }

// sqlStateRefused is the SQLSTATE fairway_record_gpu_usage raises when a
// node's login sends records it may not store (migration 0005).
const sqlStateRefused = "FW001"

// recordGPUUsageSplitting stores us; when the call is refused for what
// its records hold (FW001 or Refused) it halves it until the refused
// records stand alone and adds them (indexes offset by base) to refused.
// A refused record costs about 2·log2(len(us)) calls, each refused before
// it writes anything. Any other error (an outage, a login not allowed) is
// returned as it is, so the caller keeps every record for the next try.
func (s *Store) recordGPUUsageSplitting(ctx context.Context, us []GPUUsage, base int, refused *[]RefusedUsage) (int, error) {
	n, err := s.recordGPUUsageBatch(ctx, us)
	var pgErr *pgconn.PgError
	if err == nil || !errors.As(err, &pgErr) || (pgErr.Code != sqlStateRefused && !Refused(err)) {
		return n, err
	}
	if len(us) == 1 {
		*refused = append(*refused, RefusedUsage{Index: base, Reason: pgErr.Message})
		return 0, nil
	}
	h := len(us) / 2
	a, err := s.recordGPUUsageSplitting(ctx, us[:h], base, refused)
	if err != nil {
		return a, err
	}
	b, err := s.recordGPUUsageSplitting(ctx, us[h:], base+h, refused)
	return a + b, err
}

// gpuUsageBatch is how many records one call of fairway_record_gpu_usage
// takes; the function refuses more than 10000, so one call stays short.
const gpuUsageBatch = 5000

func (s *Store) recordGPUUsageBatch(ctx context.Context, us []GPUUsage) (int, error) {
	n := len(us)
	var (
		cluster, node, uuid, model = make([]string, n), make([]string, n), make([]string, n), make([]string, n)
		job                        = make([]int64, n)
		minor, shards              = make([]int32, n), make([]int32, n)
		start                      = make([]*time.Time, n)
		end                        = make([]time.Time, n)
		uavg, umax, energy         = make([]*float64, n), make([]*float64, n), make([]*float64, n)
		mpeak, mtotal              = make([]*int64, n), make([]*int64, n)
	)
	for i, u := range us {
		// The UUID and model are what the driver reported, cleaned to
		// text the database takes: an odd driver string must not cost
		// the record its place in the table (it would be set aside).
		// Cluster and node are the key and come from Slurm's
		// configuration, so they are not rewritten.
		cluster[i], node[i] = u.Cluster, u.Node
		uuid[i], _ = cleanText(u.UUID)
		model[i], _ = cleanText(u.Model)
		job[i], minor[i], shards[i], end[i] = u.JobID, int32(u.GPUMinor), int32(u.Shards), u.Ended
		if !u.Started.IsZero() {
			t := u.Started
			start[i] = &t
		}
		uavg[i], umax[i], energy[i], mpeak[i], mtotal[i] = u.UtilAvgPct, u.UtilMaxPct, u.EnergyJ, u.MemPeakMB, u.MemTotalMB
	}
	var stored int
	err := s.pool.QueryRow(ctx, `SELECT fairway_record_gpu_usage($1::text[], $2::bigint[], $3::text[], $4::integer[],
	$5::timestamptz[], $6::timestamptz[], $7::text[], $8::text[], $9::integer[], $10::real[], $11::real[], $12::bigint[],
	$13::bigint[], $14::double precision[])`, cluster, job, node, minor, end, start, uuid, model, shards, uavg, umax, mpeak, mtotal, energy).Scan(&stored)
	if err != nil {
		return 0, fmt.Errorf("record %d GPU usage records: %w", n, err)
	}
	return stored, nil
}
