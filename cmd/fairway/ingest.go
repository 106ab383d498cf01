package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync/atomic"
	"text/tabwriter"
	"time"

	"github.com/fairway-hpc/fairway/accounting"
	"github.com/fairway-hpc/fairway/policy/trace"
	"github.com/fairway-hpc/fairway/slurmctl"
	"github.com/urfave/cli/v2"
)

// Ingest sources, as --from spells them.
const (
	fromSlurmdbd  = "slurmdbd"
	fromSacctJSON = accounting.FormatSacctJSON
)

var ingestSources = []string{fromSlurmdbd, fromSacctJSON, string(trace.SWF), string(trace.Helios), string(trace.PhillyMIX)}

// ingestConfig is `fairway ingest`'s validated settings.
type ingestConfig struct {
	From     string
	File     string // "" for slurmdbd, "-" for standard input
	Cluster  string
	SkipBad  bool
	JSON     bool
	Progress bool
	Sacct    string        // slurmdbd: the sacct binary
	Overlap  time.Duration // slurmdbd: re-read this much before the watermark
	Since    time.Time     // slurmdbd: first window start without a watermark

	// slurmdbd through slurmrestd, when SlurmURL is set (else sacct).
	SlurmURL      string
	SlurmUser     string
	TokenFile     string
	TokenEnv      string // the JWT from $SLURM_JWT, never logged
	ScontrolToken bool
	APIVersion    string
	MaxBody       int64 // --slurm-max-body
}

func ingestCommand() *cli.Command {
	return &cli.Command{
		Name:      "ingest",
		Usage:     "import finished jobs into the accounting database (idempotent)",
		ArgsUsage: "[FILE]",
		Description: "Imports job history from slurmdbd (incrementally from the stored watermark; through slurmrestd's\n" +
			"/slurmdb/<version>/jobs when --slurm-url is set, else with `sacct --json` on this host), from a\n" +
			"`sacct --json` file, or from a workload trace (SWF, Helios cluster_log.csv, Philly-MIX CSV;\n" +
			"gzip or plain; FILE - reads standard input). Re-importing never duplicates: jobs are keyed by\n" +
			"cluster, job id, array task and submit time. A malformed record fails the whole import with\n" +
			"its file:line and nothing is written, unless --skip-bad.",
		Flags: []cli.Flag{
			databaseFlag(),
			&cli.StringFlag{Name: "from", Usage: "source: " + strings.Join(ingestSources, ", "), EnvVars: []string{"FAIRWAY_INGEST_FROM"}},
			&cli.StringFlag{Name: "cluster", Usage: "cluster name (slurmdbd: required; traces: default the file name)", EnvVars: []string{"FAIRWAY_CLUSTER"}},
			&cli.BoolFlag{Name: "skip-bad", Usage: "import the good records and count the malformed ones instead of failing", EnvVars: []string{"FAIRWAY_INGEST_SKIP_BAD"}},
			&cli.BoolFlag{Name: "json", Usage: "print the summary as JSON", EnvVars: []string{"FAIRWAY_INGEST_JSON"}},
			&cli.StringFlag{Name: "progress", Value: "auto", Usage: "progress bar on stderr: auto (when stderr is a terminal), always or never", EnvVars: []string{"FAIRWAY_INGEST_PROGRESS"}},
			&cli.StringFlag{Name: "sacct", Value: "sacct", Usage: "slurmdbd: sacct binary used to read slurmdbd", EnvVars: []string{"FAIRWAY_SACCT"}},
			&cli.DurationFlag{Name: "overlap", Value: time.Hour, Usage: "slurmdbd: how far before the watermark each window starts", EnvVars: []string{"FAIRWAY_INGEST_OVERLAP"}},
			&cli.StringFlag{Name: "since", Usage: "slurmdbd: start of the first window when there is no watermark (RFC 3339 or YYYY-MM-DD; default 30 days ago)", EnvVars: []string{"FAIRWAY_INGEST_SINCE"}},
			&cli.StringFlag{Name: "slurm-url", Usage: "slurmdbd: read it through this slurmrestd (base URL) instead of sacct; --slurm-url '' forces sacct", EnvVars: []string{"FAIRWAY_SLURM_URL"}},
			&cli.StringFlag{Name: "slurm-user", Value: "slurm", Usage: "slurmdbd: user name sent to slurmrestd", EnvVars: []string{"FAIRWAY_SLURM_USER"}},
			&cli.StringFlag{Name: "slurm-token-file", Usage: "slurmdbd: file holding the slurmrestd JWT; else $SLURM_JWT", EnvVars: []string{"FAIRWAY_SLURM_TOKEN_FILE"}},
			&cli.BoolFlag{Name: "scontrol-token", Usage: "slurmdbd: mint the slurmrestd JWT with \"scontrol token\" (as SlurmUser)", EnvVars: []string{"FAIRWAY_SCONTROL_TOKEN"}},
			&cli.StringFlag{Name: "slurm-api", Usage: "slurmdbd: pin the REST API version (v0.0.38, v0.0.40 to v0.0.45); default: negotiate", EnvVars: []string{"FAIRWAY_SLURM_API"}},
			&cli.Int64Flag{Name: "slurm-max-body", Value: slurmctl.DefaultMaxResponseBytes, Usage: "slurmdbd: largest slurmrestd answer read, in bytes: about 10 kB per job record on Slurm 24.11+ (3 kB on 22.05), so 256 MiB holds ~27,000 jobs; raise it with MaxJobCount", EnvVars: []string{"FAIRWAY_SLURM_MAX_BODY"}},
		},
		Action: func(c *cli.Context) error {
			cfg, err := ingestSettings(c)
			if err != nil {
				return err
			}
			log, err := logger(c)
			if err != nil {
				return err
			}
			var hist *historyReader
			if cfg.From == fromSlurmdbd {
				if hist, err = openHistory(c.Context, cfg, log); err != nil {
					return err
				}
			}
			store, closeStore, err := openStore(c.Context, c.String("database-url"), log)
			if err != nil {
				return err
			}
			defer closeStore()
			return runIngest(c.Context, store, cfg, hist, c.App.Writer, os.Stderr)
		},
	}
}

// ingestSource tells --from from the FILE argument when --from is not
// given: a trace's format from its first line, sacct --json from a JSON
// object; without a file it explains the choices in one line.
func ingestSource(file string) (string, error) {
	choices := "--from: give one of slurmdbd (no FILE: the cluster's history from slurmdbd), " + fromSacctJSON +
		" FILE (sacct --json output), or a trace FILE of format swf, helios or philly-mix"
	if file == "" || file == "-" {
		return "", errors.New(choices)
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return "", fmt.Errorf("%s: %w", choices, err)
	}
	if t := bytes.TrimSpace(b); len(t) > 0 && t[0] == '{' {
		return fromSacctJSON, nil
	}
	f, err := trace.Detect(bytes.NewReader(b), file)
	if err != nil {
		return "", fmt.Errorf("%s (%v)", choices, err)
	}
	return string(f), nil
}

// ingestSettings validates the flags once, naming the bad one.
func ingestSettings(c *cli.Context) (ingestConfig, error) {
	cfg := ingestConfig{
		From: c.String("from"), Cluster: c.String("cluster"), SkipBad: c.Bool("skip-bad"), JSON: c.Bool("json"),
		Sacct: c.String("sacct"), Overlap: c.Duration("overlap"),
		SlurmURL: c.String("slurm-url"), SlurmUser: c.String("slurm-user"), TokenFile: c.String("slurm-token-file"),
		TokenEnv: os.Getenv("SLURM_JWT"), ScontrolToken: c.Bool("scontrol-token"), APIVersion: c.String("slurm-api"),
		MaxBody: c.Int64("slurm-max-body"),
	}
	if cfg.From == "" {
		var err error
		if cfg.From, err = ingestSource(c.Args().First()); err != nil {
			return cfg, err
		}
	}
	known := false
	for _, s := range ingestSources {
		known = known || s == cfg.From
	}
	if !known {
		return cfg, fmt.Errorf("--from %q: want one of %s", cfg.From, strings.Join(ingestSources, ", "))
	}
	switch {
	case cfg.From == fromSlurmdbd && c.NArg() > 0:
		return cfg, errors.New("--from slurmdbd reads no file: drop the FILE argument")
	case cfg.From == fromSlurmdbd && cfg.Cluster == "":
		return cfg, errors.New("--cluster: required with --from slurmdbd (the watermark is per cluster)")
	case cfg.From != fromSlurmdbd && c.NArg() != 1:
		return cfg, fmt.Errorf("--from %s needs exactly one FILE argument (- for standard input)", cfg.From)
	case cfg.From == fromSlurmdbd && cfg.SlurmURL != "" && cfg.TokenFile == "" && cfg.TokenEnv == "" && !cfg.ScontrolToken:
		return cfg, errors.New("--slurm-url is set but there is no slurmrestd token: set --slurm-token-file, $SLURM_JWT or --scontrol-token (or --slurm-url '' to read slurmdbd with sacct)")
	}
	cfg.File = c.Args().First()
	if cfg.Overlap < 0 {
		return cfg, errors.New("--overlap: must not be negative")
	}
	if s := c.String("since"); s != "" {
		t, err := time.Parse(time.RFC3339, s)
		if err != nil {
			t, err = time.Parse("2006-01-02", s)
		}
		if err != nil {
			return cfg, fmt.Errorf("--since %q: want RFC 3339 (2026-10-01T00:00:00Z) or YYYY-MM-DD", s)
		}
		cfg.Since = t
	}
	switch p := c.String("progress"); p {
	case "auto":
		cfg.Progress = isTerminal(os.Stderr)
	case "always":
		cfg.Progress = true
	case "never":
	default:
		return cfg, fmt.Errorf("--progress %q: want auto, always or never", p)
	}
	return cfg, nil
}

// historyReader is where --from slurmdbd reads, and how the summary names it.
type historyReader struct {
	accounting.HistorySource
	Via string
}

// openHistory picks slurmdbd's reader: slurmrestd when --slurm-url is set
// (no Slurm client or munge needed here), else sacct on this host.
func openHistory(ctx context.Context, cfg ingestConfig, log *slog.Logger) (*historyReader, error) {
	if cfg.SlurmURL == "" {
		return &historyReader{&accounting.SacctHistory{Path: cfg.Sacct, Cluster: cfg.Cluster}, "sacct"}, nil
	}
	client, err := newSlurmClient(ctx, slurmSettings{URL: cfg.SlurmURL, User: cfg.SlurmUser, TokenFile: cfg.TokenFile,
		TokenEnv: cfg.TokenEnv, ScontrolToken: cfg.ScontrolToken, APIVersion: cfg.APIVersion, MaxBody: cfg.MaxBody}, log)
	if err != nil {
		return nil, err
	}
	return &historyReader{&accounting.RESTHistory{Client: client, Cluster: cfg.Cluster, Log: log},
		fmt.Sprintf("slurmrestd %s at %s", client.Version(), cfg.SlurmURL)}, nil
}

// openStore opens --database-url (accounting.Open) and returns the store
// with the function that closes it.
func openStore(ctx context.Context, url string, log *slog.Logger) (*accounting.Store, func(), error) {
	pool, store, err := accounting.Open(ctx, url, log)
	if err != nil {
		return nil, nil, err
	}
	return store, pool.Close, nil
}

// ingestResult is the summary printed after an import.
type ingestResult struct {
	From       string   `json:"from"`
	Via        string   `json:"via,omitempty"` // slurmdbd: "slurmrestd v0.0.38 at URL" or "sacct"
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

// runIngest imports from cfg's source; hist is slurmdbd's reader, used (and
// needed) only with --from slurmdbd.
func runIngest(ctx context.Context, store *accounting.Store, cfg ingestConfig, hist *historyReader, stdout, stderr io.Writer) error {
	began := time.Now()
	res := ingestResult{From: cfg.From, File: cfg.File, Cluster: cfg.Cluster}
	var bar *progressBar
	if cfg.Progress {
		bar = newProgressBar(stderr, "ingest "+cfg.From)
		defer bar.stop()
	}
	phase := func(p string) {
		if bar != nil {
			bar.setPhase(p)
		}
	}
	var sum accounting.Summary
	var err error
	switch cfg.From {
	case fromSlurmdbd:
		var since, until time.Time
		res.Via = hist.Via
		sum, since, until, err = store.SyncHistory(ctx, hist.HistorySource, accounting.SyncOptions{
			Cluster: cfg.Cluster, Overlap: cfg.Overlap, Initial: cfg.Since, SkipBad: cfg.SkipBad, Phase: phase,
		})
		res.Window = []string{since.UTC().Format(time.RFC3339), until.UTC().Format(time.RFC3339)}
	default:
		sum, res.Cluster, err = ingestFile(ctx, store, cfg, bar, phase)
	}
	if bar != nil {
		bar.stop()
	}
	if err != nil {
		return err
	}
	res.Read, res.Inserted, res.Updated, res.Unchanged = sum.Read, sum.Inserted, sum.Updated, sum.Unchanged
	res.Duplicates, res.Unfinished, res.Rejected = sum.Duplicates, sum.Unfinished, sum.Rejected
	res.LeftOut = sum.LeftOut
	for _, r := range sum.Rejects {
		res.Rejects = append(res.Rejects, r.Error())
	}
	res.Seconds = time.Since(began).Seconds()
	return printIngest(stdout, res, cfg.JSON)
}

// ingestFile imports a sacct --json file or a trace.
func ingestFile(ctx context.Context, store *accounting.Store, cfg ingestConfig, bar *progressBar, phase func(string)) (accounting.Summary, string, error) {
	var (
		r    io.Reader
		name = cfg.File
		size int64
	)
	if cfg.File == "-" && cfg.From != fromSacctJSON {
		// A pipe can be read only once, which forces the slower staging
		// path (docs/BENCHMARKS.md); a trace is small next to its job
		// table, so spool it to a temporary file that can be read twice.
		f, err := spool(os.Stdin)
		if err != nil {
			return accounting.Summary{}, "", err
		}
		defer os.Remove(f.Name())
		defer f.Close()
		r, name = f, "stdin"
	} else if cfg.File == "-" {
		r, name = os.Stdin, "stdin"
	} else {
		f, err := os.Open(cfg.File)
		if err != nil {
			return accounting.Summary{}, "", err
		}
		defer f.Close()
		if st, err := f.Stat(); err == nil {
			size = st.Size()
		}
		r = f
	}
	cr := &countingReader{r: r}
	if bar != nil {
		bar.track(&cr.n, size)
	}
	return store.ImportFile(ctx, cr, accounting.FileImport{Format: cfg.From, Name: name, Cluster: cfg.Cluster, SkipBad: cfg.SkipBad, Phase: phase})
}

// spool copies r into a temporary file and returns it rewound.
func spool(r io.Reader) (*os.File, error) {
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

func printIngest(w io.Writer, r ingestResult, asJSON bool) error {
	if asJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(r)
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "source\t%s\n", r.From)
	if r.Via != "" {
		fmt.Fprintf(tw, "via\t%s\n", r.Via)
	}
	if r.File != "" {
		fmt.Fprintf(tw, "file\t%s\n", r.File)
	}
	if r.Cluster != "" {
		fmt.Fprintf(tw, "cluster\t%s\n", r.Cluster)
	}
	if len(r.Window) == 2 {
		fmt.Fprintf(tw, "window\t%s .. %s\n", r.Window[0], r.Window[1])
	}
	for _, row := range []struct {
		k string
		v int
	}{{"read", r.Read}, {"inserted", r.Inserted}, {"updated", r.Updated}, {"unchanged", r.Unchanged},
		{"duplicates", r.Duplicates}, {"unfinished", r.Unfinished}, {"rejected", r.Rejected}} {
		fmt.Fprintf(tw, "%s\t%d\n", row.k, row.v)
	}
	fmt.Fprintf(tw, "seconds\t%.2f\n", r.Seconds)
	if err := tw.Flush(); err != nil {
		return err
	}
	if r.LeftOut != nil {
		fmt.Fprintf(w, "left out: %s\n", trace.FormatLeftOut(r.LeftOut))
	}
	for _, msg := range r.Rejects {
		fmt.Fprintf(w, "rejected: %s\n", msg)
	}
	if r.Rejected > len(r.Rejects) {
		fmt.Fprintf(w, "rejected: %d more not listed\n", r.Rejected-len(r.Rejects))
	}
	return nil
}

// countingReader counts the bytes read through it, for the progress bar.
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

// progressBar redraws one status line on a terminal every 200 ms.
type progressBar struct {
	w     io.Writer
	label string
	done  chan struct{}
	ended chan struct{}
	start time.Time

	bytes atomic.Pointer[atomic.Int64]
	total atomic.Int64
	phase atomic.Value // string
	once  bool
}

func newProgressBar(w io.Writer, label string) *progressBar {
	b := &progressBar{w: w, label: label, done: make(chan struct{}), ended: make(chan struct{}), start: time.Now()}
	b.phase.Store("reading")
	go b.loop()
	return b
}

func (b *progressBar) track(n *atomic.Int64, total int64) { b.total.Store(total); b.bytes.Store(n) }

func (b *progressBar) setPhase(p string) {
	switch p {
	case "check":
		p = "checking"
	case "copy":
		p = "writing"
	case "merge":
		p = "merging into job"
	case "commit":
		p = "committing"
	}
	b.phase.Store(p)
}

func (b *progressBar) loop() {
	defer close(b.ended)
	t := time.NewTicker(200 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-b.done:
			fmt.Fprint(b.w, "\r\033[K")
			return
		case <-t.C:
			b.draw()
		}
	}
}

func (b *progressBar) draw() {
	phase, _ := b.phase.Load().(string)
	secs := time.Since(b.start).Seconds()
	line := fmt.Sprintf("%s: %s", b.label, phase)
	if p := b.bytes.Load(); p != nil {
		n := p.Load()
		if total := b.total.Load(); total > 0 {
			frac := float64(n) / float64(total)
			if frac > 1 {
				frac = 1
			}
			const width = 30
			fill := int(frac * width)
			line = fmt.Sprintf("%s [%s%s] %3.0f%%", line, strings.Repeat("#", fill), strings.Repeat(".", width-fill), frac*100)
		}
		line += fmt.Sprintf(" %.1f MB", float64(n)/1e6)
	}
	fmt.Fprintf(b.w, "\r\033[K%s %.0fs", line, secs)
}

// stop erases the bar; safe to call twice.
func (b *progressBar) stop() {
	if b.once {
		return
	}
	b.once = true
	close(b.done)
	<-b.ended
}
