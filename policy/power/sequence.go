package power

import (
	"bufio"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/fairway-hpc/fairway/internal/input"
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
//
// The Helios artifact's per-cluster files (cluster_node_used_gpu_count.csv
// of Venus, Earth, Saturn and Uranus) count nodes by how many GPUs are in
// use on them, one column "Use K GPU" per K, and the artifact's CES takes
// their sum over K ≥ 1 as the nodes in use. A header with such columns and
// no active column is read the same way. Their column "All Node Number",
// the cluster's size the CES accounts against, is read as total; see
// ReadSequenceTotal for a file without one.
func ReadSequence(r io.Reader, name string) ([]Sample, error) {
	return ReadSequenceTotal(r, name, 0)
}

// ReadSequenceTotal is ReadSequence with the cluster's node count given by
// the caller (total > 0) for a sequence whose header has no total column
// (total or All Node Number).
// Without a total column or a given total, a file of "Use K GPU" columns
// with K = 0 among them (idle nodes counted too) has the sum over every K
// as its total; any other such file is refused, naming what to give. A
// given total alongside a total column is refused: one of them would be
// silently ignored.
func ReadSequenceTotal(r io.Reader, name string, total int) ([]Sample, error) {
	if name == "" {
		name = "input"
	}
	if total < 0 || total > maxSequenceNodes {
		return nil, fmt.Errorf("%s: total %d: want 1 to %d nodes", name, total, maxSequenceNodes)
	}
	br := bufio.NewReader(r)
	src, zr, err := input.Gunzip(br)
	if err != nil {
		return nil, fmt.Errorf("%s: gzip: %w", name, err)
	}
	if zr != nil {
		defer zr.Close()
		br = bufio.NewReader(src)
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
	h, err := readHeader(head, total)
	if err != nil {
		return nil, fmt.Errorf("%s:1: %w", name, err)
	}
	var out []Sample
	for {
		rec, err := cr.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			// FieldPos panics on a record that failed to parse (a quote
			// left open at the end of the input holds no field); the error
			// knows its line.
			var pe *csv.ParseError
			if errors.As(err, &pe) {
				return nil, fmt.Errorf("%s:%d: %w: %v", name, pe.Line, ErrMalformed, err)
			}
			return nil, fmt.Errorf("%s: %w: %v", name, ErrMalformed, err)
		}
		line, _ := cr.FieldPos(0)
		if len(rec) < h.need {
			return nil, fmt.Errorf("%s:%d: %d fields, want at least %d: %w", name, line, len(rec), h.need, ErrMalformed)
		}
		if len(rec) > h.width {
			return nil, fmt.Errorf("%s:%d: %d fields, more than the header's %d: %w", name, line, len(rec), h.width, ErrMalformed)
		}
		s, field, err := h.sample(rec)
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %s: %w: %v", name, line, field, ErrMalformed, err)
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

// header is where a sequence's columns are: the named ones (-1 where
// absent) and the "Use K GPU" ones (index → K).
type header struct {
	time, active, total, pending int
	totalName                    string // the total column's name in errors: total or all node number
	gpuCols                      []gpuCol
	idleCounted                  bool // a "Use 0 GPU" column: the gpu columns sum to the cluster
	fixedTotal                   int  // the caller's total, where the file has none
	need, width                  int
}

type gpuCol struct{ col, gpus int }

// useGPU matches the Helios artifact's column names ("Use 1 GPU"), with
// the plural tolerated.
var useGPU = regexp.MustCompile(`^use (\d{1,3}) gpus?$`)

func readHeader(head []string, total int) (*header, error) {
	joined := strings.Join(head, ",")
	h := &header{time: -1, active: -1, total: -1, pending: -1, width: len(head), fixedTotal: total}
	// "All Node Number" is the Helios artifact's total: its CES takes the
	// cluster's size from that column of the same file.
	named := map[string]*int{"time": &h.time, "active": &h.active, "total": &h.total, "all node number": &h.total, "pending": &h.pending}
	seenGPU := map[int]bool{}
	for i, name := range head {
		name = strings.ToLower(strings.Join(strings.Fields(strings.TrimPrefix(name, "\ufeff")), " "))
		if p, ok := named[name]; ok {
			if *p >= 0 {
				if p == &h.total {
					return nil, fmt.Errorf("header %q names the cluster's total twice (\"total\" or \"All Node Number\"): %w", joined, ErrMalformed)
				}
				return nil, fmt.Errorf("header %q names column %q twice: %w", joined, name, ErrMalformed)
			}
			*p = i
			if p == &h.total {
				h.totalName = name
			}
			continue
		}
		if m := useGPU.FindStringSubmatch(name); m != nil {
			k, _ := strconv.Atoi(m[1])
			if seenGPU[k] {
				return nil, fmt.Errorf("header %q names the nodes using %d GPUs twice: %w", joined, k, ErrMalformed)
			}
			seenGPU[k] = true
			h.gpuCols = append(h.gpuCols, gpuCol{i, k})
			h.idleCounted = h.idleCounted || k == 0
		}
	}
	if h.time < 0 {
		return nil, fmt.Errorf("header %q has no column \"time\": %w (want time,active,total)", joined, ErrMalformed)
	}
	busyCols := len(h.gpuCols)
	if h.idleCounted {
		busyCols--
	}
	if h.active < 0 && busyCols == 0 {
		return nil, fmt.Errorf("header %q has no column \"active\": %w (want time,active,total, or the Helios artifact's time,Use 1 GPU,…,Use 8 GPU)", joined, ErrMalformed)
	}
	switch {
	case h.total >= 0 && total > 0:
		return nil, fmt.Errorf("header %q has a column %q and a total of %d nodes was given too: %w (give one)", joined,
			strings.TrimSpace(strings.TrimPrefix(head[h.total], "\ufeff")), total, ErrMalformed)
	case h.total < 0 && total == 0 && !(h.active < 0 && h.idleCounted):
		if len(h.gpuCols) > 0 {
			return nil, fmt.Errorf("header %q has no column \"total\" or \"All Node Number\" and no \"Use 0 GPU\" column to count idle nodes: %w (give the cluster's node count: --total N)", joined, ErrMalformed)
		}
		return nil, fmt.Errorf("header %q has no column \"total\": %w (want time,active,total, or give the cluster's node count: --total N)", joined, ErrMalformed)
	}
	h.need = max(h.time, h.active, h.total, h.pending) + 1
	if h.active < 0 {
		for _, g := range h.gpuCols {
			h.need = max(h.need, g.col+1)
		}
	}
	return h, nil
}

// sample parses one row; on error it names the bad field.
func (h *header) sample(rec []string) (Sample, string, error) {
	var s Sample
	var err error
	ts := strings.TrimSpace(rec[h.time])
	for _, l := range timeLayouts {
		if s.Time, err = time.Parse(l, ts); err == nil {
			break
		}
	}
	if err != nil {
		return s, "time", fmt.Errorf("%q is not a time like 2017-10-03 00:00:00", ts)
	}
	var idle int
	if h.active >= 0 {
		if s.Active, err = count(rec[h.active]); err != nil {
			return s, "active", err
		}
	} else {
		for _, g := range h.gpuCols {
			// An empty cell is pandas' NaN, which the artifact's sum over
			// the columns skips: no node uses that many GPUs.
			if strings.TrimSpace(rec[g.col]) == "" {
				continue
			}
			n, err := count(rec[g.col])
			if err != nil {
				return s, fmt.Sprintf("use %d gpu", g.gpus), err
			}
			if g.gpus == 0 {
				idle = n
			} else {
				s.Active += n
			}
		}
		if s.Active > maxSequenceNodes {
			return s, "active", fmt.Errorf("%d nodes: more than any cluster (at most %d)", s.Active, maxSequenceNodes)
		}
	}
	switch {
	case h.total >= 0:
		if s.Total, err = count(rec[h.total]); err != nil {
			return s, h.totalName, err
		}
	case h.fixedTotal > 0:
		s.Total = h.fixedTotal
	default: // checked by readHeader: the gpu columns count idle nodes too
		s.Total = s.Active + idle
	}
	if s.Total == 0 {
		return s, "total", fmt.Errorf("0 nodes in the cluster")
	}
	if s.Total > maxSequenceNodes {
		return s, "total", fmt.Errorf("%d nodes: more than any cluster (at most %d)", s.Total, maxSequenceNodes)
	}
	if s.Active > s.Total {
		return s, "active", fmt.Errorf("%d active nodes of %d in the cluster", s.Active, s.Total)
	}
	if h.pending >= 0 {
		if s.Pending, err = count(rec[h.pending]); err != nil {
			return s, "pending", err
		}
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

// maxSeriesSteps bounds a series: 8 years of minutes, more than any
// sequence a power evaluation replays.
const maxSeriesSteps = 1 << 22

// Resample groups samples into steps of length step, aligned to the
// step's multiples since midnight of the first sample's day (pandas'
// resample('10min') origin), and keeps each step's maxima, as the Helios
// artifact does: a step needs the nodes of its busiest minute. A sequence
// spanning maxSeriesSteps steps or more is an error.
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
	last := samples[len(samples)-1].Time
	// Sub saturates past 292 years, and a series is three counts a step:
	// a mistyped year would otherwise place the last rows in a wrong step
	// or allocate gigabytes.
	span := last.Sub(start)
	if !start.Add(span).Equal(last) || span/step >= maxSeriesSteps {
		return nil, fmt.Errorf("resample: the sequence spans %s to %s: more than %d steps of %v (a mistyped date?)",
			first.Format(time.DateTime), last.Format(time.DateTime), maxSeriesSteps, step)
	}
	n := s.Index(last) + 1
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
