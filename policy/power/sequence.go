package power

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Sample is one row of a node-demand sequence: at Time, Active nodes ran
// at least one job out of Total nodes in the cluster.
//
// Pending, from the optional column pending, is the nodes asked for by
// the jobs queued (waiting for nodes) at the end of the row's minute, as
// `fairway simulate --power-sequence` writes it; 0 when the sequence has
// no such column. A rule that reads it powers nodes up for that demand at
// once, as serve does for the live queue (pendingShort).
type Sample struct {
	Time    time.Time
	Active  int
	Total   int
	Pending int
}

// ErrMalformed is wrapped by every error about a bad line of a sequence.
var ErrMalformed = errors.New("malformed sequence")

// timeLayouts are the time spellings a sequence may use: the artifact's
// (pandas' default) and RFC 3339. A time without a zone is read as UTC, so
// that a daylight-saving change never makes a step repeat or vanish.
var timeLayouts = []string{"2006-01-02 15:04:05", "2006-01-02T15:04:05", time.RFC3339, "2006-01-02 15:04"}

// ReadSequence parses a node-demand CSV from r: a header naming the
// columns time, active and total (in any order; pending optional; other
// columns are ignored), then one row per sample in increasing time. r may be
// gzip-compressed (told by its magic bytes). name is used in errors, which
// read "name:line: field: reason".
func ReadSequence(r io.Reader, name string) ([]Sample, error) {
	if name == "" {
		name = "input"
	}
	br := bufio.NewReader(r)
	if magic, _ := br.Peek(2); bytes.Equal(magic, []byte{0x1f, 0x8b}) {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return nil, fmt.Errorf("%s: gzip: %w", name, err)
		}
		defer zr.Close()
		br = bufio.NewReader(zr)
	}
	cr := csv.NewReader(br)
	cr.FieldsPerRecord = -1 // widths checked below, with clearer messages
	cr.ReuseRecord = true
	head, err := cr.Read()
	if err == io.EOF {
		return nil, fmt.Errorf("%s: empty: %w (want a header time,active,total)", name, ErrMalformed)
	}
	if err != nil {
		return nil, fmt.Errorf("%s:1: %w: %v", name, ErrMalformed, err)
	}
	col := map[string]int{"time": -1, "active": -1, "total": -1, "pending": -1}
	for i, h := range head {
		h = strings.ToLower(strings.TrimSpace(strings.TrimPrefix(h, "\ufeff")))
		if j, ok := col[h]; ok {
			if j >= 0 {
				return nil, fmt.Errorf("%s:1: header %q names column %q twice: %w", name, strings.Join(head, ","), h, ErrMalformed)
			}
			col[h] = i
		}
	}
	for _, k := range []string{"time", "active", "total"} {
		if col[k] < 0 {
			return nil, fmt.Errorf("%s:1: header %q has no column %q: %w (want time,active,total)", name, strings.Join(head, ","), k, ErrMalformed)
		}
	}
	need := max(col["time"], col["active"], col["total"], col["pending"]) + 1
	width := len(head) // head's storage is reused by the next Read
	var out []Sample
	for {
		rec, err := cr.Read()
		if err == io.EOF {
			break
		}
		line, _ := cr.FieldPos(0)
		if err != nil {
			var pe *csv.ParseError
			if errors.As(err, &pe) {
				line = pe.Line
			}
			return nil, fmt.Errorf("%s:%d: %w: %v", name, line, ErrMalformed, err)
		}
		if len(rec) < need {
			return nil, fmt.Errorf("%s:%d: %d fields, want at least %d: %w", name, line, len(rec), need, ErrMalformed)
		}
		if len(rec) > width {
			return nil, fmt.Errorf("%s:%d: %d fields, more than the header's %d: %w", name, line, len(rec), width, ErrMalformed)
		}
		s, field, err := parseSample(rec[col["time"]], rec[col["active"]], rec[col["total"]])
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %s: %w: %v", name, line, field, ErrMalformed, err)
		}
		if k := col["pending"]; k >= 0 {
			if s.Pending, err = count(rec[k]); err != nil {
				return nil, fmt.Errorf("%s:%d: pending: %w: %v", name, line, ErrMalformed, err)
			}
		}
		if n := len(out); n > 0 && !s.Time.After(out[n-1].Time) {
			return nil, fmt.Errorf("%s:%d: time: %w: %s is not after the previous row's %s", name, line, ErrMalformed,
				s.Time.Format(time.DateTime), out[n-1].Time.Format(time.DateTime))
		}
		out = append(out, s)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no rows after the header: %w", name, ErrMalformed)
	}
	return out, nil
}

// parseSample parses one row's fields; on error it names the bad field.
func parseSample(ts, act, tot string) (Sample, string, error) {
	var s Sample
	var err error
	ts = strings.TrimSpace(ts)
	for _, l := range timeLayouts {
		if s.Time, err = time.Parse(l, ts); err == nil {
			break
		}
	}
	if err != nil {
		return s, "time", fmt.Errorf("%q is not a time like 2017-10-03 00:00:00", ts)
	}
	if s.Active, err = count(act); err != nil {
		return s, "active", err
	}
	if s.Total, err = count(tot); err != nil {
		return s, "total", err
	}
	if s.Total == 0 {
		return s, "total", fmt.Errorf("0 nodes in the cluster")
	}
	if s.Active > s.Total {
		return s, "active", fmt.Errorf("%d active nodes of %d in the cluster", s.Active, s.Total)
	}
	return s, "", nil
}

// count parses a node count; pandas writes whole floats as "12.0", so a
// whole float is accepted.
func count(v string) (int, error) {
	v = strings.TrimSpace(v)
	if n, err := strconv.Atoi(v); err == nil {
		if n < 0 {
			return 0, fmt.Errorf("%d is negative", n)
		}
		if n > maxSequenceNodes {
			return 0, fmt.Errorf("%d nodes: more than any cluster (at most %d)", n, maxSequenceNodes)
		}
		return n, nil
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || f < 0 || f > maxSequenceNodes || f != math.Trunc(f) {
		return 0, fmt.Errorf("%q is not a node count (0 to %d)", v, maxSequenceNodes)
	}
	return int(f), nil
}

// maxSequenceNodes bounds a node count: one row's typo (a total of 10^12)
// would otherwise dominate every figure of the replay.
const maxSequenceNodes = 1 << 22

// Series is a sequence at a fixed step: Active[i] and Total[i] are the
// maxima over [Start+i·Step, Start+(i+1)·Step).
type Series struct {
	Start  time.Time
	Step   time.Duration
	Active []int
	Total  []int
	// Pending is each step's most nodes asked for by queued jobs
	// (Sample.Pending); nil or zero where the sequence has none.
	Pending []int
	// Filled counts the steps no sample fell in; each holds the previous
	// step's values (carried forward), so a short gap in the log does not
	// read as a cluster with nothing running.
	Filled int
}

// Len is the number of steps.
func (s *Series) Len() int { return len(s.Active) }

// Time is the start of step i.
func (s *Series) Time(i int) time.Time { return s.Start.Add(time.Duration(i) * s.Step) }

// Index is the step holding t (may be out of range).
func (s *Series) Index(t time.Time) int {
	d := t.Sub(s.Start)
	i := int(d / s.Step)
	if d < 0 && d%s.Step != 0 {
		i--
	}
	return i
}

// Slice is the steps [lo, hi) as a Series of their own.
func (s *Series) Slice(lo, hi int) *Series {
	out := &Series{Start: s.Time(lo), Step: s.Step, Active: s.Active[lo:hi], Total: s.Total[lo:hi]}
	if s.Pending != nil {
		out.Pending = s.Pending[lo:hi]
	}
	return out
}

// pendingAt is step i's pending node demand, 0 where the series has none.
func (s *Series) pendingAt(i int) int {
	if i < len(s.Pending) {
		return s.Pending[i]
	}
	return 0
}

// Resample groups samples into steps of length step, aligned to the
// step's multiples since midnight of the first sample's day (pandas'
// resample('10min') origin), and keeps each step's maxima, as the Helios
// artifact does: a step needs the nodes of its busiest minute.
func Resample(samples []Sample, step time.Duration) (*Series, error) {
	if step <= 0 {
		return nil, fmt.Errorf("resample: step %v: want a positive duration", step)
	}
	if len(samples) == 0 {
		return nil, fmt.Errorf("resample: no samples")
	}
	first := samples[0].Time
	day := time.Date(first.Year(), first.Month(), first.Day(), 0, 0, 0, 0, first.Location())
	start := day.Add(first.Sub(day) / step * step)
	s := &Series{Start: start, Step: step}
	n := s.Index(samples[len(samples)-1].Time) + 1
	s.Active, s.Total, s.Pending = make([]int, n), make([]int, n), make([]int, n)
	seen := make([]bool, n)
	for _, x := range samples {
		i := s.Index(x.Time)
		s.Active[i] = max(s.Active[i], x.Active)
		s.Total[i] = max(s.Total[i], x.Total)
		s.Pending[i] = max(s.Pending[i], x.Pending)
		seen[i] = true
	}
	if !slices.ContainsFunc(s.Pending, func(v int) bool { return v > 0 }) {
		s.Pending = nil // no queue in the sequence
	}
	for i := 1; i < n; i++ {
		if !seen[i] {
			s.Active[i], s.Total[i] = s.Active[i-1], s.Total[i-1]
			if s.Pending != nil {
				s.Pending[i] = s.Pending[i-1]
			}
			s.Filled++
		}
	}
	return s, nil
}
