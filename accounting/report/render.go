package report

import (
	"bytes"
	_ "embed"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"html/template"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"unicode"

	"github.com/fairway-hpc/fairway/internal/atomicfile"
)

// Formats are the renderings Write knows.
var Formats = []string{"html", "md", "csv", "json"}

// ErrFormat is returned for a format not in Formats.
var ErrFormat = errors.New("unknown report format")

// Write renders r into dir in each of formats: report.html (one
// self-contained file, plots inline), report.md with the plots beside it as
// SVG files, one CSV file per table (plus definitions.csv), report.json.
// It returns the files written.
func Write(dir string, r *Report, formats []string) ([]string, error) {
	for _, f := range formats {
		if !slices.Contains(Formats, f) {
			return nil, fmt.Errorf("%w %q: want %s", ErrFormat, f, strings.Join(Formats, ", "))
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("create %s: %w", dir, err)
	}
	var figs []Figure
	if slices.Contains(formats, "html") || slices.Contains(formats, "md") {
		var err error
		if figs, err = Figures(r); err != nil {
			return nil, err
		}
	}
	var written []string
	put := func(name string, render func(io.Writer) error) error {
		var b bytes.Buffer
		if err := render(&b); err != nil {
			return fmt.Errorf("render %s: %w", name, err)
		}
		path := filepath.Join(dir, name)
		// Each file replaced whole: a failed write leaves its old version
		// (and the error names it once); the directory is not replaced as
		// a set.
		if err := atomicfile.WriteFile(path, b.Bytes(), 0o644); err != nil {
			return err
		}
		written = append(written, path)
		return nil
	}
	for _, f := range formats {
		var err error
		switch f {
		case "html":
			err = put("report.html", func(w io.Writer) error { return WriteHTML(w, r, figs) })
		case "md":
			for _, fig := range figs {
				if err = put(fig.Name+".svg", func(w io.Writer) error { _, err := w.Write(fig.SVG); return err }); err != nil {
					return written, err
				}
			}
			err = put("report.md", func(w io.Writer) error { return WriteMarkdown(w, r, figs) })
		case "csv":
			for _, t := range csvTables(r) {
				if err = put(t.Name+".csv", func(w io.Writer) error { return writeCSV(w, t) }); err != nil {
					return written, err
				}
			}
		case "json":
			err = put("report.json", func(w io.Writer) error { return WriteJSON(w, r) })
		}
		if err != nil {
			return written, err
		}
	}
	return written, nil
}

// WriteJSON writes r as indented JSON, with the definitions.
func WriteJSON(w io.Writer, r *Report) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(struct {
		*Report
		Definitions []Term `json:"definitions"`
	}{r, Glossary(r)})
}

// csvTables is every table, plus the notes and the definitions.
func csvTables(r *Report) []table {
	ts := tables(r)
	if len(r.Notes) > 0 {
		n := table{Name: "notes", Cols: []col{{Head: "Note"}}}
		for _, s := range r.Notes {
			n.Rows = append(n.Rows, []cell{c(s)})
		}
		ts = append(ts, n)
	}
	d := table{Name: "definitions", Cols: []col{{Head: "Key"}, {Head: "Term"}, {Head: "Definition"}}}
	for _, t := range Glossary(r) {
		d.Rows = append(d.Rows, []cell{c(t.Key), c(t.Name), c(t.Definition)})
	}
	return append(ts, d)
}

// csvText keeps a cell a spreadsheet would take for a formula (one that
// starts with = + - @, a tab or a carriage return, e.g. an account named
// =HYPERLINK(...)) as text, by a leading apostrophe, as OWASP advises.
// The report's own signed figures (-0.25, +2466%, +63.5 pts) are left as
// they are: a cell is one only when it is all number (a name such as
// "-2+3+cmd|..." is not).
func csvText(s string) string {
	if s == "" || !strings.ContainsRune("=+-@\t\r", rune(s[0])) || signedFigure().MatchString(s) {
		return s
	}
	return "'" + s
}

// signedFigure matches the report's signed numbers, percentages and
// percentage points.
var signedFigure = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^[+-][0-9][0-9,]*(\.[0-9]+)?(%| pts)?$`)
})

func writeCSV(w io.Writer, t table) error {
	cw := csv.NewWriter(w)
	head := make([]string, len(t.Cols))
	for i, c := range t.Cols {
		head[i] = c.Head
	}
	if err := cw.Write(head); err != nil {
		return err
	}
	for _, row := range t.Rows {
		rec := make([]string, len(row))
		for i, c := range row {
			rec[i] = csvText(c.Text)
		}
		if err := cw.Write(rec); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

// highlights are the few sentences that open the report: the month in
// words, every number taken from r. They are plain text holding names
// from the database (the cluster, an account, the partitions and GPU
// types of jobs the counterfactual left out), so each format escapes
// them whole, as it does the notes.
func highlights(r *Report) []string {
	s := r.Summary
	h := r.Unit + "-hours"
	var out []string
	if s.Jobs == 0 && (!s.Hours.OK() || s.Hours == 0) {
		return []string{fmt.Sprintf("No job ran or ended on %s in %s.", r.Cluster, r.Title)}
	}
	line := fmt.Sprintf("%s jobs ended this month", groupDigits(fmtInt(s.Jobs)))
	if s.Started < s.Jobs {
		were := "were"
		if s.Jobs-s.Started == 1 {
			were = "was"
		}
		line += fmt.Sprintf(" (%s of them had started; the other %s %s cancelled while pending)", groupDigits(fmtInt(s.Started)), groupDigits(fmtInt(s.Jobs-s.Started)), were)
	}
	line += fmt.Sprintf(". The cluster delivered %s %s, %s of the %s it could have delivered.",
		groupDigits(fmtHours(s.Hours)), h, fmtPct(s.Utilization), groupDigits(fmtHours(s.Available)))
	if p := r.Previous; p != nil && p.Utilization.OK() {
		line += fmt.Sprintf(" Last month it was %s.", fmtPct(p.Utilization))
	}
	out = append(out, line)
	if s.MedianWait.OK() {
		out = append(out, fmt.Sprintf("Half of the jobs started within %s of being submitted; one in twenty waited more than %s.", fmtDur(s.MedianWait), fmtDur(s.P95Wait)))
	}
	if s.Jain.OK() && len(r.Accounts) > 0 {
		top := r.Accounts[0]
		out = append(out, fmt.Sprintf("Fairness between accounts scores %s on Jain's index (1 is perfect). Account %s used the most: %s of the %s, against an entitlement of %s.",
			fmtFloat(s.Jain, 3), top.Account, fmtPct(top.Used), h, fmtPct(top.Entitled)))
	}
	if s.Lost.OK() {
		out = append(out, fmt.Sprintf("%s of the %s went to jobs that were cancelled (%s %s) or failed (%s %s); the Helios study found about 40%% on its clusters.",
			fmtPct(s.Lost), h, fmtHours(s.CancelledHours), h, fmtHours(s.FailedHours), h))
	}
	if e := r.Efficiency; e.Ratio.OK() {
		out = append(out, fmt.Sprintf("Where the epilog measured them, GPUs were busy %s of the time they were held.", fmtPct(e.Ratio)))
	}
	if cf := r.Counterfactual; cf != nil && len(cf.Scenarios) == 3 {
		fs, fw := cf.Scenarios[1], cf.Scenarios[2]
		if fs.MedianWait.OK() && fw.MedianWait.OK() {
			left := ""
			if len(cf.Skipped) > 0 {
				var parts []string
				for _, k := range sortedKeys(cf.Skipped) {
					parts = append(parts, fmt.Sprintf("%d (%s)", cf.Skipped[k], k))
				}
				left = "; the simulator left out " + strings.Join(parts, ", ")
			}
			out = append(out, fmt.Sprintf("Replaying in the simulator the %s jobs submitted and started this month that have ended (jobs submitted last month, started only next month, still running or cancelled while pending are not replayed%s), the median wait is %s under Slurm's plain fair-share and %s under Fairway.",
				groupDigits(fmtInt(cf.Jobs)), left, fmtDur(fs.MedianWait), fmtDur(fw.MedianWait)))
		}
	}
	return out
}

// Section introductions, shared by HTML and Markdown.
const (
	introAccounts = "Each account's entitlement comes from its shares in Slurm's share tree. An account above its entitlement used time others left idle or took it from them; the wait columns tell which."
	introPredict  = "Fairway predicts how long each pending job will run, to start short jobs early without starving long ones. Predictions are compared with the run times the jobs really had; users' own time limits are shown for comparison."
	introEff      = "Measured by Fairway's epilog on every GPU a job held (NVML). GPU time held but not used is lost to everyone else."
	introPower    = "With serve --power, Fairway powers idle nodes down through Slurm ahead of demand and up when jobs need them. Node-hours off count from each power-down Slurm took to the next power-up; the energy is those hours times the idle power of a node (report --power-idle-watts). Lack is the nodes jobs waiting for nodes found no powered node for, times how long."
	introChanges  = "Fairway ranks the pending jobs at every cycle and writes the ranking into Slurm. The counterfactual replays this month's jobs in Fairway's simulator under Slurm's plain fair-share and under Fairway, on a cluster of the same size."
)

// sectionTables says which tables each section shows, in order.
var sections = []struct {
	ID, Title, Intro string
	Figures, Tables  []string
}{
	{"cluster", "Cluster summary", "", []string{"utilization"}, []string{"summary", "states", "daily"}},
	{"accounts", "Accounts and users", introAccounts, []string{"shares", "waits"}, []string{"accounts", "users"}},
	{"predictions", "Prediction quality", introPredict, nil, []string{"predictions"}},
	{"efficiency", "GPU efficiency", introEff, []string{"efficiency"}, []string{"efficiency", "idle_jobs"}},
	{"changes", "What Fairway changed", introChanges, []string{"counterfactual"}, []string{"changes", "counterfactual", "counterfactual_accounts"}},
	{"power", "Power saving", introPower, nil, []string{"power"}},
}

// emptyNote says why a table has no rows.
func emptyNote(name string) string {
	switch name {
	case "predictions":
		return "No prediction was recorded for the jobs that ended this month, and none of them had a time limit."
	case "power":
		return "serve's power saving was off this month (serve --power), or it recorded no action."
	case "efficiency", "idle_jobs":
		return "No epilog record of a whole-GPU job this month: the epilog hooks were not installed, or no GPU job ran."
	}
	return "Nothing to show this month."
}

//go:embed report.html.tmpl
var htmlTemplate string

// htmlTmpl is parsed on first use, not at start-up: every fairway
// command links this package, and parsing costs milliseconds that a
// short command (simulate on a small trace) would pay for nothing.
var htmlTmpl = sync.OnceValue(func() *template.Template {
	return template.Must(template.New("report").Parse(htmlTemplate))
})

// htmlSection is a section as the HTML template sees it.
type htmlSection struct {
	ID, Title, Intro string
	Body             template.HTML
}

// WriteHTML writes r as one self-contained HTML page: styles and plots
// inline, no script, no request to anything outside the file (its content
// security policy forbids them).
func WriteHTML(w io.Writer, r *Report, figs []Figure) error {
	ts := tables(r)
	byName := map[string]Figure{}
	for _, f := range figs {
		byName[f.Name] = f
	}
	var secs []htmlSection
	for _, s := range sections {
		var b strings.Builder
		for _, name := range s.Figures {
			if f, ok := byName[name]; ok {
				b.WriteString(htmlFigure(f))
			}
		}
		for _, name := range s.Tables {
			if t := tableByName(ts, name); t != nil {
				b.WriteString(htmlTable(t))
			}
		}
		secs = append(secs, htmlSection{ID: s.ID, Title: s.Title, Intro: s.Intro, Body: template.HTML(b.String())})
	}
	cards := glanceCards(r)
	var hl, notes []string
	for _, h := range highlights(r) {
		hl = append(hl, noControl(h))
	}
	for _, n := range r.Notes {
		notes = append(notes, noControl(n))
	}
	return htmlTmpl().Execute(w, struct {
		R                 *Report
		Cluster           string
		Highlights, Notes []string
		Cards             []card
		Sections          []htmlSection
		Terms             []Term
	}{r, noControl(r.Cluster), hl, notes, cards, secs, Glossary(r)})
}

// card is one key figure at the top of the HTML page.
type card struct {
	Label, Key, Value, Prev, Change string
}

func glanceCards(r *Report) []card {
	s, p := r.Summary, r.Previous
	// The cards show the summary table's own cells: one formatting per
	// figure, so a card never disagrees with the table below it.
	// why, when set, says why a month's figure is missing.
	mk := func(label, key string, get func(*Summary) Num, f func(Num) string, fraction bool, why func(*Summary) string) card {
		c := card{Label: label, Key: anchor(key), Value: groupDigits(figureText(&s, get, f, why))}
		if p != nil {
			c.Prev = groupDigits(figureText(p, get, f, why))
			c.Change = fmtChange(get(&s), get(p), fraction)
		}
		return c
	}
	return []card{
		mk("Utilization", "utilization", func(s *Summary) Num { return s.Utilization }, func(n Num) string { return or(n, fmtPct(n), "no capacity") }, true, nil),
		mk(r.Unit+"-hours delivered", "hours", func(s *Summary) Num { return s.Hours }, fmtHours, false, nil),
		mk("Fairness (Jain's index)", "jain", func(s *Summary) Num { return s.Jain }, func(n Num) string { return fmtFloat(n, 3) }, false, jainWhy),
		mk("Median wait", "wait", func(s *Summary) Num { return s.MedianWait }, waitOr, false, nil),
		mk("Cancelled or failed", "lost", func(s *Summary) Num { return s.Lost }, func(n Num) string { return or(n, fmtPct(n), whyNoHours) }, true, nil),
	}
}

// htmlFigure inlines an SVG plot; the XML prologue gonum/plot writes is not
// allowed inside HTML, so the document starts at <svg.
func htmlFigure(f Figure) string {
	svg := string(f.SVG)
	if i := strings.Index(svg, "<svg"); i >= 0 {
		svg = svg[i:]
	}
	svg = strings.Replace(svg, "<svg", `<svg role="img" aria-label="`+html.EscapeString(f.Title)+`"`, 1)
	return fmt.Sprintf("<figure id=\"fig-%s\">\n%s\n<figcaption><b>%s.</b> %s</figcaption>\n</figure>\n",
		html.EscapeString(f.Name), svg, html.EscapeString(f.Title), html.EscapeString(f.Caption))
}

func htmlTable(t *table) string {
	var b strings.Builder
	fmt.Fprintf(&b, "<h3 id=\"tbl-%s\">%s</h3>\n", t.Name, html.EscapeString(t.Title))
	if len(t.Rows) == 0 {
		fmt.Fprintf(&b, "<p class=\"empty\">%s</p>\n", html.EscapeString(emptyNote(t.Name)))
		return b.String()
	}
	b.WriteString("<div class=\"scroll\"><table>\n<thead><tr>")
	for _, c := range t.Cols {
		cls := ""
		if c.Num {
			cls = ` class="num"`
		}
		fmt.Fprintf(&b, "<th%s>%s</th>", cls, htmlLinked(c.Head, c.Key))
	}
	b.WriteString("</tr></thead>\n<tbody>\n")
	for _, row := range t.Rows {
		b.WriteString("<tr>")
		for i, cl := range row {
			text := cl.Text
			if t.Cols[i].Num {
				fmt.Fprintf(&b, "<td class=\"num\">%s</td>", htmlLinked(groupDigits(text), cl.Key))
				continue
			}
			fmt.Fprintf(&b, "<td>%s</td>", htmlLinked(text, cl.Key))
		}
		b.WriteString("</tr>\n")
	}
	b.WriteString("</tbody></table></div>\n")
	return b.String()
}

// htmlLinked is text with a footnote mark linking to the definition key.
func htmlLinked(text, key string) string {
	if key == "" {
		return html.EscapeString(noControl(text))
	}
	return fmt.Sprintf("%s<sup><a href=\"#%s\" title=\"definition\">?</a></sup>", html.EscapeString(noControl(text)), anchor(key))
}

// WriteMarkdown writes r as Markdown: the same tables and numbers as the
// HTML page, plots referenced as the SVG files Write puts beside it, and
// the definitions as footnotes.
func WriteMarkdown(w io.Writer, r *Report, figs []Figure) error {
	var b strings.Builder
	fmt.Fprintf(&b, "# Fairness report: %s, %s\n\n", mdText(r.Cluster), r.Title)
	fmt.Fprintf(&b, "Figures count up to %s UTC. Capacity: %s %ss", r.AsOf.Format("2006-01-02 15:04"), groupDigits(fmtFloat(Num(r.Capacity.Units), 0)), r.Unit)
	if r.Capacity.Estimated {
		b.WriteString(" (estimated)")
	}
	b.WriteString(".[^capacity]\n\n")
	for _, h := range highlights(r) {
		fmt.Fprintf(&b, "%s\n", mdText(h))
	}
	b.WriteString("\n")
	for _, n := range r.Notes {
		fmt.Fprintf(&b, "> **Note.** %s\n\n", mdText(n))
	}
	ts := tables(r)
	byName := map[string]Figure{}
	for _, f := range figs {
		byName[f.Name] = f
	}
	used := map[string]bool{"capacity": true}
	for _, s := range sections {
		fmt.Fprintf(&b, "## %s\n\n", s.Title)
		if s.Intro != "" {
			fmt.Fprintf(&b, "%s\n\n", s.Intro)
		}
		for _, name := range s.Figures {
			if f, ok := byName[name]; ok {
				fmt.Fprintf(&b, "![%s](%s.svg)\n\n*%s.* %s\n\n", f.Title, f.Name, f.Title, f.Caption)
			}
		}
		for _, name := range s.Tables {
			t := tableByName(ts, name)
			if t == nil {
				continue
			}
			fmt.Fprintf(&b, "### %s\n\n", t.Title)
			if len(t.Rows) == 0 {
				fmt.Fprintf(&b, "%s\n\n", emptyNote(t.Name))
				continue
			}
			mdTable(&b, t, used)
		}
	}
	b.WriteString("## Definitions\n\n")
	for _, t := range Glossary(r) {
		if used[t.Key] {
			fmt.Fprintf(&b, "[^%s]: **%s.** %s\n", t.Key, t.Name, t.Definition)
		}
	}
	b.WriteString("\nOther terms used above:\n\n")
	for _, t := range Glossary(r) {
		if !used[t.Key] {
			fmt.Fprintf(&b, "- **%s.** %s\n", t.Name, t.Definition)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// mdEscape keeps text as text in Markdown: table cells, and the
// sentences and notes that name a cluster, account, partition or GPU type.
// These names come from the accounting database, and on a site that does
// not enforce associations a user picks the account a job names: raw HTML
// (which many Markdown renderers pass through), a link, or a '|' or
// newline ending the table row must not come through as anything but the
// characters.
var mdEscape = strings.NewReplacer("|", `\|`, "<", "&lt;", ">", "&gt;", "&", "&amp;", "[", `\[`, "]", `\]`, "\\", `\\`, "`", "\\`")

// mdText is s for a Markdown table cell or sentence: escaped (mdEscape),
// with control characters (a newline among them) shown as U+FFFD.
func mdText(s string) string {
	return mdEscape.Replace(noControl(s))
}

// noControl replaces s's control characters with U+FFFD: they have no
// place in a report, and XML (the SVG figures) does not allow most of them.
func noControl(s string) string {
	return strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return unicode.ReplacementChar
		}
		return r
	}, s)
}

func mdTable(b *strings.Builder, t *table, used map[string]bool) {
	mark := func(text, key string) string {
		text = mdText(text)
		if key == "" {
			return text
		}
		used[key] = true
		return text + "[^" + key + "]"
	}
	b.WriteString("|")
	for _, c := range t.Cols {
		fmt.Fprintf(b, " %s |", mark(c.Head, c.Key))
	}
	b.WriteString("\n|")
	for _, c := range t.Cols {
		if c.Num {
			b.WriteString(" ---: |")
		} else {
			b.WriteString(" --- |")
		}
	}
	b.WriteString("\n")
	for _, row := range t.Rows {
		b.WriteString("|")
		for i, cl := range row {
			text := cl.Text
			if t.Cols[i].Num {
				text = groupDigits(text)
			}
			fmt.Fprintf(b, " %s |", mark(text, cl.Key))
		}
		b.WriteString("\n")
	}
	b.WriteString("\n")
}
