package accounting

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/fairway-hpc/fairway/internal/input"
	"github.com/fairway-hpc/fairway/internal/trace"
)

// FromSlurmdbd is the ingest source that reads the cluster's history from
// slurmdbd; the others are FormatSacctJSON and the trace formats.
const FromSlurmdbd = "slurmdbd"

// IngestSources are the sources an ingest reads, as `fairway ingest --from`
// spells them.
var IngestSources = []string{FromSlurmdbd, FormatSacctJSON, string(trace.SWF), string(trace.Helios), string(trace.PhillyMIX)}

// IngestSource tells the source of file when none is given: a trace's
// format from its first line, sacct --json from a JSON object; without a
// file it explains the choices in one line.
func IngestSource(file string) (string, error) {
	choices := "--from: give one of slurmdbd (no FILE: the cluster's history from slurmdbd), " + FormatSacctJSON +
		" FILE (sacct --json output), or a trace FILE of format swf, helios or philly-mix"
	if file == "" || file == "-" {
		return "", errors.New(choices)
	}
	// Only the start is read: the input may be a multi-GB sacct --json
	// document or trace, which the import streams.
	fh, err := os.Open(file)
	if err != nil {
		return "", fmt.Errorf("%s: %w", choices, err)
	}
	defer fh.Close()
	br := bufio.NewReaderSize(fh, 64<<10)
	head, _ := br.Peek(64 << 10)
	// A gzip head: what it inflates to, up to where it is cut short.
	if zr, gz, err := input.Gunzip(bufio.NewReader(bytes.NewReader(head))); err == nil && gz != nil {
		head, _ = io.ReadAll(io.LimitReader(zr, 64<<10))
	}
	if t := bytes.TrimSpace(head); len(t) > 0 && t[0] == '{' {
		return FormatSacctJSON, nil
	}
	f, err := trace.Detect(br, file)
	if err != nil {
		return "", fmt.Errorf("%s (%v)", choices, err)
	}
	return string(f), nil
}

// IngestConfig is one import's settings.
type IngestConfig struct {
	From    string        // one of IngestSources
	File    string        // "" for slurmdbd, "-" for standard input
	NArgs   int           // FILE arguments given, to tell a missing one from an extra one
	Cluster string        // slurmdbd: required; traces: "" names it after the file
	SkipBad bool          // import the good records and count the bad ones
	Overlap time.Duration // slurmdbd: re-read this much before the watermark
	Since   time.Time     // slurmdbd: window start without a watermark, or when earlier (SyncOptions.Initial)
	// SlurmREST says slurmdbd is read through slurmrestd, and HasToken
	// whether a token for it was given.
	SlurmREST, HasToken bool
}

// Validate names the first bad setting by its flag.
func (c IngestConfig) Validate() error {
	switch {
	case !slices.Contains(IngestSources, c.From):
		return &FieldError{Field: "From", Value: fmt.Sprintf("%q", c.From), Err: fmt.Errorf("want one of %s", strings.Join(IngestSources, ", "))}
	case c.From == FromSlurmdbd && c.NArgs > 0:
		return errors.New("--from slurmdbd reads no file: drop the FILE argument")
	case c.From == FromSlurmdbd && c.Cluster == "":
		return errors.New("--cluster: required with --from slurmdbd (the watermark is per cluster)")
	case c.From != FromSlurmdbd && c.NArgs != 1:
		return fmt.Errorf("--from %s needs exactly one FILE argument (- for standard input)", c.From)
	case c.From == FromSlurmdbd && c.SlurmREST && !c.HasToken:
		return errors.New("--slurm-url is set but there is no slurmrestd token: set --slurm-token-file, $SLURM_JWT or --scontrol-token (or --slurm-url '' to read slurmdbd with sacct)")
	case c.Overlap < 0:
		return &FieldError{Field: "Overlap", Err: errors.New("must not be negative")}
	}
	return nil
}

// ParseSince reads a first-window start: RFC 3339 or a date. A bad one is
// a *FieldError of Since.
func ParseSince(s string) (time.Time, error) {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		t, err = time.Parse("2006-01-02", s)
	}
	if err != nil {
		return time.Time{}, &FieldError{Field: "Since", Value: fmt.Sprintf("%q", s), Err: errors.New("want RFC 3339 (2026-10-01T00:00:00Z) or YYYY-MM-DD")}
	}
	return t, nil
}

// NamedHistory is where an ingest from slurmdbd reads, and how its summary
// names it ("slurmrestd v0.0.41 at URL" or "sacct").
type NamedHistory struct {
	HistorySource
	Via string
}

// IngestProgress hears how an import goes; nil hears nothing.
type IngestProgress interface {
	// Phase names the step under way (ImportOptions.Phase).
	Phase(string)
	// Track hands the count of bytes read so far and the input's size
	// (0 when unknown).
	Track(n *atomic.Int64, total int64)
}

// IngestResult is an import's summary.
type IngestResult struct {
	From       string   `json:"from"`
	Via        string   `json:"via,omitempty"`
	File       string   `json:"file,omitempty"`
	Cluster    string   `json:"cluster,omitempty"`
	Window     []string `json:"window,omitempty"` // slurmdbd: [since, until)
	Read       int      `json:"read"`
	Inserted   int      `json:"inserted"`
	Updated    int      `json:"updated"`
	Unchanged  int      `json:"unchanged"`
	Duplicates int      `json:"duplicates"`
	Unfinished int      `json:"unfinished"`
	Rejected   int      `json:"rejected"`
	Rejects    []string `json:"rejects,omitempty"`
	// LeftOut counts trace records left out as not replayable, by reason.
	LeftOut map[string]int `json:"left_out,omitempty"`
	Seconds float64        `json:"seconds"`
}

// Ingest imports from cfg's source; hist is slurmdbd's reader, used (and
// needed) only with FromSlurmdbd. stdin is read when cfg.File is "-".
func (s *Store) Ingest(ctx context.Context, cfg IngestConfig, hist *NamedHistory, stdin io.Reader, prog IngestProgress) (IngestResult, error) {
	began := time.Now()
	res := IngestResult{From: cfg.From, File: cfg.File, Cluster: cfg.Cluster}
	phase := func(string) {}
	if prog != nil {
		phase = prog.Phase
	}
	var sum Summary
	var err error
	switch cfg.From {
	case FromSlurmdbd:
		if hist == nil {
			return res, errors.New("ingest from slurmdbd: no history reader")
		}
		var since, until time.Time
		res.Via = hist.Via
		sum, since, until, err = s.SyncHistory(ctx, hist.HistorySource, SyncOptions{
			Cluster: cfg.Cluster, Overlap: cfg.Overlap, Initial: cfg.Since, SkipBad: cfg.SkipBad, Phase: phase,
		})
		res.Window = []string{since.UTC().Format(time.RFC3339), until.UTC().Format(time.RFC3339)}
	default:
		sum, res.Cluster, err = s.ingestFile(ctx, cfg, stdin, prog, phase)
	}
	if err != nil {
		return res, err
	}
	res.Read, res.Inserted, res.Updated, res.Unchanged = sum.Read, sum.Inserted, sum.Updated, sum.Unchanged
	res.Duplicates, res.Unfinished, res.Rejected = sum.Duplicates, sum.Unfinished, sum.Rejected
	res.LeftOut = sum.LeftOut
	for _, r := range sum.Rejects {
		res.Rejects = append(res.Rejects, r.Error())
	}
	res.Seconds = time.Since(began).Seconds()
	return res, nil
}

// ingestFile imports a sacct --json file or a trace.
func (s *Store) ingestFile(ctx context.Context, cfg IngestConfig, stdin io.Reader, prog IngestProgress, phase func(string)) (Summary, string, error) {
	var (
		r    io.Reader
		name = cfg.File
		size int64
	)
	if cfg.File == "-" && cfg.From != FormatSacctJSON {
		// A pipe can be read only once, which forces the slower staging
		// path (docs/BENCHMARKS.md); a trace is small next to its job
		// table, so spool it to a temporary file that can be read twice.
		f, err := spoolInput(stdin)
		if err != nil {
			return Summary{}, "", err
		}
		defer os.Remove(f.Name())
		defer f.Close()
		r, name = f, "stdin"
	} else if cfg.File == "-" {
		r, name = stdin, "stdin"
	} else {
		f, err := os.Open(cfg.File)
		if err != nil {
			return Summary{}, "", err
		}
		defer f.Close()
		if st, err := f.Stat(); err == nil {
			size = st.Size()
		}
		r = f
	}
	cr := &countingReader{r: r}
	if prog != nil {
		prog.Track(&cr.n, size)
	}
	return s.ImportFile(ctx, cr, FileImport{Format: cfg.From, Name: name, Cluster: cfg.Cluster, SkipBad: cfg.SkipBad, Phase: phase})
}

// spoolInput copies r into a temporary file and returns it rewound.
func spoolInput(r io.Reader) (*os.File, error) {
	f, err := os.CreateTemp("", "fairway-ingest-*")
	if err != nil {
		return nil, fmt.Errorf("spool standard input: %w", err)
	}
	if _, err := io.Copy(f, r); err != nil {
		f.Close()
		os.Remove(f.Name())
		return nil, fmt.Errorf("spool standard input: %w", err)
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		f.Close()
		os.Remove(f.Name())
		return nil, fmt.Errorf("spool standard input: %w", err)
	}
	return f, nil
}

// countingReader counts the bytes read through it, for progress.
type countingReader struct {
	r io.Reader
	n atomic.Int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n.Add(int64(n))
	return n, err
}

// Seek lets an import read a file twice (check, then write); the count
// restarts with the input.
func (c *countingReader) Seek(off int64, whence int) (int64, error) {
	sk, ok := c.r.(io.Seeker)
	if !ok {
		return 0, errors.New("input cannot seek")
	}
	n, err := sk.Seek(off, whence)
	if err == nil {
		c.n.Store(n)
	}
	return n, err
}
