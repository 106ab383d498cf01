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
func (s Spool) Pending() (us []Usage, bad []string, err error) { return s.PendingUpTo(0) }

// PendingUpTo is Pending reading at most limit files (every one when limit
// is 0), the first in key order.
func (s Spool) PendingUpTo(limit int) (us []Usage, bad []string, err error) {
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
	if limit > 0 && len(names) > limit {
		names = names[:limit]
	}
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

// RefusedDir is the spool's subdirectory for records the database refused
// (RefusedError): kept, never retried by the hooks or the timer, for an
// administrator to import with the schema owner's login:
//
//	fairway spool flush --spool-dir /var/spool/fairway/refused --database-url postgres://fairway:...
const RefusedDir = "refused"

// SetAside moves refused records out of the spool into RefusedDir, writing
// the ones the spool does not hold (a fresh record whose spool write
// failed), and logs each with the database's reason. A record it cannot set
// aside is logged whole and, if it was spooled, stays in the spool.
func (s Spool) SetAside(rs []Refusal, log *slog.Logger) {
	dir := filepath.Join(s.Dir, RefusedDir)
	mkErr := os.MkdirAll(dir, 0o700)
	for _, r := range rs {
		name := r.Usage.Key() + spoolExt
		err := mkErr
		if err == nil {
			err = os.Rename(filepath.Join(s.Dir, name), filepath.Join(dir, name))
			if errors.Is(err, fs.ErrNotExist) {
				var b []byte
				if b, err = json.Marshal(r.Usage); err == nil {
					err = writeFileAtomic(filepath.Join(dir, name), b, 0o600, true)
				}
			}
		}
		if err != nil {
			log.Error("usage record refused by the database and not set aside", "key", r.Usage.Key(), "reason", r.Reason,
				"record", fmt.Sprintf("%+v", r.Usage), "err", err)
			continue
		}
		log.Error("usage record refused by the database: set aside for an administrator to import with the schema owner's login",
			"key", r.Usage.Key(), "reason", r.Reason, "file", filepath.Join(dir, name))
	}
}

// setAsideRefused handles PutUsage's error for us: a *RefusedError's
// records are set aside and the stored rest returned with a nil error; any
// other error is returned with no records.
func (s Spool) setAsideRefused(us []Usage, err error, log *slog.Logger) (stored []Usage, refused int, _ error) {
	if err == nil {
		return us, 0, nil
	}
	var re *RefusedError
	if !errors.As(err, &re) {
		return nil, 0, err
	}
	s.SetAside(re.Refused, log)
	out := map[string]bool{}
	for _, r := range re.Refused {
		out[r.Usage.Key()] = true
	}
	for _, u := range us {
		if !out[u.Key()] {
			stored = append(stored, u)
		}
	}
	return stored, len(re.Refused), nil
}

// setAside counts the records waiting in RefusedDir.
func (s Spool) setAside() int {
	entries, _ := os.ReadDir(filepath.Join(s.Dir, RefusedDir))
	n := 0
	for _, e := range entries {
		if e.Type().IsRegular() && strings.HasSuffix(e.Name(), spoolExt) && !strings.HasPrefix(e.Name(), ".") {
			n++
		}
	}
	return n
}

// FlushBatch is how many records Flush stores per transaction.
const FlushBatch = 500

// FlushCounts is what Flush did.
type FlushCounts struct {
	Stored  int // records the database has now
	Left    int // files left in the spool: undecodable ones, or all not stored after an error
	Refused int // records the database refused, set aside in RefusedDir by this flush
}

// Flush ships the spool's backlog to store in batches. It is `fairway
// spool flush`, for a timer; hooks ship their backlog themselves. Records
// the database refuses are set aside (SetAside), not retried; records set
// aside earlier are counted in one log line each run until someone
// imports them.
func (s Spool) Flush(ctx context.Context, store UsageStore, log *slog.Logger) (FlushCounts, error) {
	var c FlushCounts
	s.removeStaleTemps(log, time.Hour)
	pending, bad, err := s.Pending()
	if err != nil {
		return c, err
	}
	for _, n := range bad {
		log.Error("spooled file is not a usage record: left in place", "file", n)
	}
	if n := s.setAside(); n > 0 {
		log.Warn("usage records the database refused wait to be imported with the schema owner's login",
			"records", n, "dir", filepath.Join(s.Dir, RefusedDir))
	}
	for i := 0; i < len(pending); i += FlushBatch {
		batch := pending[i:min(i+FlushBatch, len(pending))]
		stored, refused, err := s.setAsideRefused(batch, store.PutUsage(ctx, batch), log)
		c.Refused += refused
		if err != nil {
			c.Left = len(pending) - c.Stored - c.Refused + len(bad)
			return c, fmt.Errorf("store usage: %w", err)
		}
		if err := s.Remove(stored); err != nil {
			log.Warn("stored records not removed from the spool", "err", err)
		}
		c.Stored += len(stored)
	}
	c.Left = len(bad)
	return c, nil
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
