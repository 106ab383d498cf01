package serve

import (
	"bytes"
	"context"
	"encoding/gob"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/fairway-hpc/fairway/accounting"
	"github.com/fairway-hpc/fairway/policy"
)

// batch is records on their way to the database, in the order they are
// shipped: finished jobs before the predictions and decisions that refer
// to them, cycle rows last.
type batch struct {
	Finished    []policy.Job
	Predictions []accounting.Prediction
	Decisions   []accounting.Decision
	Cycles      []accounting.Cycle
}

func (b *batch) len() int {
	return len(b.Finished) + len(b.Predictions) + len(b.Decisions) + len(b.Cycles)
}

// ship records b through s, dropping from b what reached the database,
// so a batch that fails half way resumes where it stopped. Records the
// database refuses for what they hold (accounting.Refused) are dropped
// from b too and returned, for the caller to set aside: sent again they
// would be refused again, and every record behind them would wait for
// ever. The error is an outage's, which stops it.
//
// Finding the refused records re-sends what a refused call held, in
// halves; that is safe because every call is one transaction that either
// stores all it was given or nothing (the empty monthly partitions it
// creates first aside), and because storing a record again
// changes nothing: RecordFinished merges on the job's key and leaves a
// job imported twice as it was (accounting.Import), RecordPredictions
// upserts and keeps the latest prediction whatever the order it gets them
// in, RecordDecisions and RecordCycle insert with ON CONFLICT DO NOTHING.
func (b *batch) ship(ctx context.Context, s Recorder) ([]refused, error) {
	var out []refused
	var err error
	b.Finished, err = shipSplitting(ctx, kindFinished, b.Finished, &out, func(ctx context.Context, js []policy.Job) error {
		_, err := s.RecordFinished(ctx, "slurmctld", js)
		return err
	})
	if err != nil {
		return out, err
	}
	b.Predictions, err = shipSplitting(ctx, kindPrediction, b.Predictions, &out, s.RecordPredictions)
	if err != nil {
		return out, err
	}
	b.Decisions, err = shipSplitting(ctx, kindDecision, b.Decisions, &out, func(ctx context.Context, ds []accounting.Decision) error {
		_, err := s.RecordDecisions(ctx, ds)
		return err
	})
	if err != nil {
		return out, err
	}
	for len(b.Cycles) > 0 {
		err := s.RecordCycle(ctx, b.Cycles[0])
		if accounting.Refused(err) {
			out = append(out, refused{kind: kindCycle, record: b.Cycles[0], reason: err})
		} else if err != nil {
			return out, err
		}
		b.Cycles = b.Cycles[1:]
	}
	return out, nil
}

// shipSplitting sends rs. When the database refuses the call, it sends
// each half the same way, until each refused record stands alone; those
// are appended to out. It returns what neither reached the database nor
// was refused, in order: all of it after an outage, none otherwise. A
// refused record costs about 2·log2(len(rs)) calls.
func shipSplitting[T any](ctx context.Context, kind string, rs []T, out *[]refused, send func(context.Context, []T) error) ([]T, error) {
	if len(rs) == 0 {
		return nil, nil
	}
	err := send(ctx, rs)
	switch {
	case err == nil:
		return nil, nil
	case !accounting.Refused(err):
		return rs, err
	case len(rs) == 1:
		*out = append(*out, refused{kind: kind, record: rs[0], reason: err})
		return nil, nil
	}
	h := len(rs) / 2
	left, err := shipSplitting(ctx, kind, rs[:h], out, send)
	if err != nil {
		return slices.Concat(left, rs[h:]), err
	}
	return shipSplitting(ctx, kind, rs[h:], out, send)
}

// The kinds of record, as fairway_records_refused_total labels them.
const (
	kindFinished   = "finished"
	kindPrediction = "prediction"
	kindDecision   = "decision"
	kindCycle      = "cycle"
)

var recordKinds = []string{kindFinished, kindPrediction, kindDecision, kindCycle}

// refused is one record the database refused, and why.
type refused struct {
	kind   string
	record any // policy.Job, accounting.Prediction, accounting.Decision or accounting.Cycle, as kind says
	reason error
}

// add appends rs to b, each to its part.
func (b *batch) add(rs ...refused) {
	for _, r := range rs {
		switch rec := r.record.(type) {
		case policy.Job:
			b.Finished = append(b.Finished, rec)
		case accounting.Prediction:
			b.Predictions = append(b.Predictions, rec)
		case accounting.Decision:
			b.Decisions = append(b.Decisions, rec)
		case accounting.Cycle:
			b.Cycles = append(b.Cycles, rec)
		}
	}
}

// spillSuffix names the buffer's files; anything else in the directory is
// left alone. refusedSuffix names the files of records the database
// refused: the same format, never shipped, so that renaming one to
// spillSuffix ships it again.
const (
	spillSuffix   = ".fairway-records"
	refusedSuffix = ".fairway-refused"
)

// recordBuffer holds what must reach the database while it is unreachable,
// and ships it in order when it is back. At most limit records stay in
// memory: past that, the memory batch is written to a file in dir (a
// spill, the way the prolog spools usage records) and memory starts over.
// Spills are older than memory and ship first, oldest first; a spill file
// is removed only once the database holds every record in it, so records
// spilled by a process that then died ship after the restart. Nothing is
// dropped: when a spill cannot be written the records stay in memory and
// the error is logged and counted. Records the database refuses are set
// aside in files of their own for the admin (setAside).
type recordBuffer struct {
	limit int
	dir   string // "": no spilling, memory only

	mem     batch
	spilled int // records in spill files
	scanned bool
	seq     int

	failing bool
	lastErr error

	// unreadable counts, at the last flush, the spill files that could not
	// be read and the directory itself when it could not be listed: their
	// records wait for the admin and must not hold up the rest. reported
	// are the paths already logged, so each is logged once.
	unreadable int
	reported   map[string]bool

	// refusedNow counts by kind the records set aside at the last flush,
	// and asideErrors the times they could not be, for the metrics.
	refusedNow  map[string]int
	asideErrors int
}

// leftForAdmin logs, once per path, that what is at path cannot be read
// and stays there for the admin.
func (b *recordBuffer) leftForAdmin(log *slog.Logger, msg, path string, err error) {
	if b.reported == nil {
		b.reported = map[string]bool{}
	}
	if b.reported[path] {
		return
	}
	b.reported[path] = true
	log.Error(msg, "path", path, "err", err)
}

func (b *recordBuffer) len() int { return b.mem.len() + b.spilled }

// addCycle adds a cycle's row; the cycle's other records are in mem
// already.
func (b *recordBuffer) addCycle(c accounting.Cycle) {
	b.mem.Cycles = append(b.mem.Cycles, c)
}

// spill writes the memory batch to a new file in dir when it is over
// limit.
func (b *recordBuffer) spill(limit int) (bool, error) {
	if b.dir == "" || b.mem.len() <= limit {
		return false, nil
	}
	if _, err := b.write(&b.mem, spillSuffix); err != nil {
		return false, fmt.Errorf("spill records: %w", err)
	}
	b.spilled += b.mem.len()
	b.mem = batch{}
	return true, nil
}

// write writes bt to a new file in dir named with suffix and returns its
// path.
func (b *recordBuffer) write(bt *batch, suffix string) (string, error) {
	b.seq++
	// Names sort in the order the batches were written, across restarts.
	path := filepath.Join(b.dir, fmt.Sprintf("%020d-%06d%s", time.Now().UnixNano(), b.seq, suffix))
	return path, writeBatch(path, bt)
}

// writeBatch writes bt to path, gob-encoded, atomically.
func writeBatch(path string, bt *batch) error {
	var buf bytes.Buffer
	if err := gob.NewEncoder(&buf).Encode(bt); err != nil {
		return err
	}
	return writeFileAtomic(path, buf.Bytes())
}

// setAside keeps records the database refused out of the way of the
// rest, never dropping them: in a new file in dir that flush does not
// ship, logged once, or, with no dir, each in full in the log, which is
// then the only place it is kept. An error means the records are not set
// aside and the caller keeps them where they were.
func (b *recordBuffer) setAside(log *slog.Logger, rs []refused) error {
	if len(rs) == 0 {
		return nil
	}
	if b.dir == "" {
		for _, r := range rs {
			log.Error("record refused by the database: not stored, and no buffer directory to set it aside; this is the record in full",
				"kind", r.kind, "record", fullRecord(r.record), "reason", r.reason)
		}
	} else {
		var bt batch
		bt.add(rs...)
		path, err := b.write(&bt, refusedSuffix)
		if err != nil {
			return fmt.Errorf("set refused records aside: %w", err)
		}
		log.Error("records refused by the database: not stored, set aside in a file that is not shipped; rename it to end in "+spillSuffix+
			" to ship it again once the cause is fixed", "path", path, "records", len(rs), "finished", len(bt.Finished),
			"predictions", len(bt.Predictions), "decisions", len(bt.Decisions), "cycles", len(bt.Cycles), "reason", rs[0].reason)
	}
	if b.refusedNow == nil {
		b.refusedNow = map[string]int{}
	}
	for _, r := range rs {
		b.refusedNow[r.kind]++
	}
	return nil
}

// fullRecord is rec for the log, every field and what its pointers point
// to: JSON when it has a JSON form (not for a NaN score), Go syntax
// otherwise.
func fullRecord(rec any) string {
	if j, err := json.Marshal(rec); err == nil {
		return string(j)
	}
	return fmt.Sprintf("%+v", rec)
}

// spills lists the spill files, oldest first.
func (b *recordBuffer) spills() ([]string, error) {
	return b.files(spillSuffix)
}

// files lists the files in dir named with suffix, oldest first.
func (b *recordBuffer) files(suffix string) ([]string, error) {
	if b.dir == "" {
		return nil, nil
	}
	ents, err := os.ReadDir(b.dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read spilled records: %w", err)
	}
	var out []string
	for _, e := range ents {
		if e.Type().IsRegular() && strings.HasSuffix(e.Name(), suffix) {
			out = append(out, filepath.Join(b.dir, e.Name()))
		}
	}
	slices.Sort(out)
	return out, nil
}

func readSpill(path string) (batch, error) {
	var bt batch
	f, err := os.Open(path)
	if err != nil {
		return bt, err
	}
	defer f.Close()
	if err := gob.NewDecoder(f).Decode(&bt); err != nil {
		return bt, fmt.Errorf("spilled records %s: %w", path, err)
	}
	return bt, nil
}

// scan counts the records an earlier process left spilled, once.
func (b *recordBuffer) scan(log *slog.Logger) {
	if b.scanned {
		return
	}
	b.scanned = true
	files, err := b.spills()
	if err != nil {
		b.leftForAdmin(log, "records spilled earlier: cannot list the spill directory; shipping the rest", b.dir, err)
		return
	}
	for _, p := range files {
		bt, err := readSpill(p)
		if err != nil {
			b.leftForAdmin(log, "records spilled earlier: unreadable file left in place for the admin", p, err)
			continue
		}
		b.spilled += bt.len()
	}
	if len(files) > 0 {
		log.Info("records spilled by an earlier run: shipping them first", "files", len(files), "records", b.spilled)
	}
	if aside, _ := b.files(refusedSuffix); len(aside) > 0 {
		log.Warn("records the database refused wait in their files for the admin, not shipped", "dir", b.dir, "files", len(aside))
	}
}

// flush ships spilled records, oldest first, then memory, setting aside
// what the database refuses. It reports whether everything else reached
// the database.
func (b *recordBuffer) flush(ctx context.Context, s Recorder, log *slog.Logger) bool {
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	b.unreadable, b.refusedNow, b.asideErrors = 0, nil, 0
	files, err := b.spills()
	if err != nil {
		// What the directory holds waits for the admin; memory must not
		// wait on it, nor be taken for a database outage.
		b.unreadable++
		b.leftForAdmin(log, "cannot list the spill directory: its records wait; shipping the rest", b.dir, err)
		files = nil
	}
	// kept counts the records in spill files kept whole: once every file
	// was tried, they are all that is spilled. Counting again then, not
	// only down, includes a file the admin renamed back to spillSuffix.
	kept := 0
	for _, p := range files {
		bt, err := readSpill(p)
		if err != nil {
			// Left for an operator; later batches must not wait on it.
			b.unreadable++
			b.leftForAdmin(log, "spilled records unreadable: left in place for the admin", p, err)
			continue
		}
		n := bt.len()
		rs, err := bt.ship(ctx, s)
		if aerr := b.setAside(log, rs); aerr != nil {
			// The file keeps them, and what shipped: shipping that again
			// is safe, and the refused ones hold nothing up.
			b.asideErrors++
			log.Error("cannot set refused records aside: they stay in the spill file", "path", p, "refused", len(rs), "err", aerr)
			if err != nil {
				b.lastErr = err
				return false
			}
			kept += n
			continue
		}
		if err != nil {
			b.lastErr = err
			b.spilled = max(0, b.spilled-(n-bt.len()))
			if bt.len() < n { // keep only what did not ship
				if werr := writeBatch(p, &bt); werr != nil {
					log.Error("spilled records: cannot drop the part shipped; it will ship again", "path", p, "err", werr)
				}
			}
			return false
		}
		if err := os.Remove(p); err != nil {
			log.Error("spilled records shipped but not removed; they will ship again", "path", p, "err", err)
			kept += n
		}
	}
	b.spilled = kept
	rs, err := b.mem.ship(ctx, s)
	if aerr := b.setAside(log, rs); aerr != nil {
		b.asideErrors++
		log.Error("cannot set refused records aside: keeping them in memory", "dir", b.dir, "refused", len(rs), "err", aerr)
		b.mem.add(rs...)
	}
	if err != nil {
		b.lastErr = err
		return false
	}
	return true
}

// flush ships buffered records to the database, spilling first when the
// memory is over its bound. It reports whether the buffer is empty
// afterwards.
func (r *Runner) flush(ctx context.Context, log *slog.Logger) bool {
	b := &r.buffer
	b.scan(log)
	if ok, err := b.spill(b.limit); err != nil {
		r.metrics.spillErrors.Inc()
		log.Error("cannot spill buffered records to disk: keeping them in memory", "dir", b.dir, "err", err, "in_memory", b.mem.len())
	} else if ok {
		log.Warn("database still down: buffered records spilled to disk", "dir", b.dir, "spilled", b.spilled)
	}
	ok := b.flush(ctx, r.sink, log)
	for kind, n := range b.refusedNow {
		r.metrics.refused.WithLabelValues(kind).Add(float64(n))
	}
	r.metrics.spillErrors.Add(float64(b.asideErrors))
	r.metrics.buffered.Set(float64(b.len()))
	r.metrics.spilled.Set(float64(b.spilled))
	r.metrics.unreadable.Set(float64(b.unreadable))
	if ok {
		r.metrics.dbUp.Set(1)
		if b.failing {
			log.Info("database is back: buffered records shipped")
			b.failing = false
		}
		return true
	}
	r.metrics.dbUp.Set(0)
	if !b.failing {
		log.Error("record to database failed: buffering until it is back", "err", b.lastErr, "buffered", b.len())
		b.failing = true
	}
	return false
}

// drain is what a stopping Loop does last: records still in memory (the
// database was down, or the cycle's flush ran out of time) are shipped
// within drainTimeout, and what the database did not take is spilled to
// BufferDir, whatever the limit, for the next serve to ship.
func (r *Runner) drain() {
	if r.buffer.mem.len() == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), drainTimeout)
	defer cancel()
	if r.flush(ctx, r.log) {
		return
	}
	n := r.buffer.mem.len()
	if ok, err := r.buffer.spill(0); err != nil || !ok {
		r.log.Error("stopping: records the database did not take are lost", "records", n, "dir", r.buffer.dir, "err", err)
		return
	}
	r.log.Info("stopping: records the database did not take spilled to disk for the next serve", "records", n, "dir", r.buffer.dir)
}
