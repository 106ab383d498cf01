package trace

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/fairway-hpc/fairway/internal/input"
	"github.com/fairway-hpc/fairway/policy"
)

// Format names a trace file format.
type Format string

// The supported formats.
const (
	SWF       Format = "swf"        // Parallel Workloads Archive Standard Workload Format
	Helios    Format = "helios"     // Helios cluster_log.csv (SC'21 release)
	PhillyMIX Format = "philly-mix" // Chronus artifact trace_job_Philly_MIX*.csv
)

// Formats lists the supported formats, for flag help and validation.
var Formats = []Format{SWF, Helios, PhillyMIX}

// ParseFormat returns the Format spelled s, or an error naming the choices.
func ParseFormat(s string) (Format, error) {
	for _, f := range Formats {
		if string(f) == s {
			return f, nil
		}
	}
	return "", fmt.Errorf("unknown trace format %q: want swf, helios or philly-mix", s)
}

// Meta is what a trace says about itself besides its jobs.
type Meta struct {
	Format Format
	// MaxProcs and MaxNodes are the machine size from an SWF header
	// (0 when absent).
	MaxProcs int
	MaxNodes int
	// Start is the instant the trace's relative times count from: SWF's
	// UnixStartTime header, or the Unix epoch when a trace gives none.
	Start time.Time
	// Header holds every "; Key: value" line of an SWF header (the first
	// value when a key repeats), and nothing for CSV formats.
	Header map[string]string
	// Columns is the header row of a CSV format, nil for SWF.
	Columns []string
}

// Options tune a Reader.
type Options struct {
	// Name is the file name used in error messages; "input" when empty.
	Name string
	// SkipBad skips malformed lines instead of failing on the first one;
	// Reader.Skipped counts them.
	SkipBad bool
	// Cluster is copied into every Job.Cluster.
	Cluster string
}

// ErrMalformed is wrapped by every error about a bad line.
var ErrMalformed = errors.New("malformed line")

// The reasons a well-formed record is left out of a trace: nothing a replay
// could place in time or on the machine. Reader.LeftOut counts them by
// reason; they are never errors.
const (
	LeftUnknownSubmit = "records with unknown submit time"
	LeftUnknownRun    = "records with unknown run time"
	LeftNoProcessors  = "records with no processors"
)

// leftOutError is what a parser returns for a record it leaves out.
type leftOutError struct{ reason string }

func (e *leftOutError) Error() string { return "left out: " + e.reason }

func leftOut(reason string) error { return &leftOutError{reason} }

// MergeLeftOut is a new map of the counts of a and b summed by reason
// (either may be nil): what a reader and a replay left out, told as one.
func MergeLeftOut(a, b map[string]int) map[string]int {
	out := make(map[string]int, len(a)+len(b))
	for _, m := range []map[string]int{a, b} {
		for r, n := range m {
			out[r] += n
		}
	}
	return out
}

// FormatLeftOut spells counts of left-out records for people:
// "12 records with unknown run time; 3 records with unknown submit time",
// by reason in a fixed order, or "none".
func FormatLeftOut(m map[string]int) string {
	reasons := make([]string, 0, len(m))
	for r, n := range m {
		if n > 0 {
			reasons = append(reasons, r)
		}
	}
	slices.Sort(reasons)
	if len(reasons) == 0 {
		return "none"
	}
	parts := make([]string, len(reasons))
	for i, r := range reasons {
		parts[i] = fmt.Sprintf("%d %s", m[r], r)
	}
	return strings.Join(parts, "; ")
}

// ParseError is a malformed line: which file, which line and why.
type ParseError struct {
	Name string
	Line int
	Err  error
}

func (e *ParseError) Error() string { return fmt.Sprintf("%s:%d: %v", e.Name, e.Line, e.Err) }

// Unwrap returns the reason; errors.Is(err, ErrMalformed) holds for every
// ParseError.
func (e *ParseError) Unwrap() []error { return []error{ErrMalformed, e.Err} }

// lineParser turns one line of a format into a job. header is called for
// lines the format treats as header (SWF comments, the CSV column row);
// parse for the rest. ok=false from parse means "not a job, skip quietly".
type lineParser interface {
	header(line []byte, m *Meta) (isHeader bool, err error)
	parse(line []byte, m *Meta, j *policy.Job) error
}

// Reader reads jobs from a trace one at a time:
//
//	r, err := trace.NewReader(f, trace.SWF, trace.Options{Name: path})
//	for r.Next() { use(r.Job()) }
//	if err := r.Err(); err != nil { ... }
//
// Meta is complete once the first job has been read (headers come first).
type Reader struct {
	sc      *bufio.Scanner
	src     *input.Sticky // what sc reads, keeping its first error
	p       lineParser
	opt     Options
	meta    Meta
	job     policy.Job
	line    int
	skipped int
	skips   []error // the first MaxSkipReasons of the skipped lines' errors
	leftOut map[string]int
	err     error
	closer  io.Closer
	read    int64 // bytes of text scanned, line ends included
}

// utf8BOM starts a file that Excel, Windows tools or pandas' "utf-8-sig"
// wrote: not part of its first line.
var utf8BOM = []byte{0xef, 0xbb, 0xbf}

// trimLine is a line without its surrounding space and, on the file's
// first line, without a byte order mark.
func trimLine(line []byte, first bool) []byte {
	if first {
		line = bytes.TrimPrefix(line, utf8BOM)
	}
	return bytes.TrimSpace(line)
}

// maxLine bounds one line; longer lines are an error, not a silent cut.
const maxLine = 1 << 20

// NewReader returns a Reader of format f over r, decompressing r when it
// starts with the gzip magic bytes.
func NewReader(r io.Reader, f Format, opt Options) (*Reader, error) {
	if opt.Name == "" {
		opt.Name = "input"
	}
	var p lineParser
	switch f {
	case SWF:
		p = &swfParser{}
	case Helios:
		p = &heliosParser{}
	case PhillyMIX:
		p = &phillyParser{}
	default:
		return nil, fmt.Errorf("unknown trace format %q", f)
	}
	br := bufio.NewReaderSize(r, 64<<10)
	rd := &Reader{p: p, opt: opt, meta: Meta{Format: f, Start: time.Unix(0, 0).UTC()}}
	if _, err := br.Peek(2); err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("read %s: %w", opt.Name, bareErr(err))
	}
	src, zr, err := input.Gunzip(br)
	if err != nil {
		return nil, fmt.Errorf("gunzip %s: %w", opt.Name, err)
	}
	if zr != nil {
		rd.closer = zr
	}
	// A truncated gzip stream ends in io.ErrUnexpectedEOF, and the scanner
	// first hands over the cut last line, which then fails to parse: that
	// the file is truncated is the error to report (Sticky keeps it), not
	// the half line's field count.
	rd.src = &input.Sticky{R: src}
	rd.sc = bufio.NewScanner(rd.src)
	rd.sc.Buffer(make([]byte, 64<<10), maxLine)
	return rd, nil
}

// Next reads the next job. It returns false at the end of the input or on
// the first error (see Err).
func (r *Reader) Next() bool {
	if r.err != nil {
		return false
	}
	for r.sc.Scan() {
		r.line++
		r.read += int64(len(r.sc.Bytes())) + 1
		line := trimLine(r.sc.Bytes(), r.line == 1)
		if len(line) == 0 {
			continue
		}
		isHeader, err := r.p.header(line, &r.meta)
		if err == nil && isHeader {
			continue
		}
		if err == nil {
			r.job = policy.Job{Cluster: r.opt.Cluster, ArrayTask: -1}
			err = r.p.parse(line, &r.meta, &r.job)
		}
		if err == nil {
			return true
		}
		if lo, ok := err.(*leftOutError); ok {
			if r.leftOut == nil {
				r.leftOut = map[string]int{}
			}
			r.leftOut[lo.reason]++
			continue
		}
		pe := &ParseError{Name: r.opt.Name, Line: r.line, Err: err}
		if r.src.Err != nil {
			r.err = r.readError(r.src.Err)
			return false
		}
		if !r.opt.SkipBad {
			r.err = pe
			return false
		}
		r.skipped++
		if len(r.skips) < MaxSkipReasons {
			r.skips = append(r.skips, pe)
		}
	}
	if err := r.sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			r.err = &ParseError{Name: r.opt.Name, Line: r.line + 1, Err: fmt.Errorf("line longer than %d bytes", maxLine)}
		} else {
			r.err = r.readError(err)
		}
	}
	if r.closer != nil {
		r.closer.Close()
		r.closer = nil
	}
	return false
}

// bareErr is err without the *fs.PathError that names the file again
// ("read t.swf: read t.swf: is a directory").
func bareErr(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// readError is the error of a failed read of the input.
func (r *Reader) readError(err error) error {
	err = bareErr(err)
	if errors.Is(err, io.ErrUnexpectedEOF) {
		return fmt.Errorf("%s: %w (the file is truncated)", r.opt.Name, err)
	}
	return fmt.Errorf("%s: %w", r.opt.Name, err)
}

// Job returns the job read by the last successful Next.
func (r *Reader) Job() policy.Job { return r.job }

// Err returns the error that stopped Next, nil at a clean end of input.
func (r *Reader) Err() error { return r.err }

// Meta returns what the trace's header said so far.
func (r *Reader) Meta() Meta { return r.meta }

// Skipped counts the malformed lines skipped under Options.SkipBad.
func (r *Reader) Skipped() int { return r.skipped }

// MaxSkipReasons is how many skipped lines' errors a Reader keeps.
const MaxSkipReasons = 20

// SkipReasons returns the errors of the first MaxSkipReasons lines skipped
// under Options.SkipBad, each naming its file and line, so that what was
// skipped can be shown and fixed.
func (r *Reader) SkipReasons() []error { return r.skips }

// LeftOut counts the well-formed records left out so far, by reason (the
// Left* constants); nil when none was.
func (r *Reader) LeftOut() map[string]int { return r.leftOut }

// Line is the number of the last line read (1-based).
func (r *Reader) Line() int { return r.line }

// Trace is a whole trace in memory.
type Trace struct {
	Jobs    []policy.Job
	Meta    Meta
	Skipped int // malformed lines skipped under Options.SkipBad
	// SkipReasons are the first MaxSkipReasons skipped lines' errors.
	SkipReasons []error
	// LeftOut counts the well-formed records left out, by reason.
	LeftOut map[string]int
}

// ReadAll reads every job of a trace of format f from r.
func ReadAll(r io.Reader, f Format, opt Options) (*Trace, error) {
	size := plainSize(r)
	rd, err := NewReader(r, f, opt)
	if err != nil {
		return nil, err
	}
	if rd.closer != nil {
		size = gzipSize(r)
	}
	// The jobs are gathered in blocks and copied once into a slice of the
	// exact size: appending to one slice allocates several times the
	// final size (a large slice grows by a quarter at a time), which is
	// most of what a small simulation allocates, and its GC cycles. An
	// input whose text's length is known needs neither: its first block
	// tells how many bytes a job takes, and one slice a little larger
	// than the estimate takes them all (a short process, such as one
	// replay of a small trace, pays for every byte it allocates; a wrong
	// estimate only costs the copies append makes).
	var blocks [][]policy.Job
	cur, n := make([]policy.Job, 0, 256), 0
	var all []policy.Job
	for rd.Next() {
		if all != nil {
			all = append(all, rd.Job())
			continue
		}
		if len(cur) == cap(cur) {
			if est := estimateJobs(len(cur), rd.read, size); n == len(cur) && est > 0 {
				all = append(make([]policy.Job, 0, est), cur...)
				all = append(all, rd.Job())
				continue
			}
			blocks = append(blocks, cur)
			cur = make([]policy.Job, 0, min(2*cap(cur), 1<<14))
		}
		cur = append(cur, rd.Job())
		n++
	}
	if err := rd.Err(); err != nil {
		return nil, err
	}
	t := &Trace{Jobs: all}
	if all == nil && n > 0 {
		t.Jobs = make([]policy.Job, 0, n)
		for _, b := range blocks {
			t.Jobs = append(t.Jobs, b...)
		}
		t.Jobs = append(t.Jobs, cur...)
	}
	t.Meta, t.Skipped, t.SkipReasons, t.LeftOut = rd.Meta(), rd.Skipped(), rd.SkipReasons(), rd.LeftOut()
	return t, nil
}

// plainSize is what is left to read of r when it is a regular file or an
// in-memory reader, else -1 (a pipe).
func plainSize(r io.Reader) int64 {
	switch v := r.(type) {
	case *os.File:
		st, err := v.Stat()
		if err != nil || !st.Mode().IsRegular() {
			return -1
		}
		pos, err := v.Seek(0, io.SeekCurrent)
		if err != nil {
			return -1
		}
		return st.Size() - pos
	case interface{ Len() int }: // bytes.Reader, strings.Reader, bytes.Buffer
		return int64(v.Len())
	}
	return -1
}

// gzipSize is the uncompressed length a gzip file's trailer records, -1
// when r is not a regular file. The trailer holds it modulo 4 GiB and for
// the last member only, so it is an estimate, as estimateJobs wants.
func gzipSize(r io.Reader) int64 {
	f, ok := r.(*os.File)
	if !ok {
		return -1
	}
	st, err := f.Stat()
	if err != nil || !st.Mode().IsRegular() || st.Size() < 18 {
		return -1
	}
	var isize [4]byte
	if _, err := f.ReadAt(isize[:], st.Size()-4); err != nil {
		return -1
	}
	return int64(binary.LittleEndian.Uint32(isize[:]))
}

// estimateJobs is how many jobs a text of size bytes holds, from n jobs in
// its first read bytes, with a margin; 0 when it cannot tell.
func estimateJobs(n int, read, size int64) int {
	if size <= 0 || read <= 0 || read >= size {
		return 0
	}
	est := float64(n) * float64(size) / float64(read)
	if est > 1<<31 {
		return 0
	}
	return int(est*1.03) + 64
}
