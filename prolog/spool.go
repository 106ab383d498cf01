package prolog

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// Spool is the node-local directory where usage records wait until the
// database has them. Each record is one file named by its Key, written to a
// temporary file, fsynced and renamed, so a crash leaves a whole record or
// none; it is removed only after the database committed it.
type Spool struct{ Dir string }

const spoolExt = ".json"

// Put writes the records durably. It returns on the first error: the
// caller still holds the records and ships them directly.
func (s Spool) Put(us []Usage) error {
	if err := os.MkdirAll(s.Dir, 0o700); err != nil {
		return fmt.Errorf("spool directory: %w", err)
	}
	for _, u := range us {
		b, err := json.Marshal(u)
		if err != nil {
			return fmt.Errorf("encode usage record: %w", err)
		}
		if err := writeFileAtomic(filepath.Join(s.Dir, u.Key()+spoolExt), b, 0o600, true); err != nil {
			return fmt.Errorf("spool usage record %s: %w", u.Key(), err)
		}
	}
	return nil
}

// Pending returns the records in the spool, oldest key first. A file that
// does not decode is reported in bad and left in place for a person to
// look at, never deleted.
func (s Spool) Pending() (us []Usage, bad []string, err error) {
	entries, err := os.ReadDir(s.Dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("read spool: %w", err)
	}
	names := make([]string, 0, len(entries))
	for _, e := range entries {
		n := e.Name()
		if e.Type().IsRegular() && strings.HasSuffix(n, spoolExt) && !strings.HasPrefix(n, ".") {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	for _, n := range names {
		b, err := os.ReadFile(filepath.Join(s.Dir, n))
		if errors.Is(err, fs.ErrNotExist) {
			continue // shipped and removed by a concurrent hook
		}
		if err != nil {
			return nil, nil, fmt.Errorf("read spooled record: %w", err)
		}
		var u Usage
		if err := json.Unmarshal(b, &u); err != nil || u.Validate() != nil || u.Key()+spoolExt != n {
			bad = append(bad, n)
			continue
		}
		us = append(us, u)
	}
	return us, bad, nil
}

// Remove deletes shipped records. Already removed ones (a concurrent hook
// shipped them too) are fine.
func (s Spool) Remove(us []Usage) error {
	var errs []error
	for _, u := range us {
		if err := os.Remove(filepath.Join(s.Dir, u.Key()+spoolExt)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// FlushBatch is how many records Flush stores per transaction.
const FlushBatch = 500

// Flush ships the spool's backlog to store in batches and returns how many
// records were stored and how many are left (undecodable files included).
// It is `fairway spool flush`, for a timer; hooks ship their backlog
// themselves.
func (s Spool) Flush(ctx context.Context, store UsageStore, log *slog.Logger) (stored, left int, err error) {
	s.removeStaleTemps(log, time.Hour)
	pending, bad, err := s.Pending()
	if err != nil {
		return 0, 0, err
	}
	for _, n := range bad {
		log.Error("spooled file is not a usage record: left in place", "file", n)
	}
	for i := 0; i < len(pending); i += FlushBatch {
		batch := pending[i:min(i+FlushBatch, len(pending))]
		if err := store.PutUsage(ctx, batch); err != nil {
			return stored, len(pending) - stored + len(bad), fmt.Errorf("store usage: %w", err)
		}
		if err := s.Remove(batch); err != nil {
			log.Warn("stored records not removed from the spool", "err", err)
		}
		stored += len(batch)
	}
	return stored, len(bad), nil
}

// removeStaleTemps deletes temporary files older than age: writes a crash
// interrupted before the rename, whose records were never complete.
func (s Spool) removeStaleTemps(log *slog.Logger, age time.Duration) {
	tmps, _ := filepath.Glob(filepath.Join(s.Dir, ".*.tmp*"))
	for _, p := range tmps {
		if st, err := os.Stat(p); err == nil && time.Since(st.ModTime()) > age {
			if err := os.Remove(p); err == nil {
				log.Info("removed an interrupted spool write", "file", filepath.Base(p))
			}
		}
	}
}
