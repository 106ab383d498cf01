package trace

import (
	"bytes"
	"encoding/csv"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// csvTable holds a CSV header: column name → index.
type csvTable struct {
	cols map[string]int
	n    int
	rec  []string // record's fields, reused from line to line
}

// splitCSV splits one CSV line, reusing dst's array. Lines without quotes
// (all of the shipped traces) take a fast path; quoted ones go through
// encoding/csv.
func splitCSV(dst []string, line []byte) ([]string, error) {
	if bytes.IndexByte(line, '"') < 0 {
		return splitInto(dst[:0], string(line)), nil
	}
	r := csv.NewReader(bytes.NewReader(line))
	r.FieldsPerRecord = -1
	rec, err := r.Read()
	if err != nil {
		var pe *csv.ParseError
		if errors.As(err, &pe) {
			err = pe.Err // its line and column count within this one line only
		}
		return nil, fmt.Errorf("bad CSV quoting: %w", err)
	}
	return rec, nil
}

// splitInto appends s's comma-separated fields to rec, as strings.Split
// would return them.
func splitInto(rec []string, s string) []string {
	for {
		i := strings.IndexByte(s, ',')
		if i < 0 {
			return append(rec, s)
		}
		rec = append(rec, s[:i])
		s = s[i+1:]
	}
}

// readHeader records the column row, checking the required columns are there.
func (t *csvTable) readHeader(line []byte, m *Meta, required []string) error {
	rec, err := splitCSV(nil, line)
	if err != nil {
		return err
	}
	t.cols = make(map[string]int, len(rec))
	for i, c := range rec {
		c = strings.TrimSpace(c)
		if j, ok := t.cols[c]; ok && c != "" {
			t.cols = nil
			return fmt.Errorf("header: column %q given twice (columns %d and %d)", c, j+1, i+1)
		}
		t.cols[c] = i
	}
	t.n = len(rec)
	for _, c := range required {
		if _, ok := t.cols[c]; !ok {
			t.cols = nil
			return fmt.Errorf("header: missing column %q (have %s)", c, strings.Join(rec, ","))
		}
	}
	m.Columns = rec
	return nil
}

// record splits a data line and checks its width against the header. The
// slice is the table's own, valid until the next call; the fields are
// strings of their own, which jobs may keep.
func (t *csvTable) record(line []byte) ([]string, error) {
	rec, err := splitCSV(t.rec, line)
	if err != nil {
		return nil, err
	}
	t.rec = rec
	if len(rec) != t.n {
		return nil, fmt.Errorf("want %d fields, got %d", t.n, len(rec))
	}
	return rec, nil
}

// get returns column c of rec, "" when the trace has no such column.
func (t *csvTable) get(rec []string, c string) string {
	i, ok := t.cols[c]
	if !ok {
		return ""
	}
	return strings.TrimSpace(rec[i])
}

func (t *csvTable) has(c string) bool { _, ok := t.cols[c]; return ok }

// intCol parses column c as a non-negative integer (floats with a zero
// fraction, as pandas writes them, are accepted).
func (t *csvTable) intCol(rec []string, c string) (int64, error) {
	s := t.get(rec, c)
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		if n < 0 {
			return 0, fmt.Errorf("column %s: want >= 0, got %s", c, s)
		}
		return n, nil
	}
	x, err := strconv.ParseFloat(s, 64)
	if err != nil || x != math.Trunc(x) || x < 0 || x > maxExact {
		return 0, fmt.Errorf("column %s: want a non-negative integer, got %q", c, s)
	}
	return int64(x), nil
}

// secondsCol parses column c as a non-negative number of seconds.
func (t *csvTable) secondsCol(rec []string, c string) (time.Duration, error) {
	s := t.get(rec, c)
	x, err := strconv.ParseFloat(s, 64)
	if err != nil || x < 0 || math.IsNaN(x) || math.IsInf(x, 0) || x > maxSeconds {
		return 0, fmt.Errorf("column %s: want a non-negative number of seconds up to a century, got %q", c, s)
	}
	return seconds(x), nil
}

// timeLayouts are the timestamp spellings accepted in CSV traces (any with
// a fraction of a second too). A time without a zone is read as UTC
// (Helios publishes local wall-clock times without one); one with a zone,
// as pandas writes a zone-aware column ("2020-04-01 08:00:00+08:00") or
// RFC 3339 spells it, is that instant.
var timeLayouts = []string{"2006-01-02 15:04:05", time.RFC3339, "2006-01-02T15:04:05", "2006-01-02 15:04:05Z07:00"}

// timeCol parses column c as a timestamp or as Unix seconds. An empty cell
// gives the zero time.
func (t *csvTable) timeCol(rec []string, c string) (time.Time, error) {
	s := t.get(rec, c)
	if s == "" {
		return time.Time{}, nil
	}
	for _, l := range timeLayouts {
		if tm, err := time.ParseInLocation(l, s, time.UTC); err == nil {
			return tm.UTC(), nil
		}
	}
	if x, err := strconv.ParseFloat(s, 64); err == nil && x >= 0 && x <= maxExact {
		sec := math.Floor(x)
		return time.Unix(int64(sec), int64(math.Round((x-sec)*1e6))*1e3).UTC(), nil
	}
	return time.Time{}, fmt.Errorf("column %s: want a time like 2020-04-01 00:00:00 or Unix seconds, got %q", c, s)
}
