package serve

import (
	"bytes"
	"context"
	"encoding/gob"
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

// ship records b through s, dropping from b each part that reached the
// database, so a batch that fails half way resumes where it stopped.
func (b *batch) ship(ctx context.Context, s Recorder) error {
	if len(b.Finished) > 0 {
		if _, err := s.RecordFinished(ctx, "slurmctld", b.Finished); err != nil {
			return err
		}
		b.Finished = nil
	}
	if len(b.Predictions) > 0 {
		if err := s.RecordPredictions(ctx, b.Predictions); err != nil {
			return err
		}
		b.Predictions = nil
	}
	if len(b.Decisions) > 0 {
		if _, err := s.RecordDecisions(ctx, b.Decisions); err != nil {
			return err
		}
		b.Decisions = nil
	}
	for len(b.Cycles) > 0 {
		if err := s.RecordCycle(ctx, b.Cycles[0]); err != nil {
			return err
		}
		b.Cycles = b.Cycles[1:]
	}
	return nil
}

// spillSuffix names the buffer's files; anything else in the directory is
// left alone.
const spillSuffix = ".fairway-records"

// recordBuffer holds what must reach the database while it is unreachable,
// and ships it in order when it is back. At most limit records stay in
// memory: past that, the memory batch is written to a file in dir (a
// spill, the way the prolog spools usage records) and memory starts over.
// Spills are older than memory and ship first, oldest first; a spill file
// is removed only once the database holds every record in it, so records
// spilled by a process that then died ship after the restart. Nothing is
// dropped: when a spill cannot be written the records stay in memory and
// the error is logged and counted.
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

// spill writes the memory batch to a new file in dir when it is over the
// limit.
func (b *recordBuffer) spill() (bool, error) {
	if b.dir == "" || b.mem.len() <= b.limit {
		return false, nil
	}
	var buf bytes.Buffer
	if err := gob.NewEncoder(&buf).Encode(&b.mem); err != nil {
		return false, fmt.Errorf("spill records: %w", err)
	}
	b.seq++
	// Names sort in the order the batches were spilled, across restarts.
	name := fmt.Sprintf("%020d-%06d%s", time.Now().UnixNano(), b.seq, spillSuffix)
	if err := writeFileAtomic(filepath.Join(b.dir, name), buf.Bytes()); err != nil {
		return false, fmt.Errorf("spill records: %w", err)
	}
	b.spilled += b.mem.len()
	b.mem = batch{}
	return true, nil
}

// spills lists the spill files, oldest first.
func (b *recordBuffer) spills() ([]string, error) {
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
		if e.Type().IsRegular() && strings.HasSuffix(e.Name(), spillSuffix) {
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
}

// flush ships spilled records, oldest first, then memory. It reports
// whether everything reached the database.
func (b *recordBuffer) flush(ctx context.Context, s Recorder, log *slog.Logger) bool {
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	b.unreadable = 0
	files, err := b.spills()
	if err != nil {
		// What the directory holds waits for the admin; memory must not
		// wait on it, nor be taken for a database outage.
		b.unreadable++
		b.leftForAdmin(log, "cannot list the spill directory: its records wait; shipping the rest", b.dir, err)
		files = nil
	}
	for _, p := range files {
		bt, err := readSpill(p)
		if err != nil {
			// Left for an operator; later batches must not wait on it.
			b.unreadable++
			b.leftForAdmin(log, "spilled records unreadable: left in place for the admin", p, err)
			continue
		}
		n := bt.len()
		err = bt.ship(ctx, s)
		b.spilled -= n - bt.len()
		if err != nil {
			b.lastErr = err
			if bt.len() < n { // keep only what did not ship
				if werr := b.rewrite(p, &bt); werr != nil {
					log.Error("spilled records: cannot drop the part shipped; it will ship again", "path", p, "err", werr)
				}
			}
			return false
		}
		if err := os.Remove(p); err != nil {
			log.Error("spilled records shipped but not removed; they will ship again", "path", p, "err", err)
		}
	}
	if err := b.mem.ship(ctx, s); err != nil {
		b.lastErr = err
		return false
	}
	return true
}

func (b *recordBuffer) rewrite(path string, bt *batch) error {
	var buf bytes.Buffer
	if err := gob.NewEncoder(&buf).Encode(bt); err != nil {
		return err
	}
	return writeFileAtomic(path, buf.Bytes())
}

// flush ships buffered records to the database, spilling first when the
// memory is over its bound. It reports whether the buffer is empty
// afterwards.
func (r *Runner) flush(ctx context.Context, log *slog.Logger) bool {
	b := &r.buffer
	b.scan(log)
	if ok, err := b.spill(); err != nil {
		r.metrics.spillErrors.Inc()
		log.Error("cannot spill buffered records to disk: keeping them in memory", "dir", b.dir, "err", err, "in_memory", b.mem.len())
	} else if ok {
		log.Warn("database still down: buffered records spilled to disk", "dir", b.dir, "spilled", b.spilled)
	}
	ok := b.flush(ctx, r.sink, log)
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
