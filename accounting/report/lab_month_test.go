package report_test

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"
	"github.com/fairway-hpc/fairway/accounting"
	"github.com/fairway-hpc/fairway/accounting/report"
	"github.com/fairway-hpc/fairway/contrib/lab"
	"github.com/fairway-hpc/fairway/policy/sim"
	"github.com/fairway-hpc/fairway/slurmctl"
)

// labMonth runs a handful of real jobs on the lab (seconds long, so waits
// are under a minute and GPU-hours are thousandths), pulls slurmdbd's
// history into a fresh database as `fairway serve` does, and returns the
// report of the current month: the small month on which the report once
// showed "0" GPU-hours on its card and "0.4" in its text.
func labMonth(t *testing.T) *report.Report {
	t.Helper()
	e := lab.Get(t)
	pool, store := freshDB(t)
	tag := "fwrep-" + strconv.FormatInt(time.Now().UnixNano()%1e9, 36)
	began := time.Now().Add(-2 * time.Second).Truncate(time.Second)
	// every GPU busy for a few seconds, so that a job can be cancelled
	// while it waits (a held job is never eligible, and slurmdbd's window
	// queries do not return it)
	// (it runs until cancelled, so the test waits on states, never on time)
	blocker := e.Submit(t, "alice", "-J", tag+"-all", "-p", e.Partition, "-N", "2", "--gres=gpu:4", "--wrap", "sleep 300")
	e.WaitState(t, blocker, time.Minute, "RUNNING")
	held := e.Submit(t, "carol", "-J", tag+"-cancelled", "-p", e.Partition, "--gres=gpu:1", "--wrap", "true")
	e.WaitState(t, held, time.Minute, "PENDING")
	e.Run(t, "", "scancel", strconv.FormatInt(held, 10)) // cancelled while pending: ended, never started
	e.WaitState(t, held, time.Minute, "CANCELLED")
	e.Run(t, "", "scancel", strconv.FormatInt(blocker, 10)) // cancelled while running: cancelled GPU-hours
	e.WaitState(t, blocker, time.Minute, "CANCELLED")
	ok := e.Submit(t, "alice", "-J", tag+"-gpu", "-p", e.Partition, "--gres=gpu:1", "--wrap", "sleep 2")
	two := e.Submit(t, "bob", "-J", tag+"-two", "-p", e.Partition, "--gres=gpu:2", "--wrap", "sleep 1")
	failed := e.Submit(t, "bob", "-J", tag+"-fail", "-p", e.Partition, "--gres=gpu:1", "--wrap", "sleep 1; exit 3")
	shard := e.Submit(t, "carol", "-J", tag+"-shard", "-p", e.Partition, "--gres=shard:2", "--wrap", "sleep 1")
	for _, id := range []int64{ok, two, shard} {
		e.WaitState(t, id, 3*time.Minute, "COMPLETED")
	}
	e.WaitState(t, failed, 3*time.Minute, "FAILED")

	src := &accounting.SacctHistory{Cluster: e.Cluster, Slurm: slurmctl.Commands{Runner: slurmctl.ExecRunner{SlurmConf: e.SlurmConf}}}
	ctx := context.Background()
	until := time.Now().Add(time.Second).Truncate(time.Second)
	opt := accounting.SyncOptions{Cluster: e.Cluster, Initial: began, Now: until, Overlap: until.Sub(began)}
	want := []int64{blocker, ok, two, failed, shard, held}
	// slurmdbd may answer a window query a moment after the per-job query
	// WaitState polls: sync the same window (idempotent) until all are in.
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(time.Second) {
		if _, _, _, err := store.SyncHistory(ctx, src, opt); err != nil {
			t.Fatal(err)
		}
		var n int
		if err := pool.QueryRow(ctx, `SELECT count(*) FROM job WHERE cluster = $1 AND job_id = ANY($2)`, e.Cluster, want).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n == len(want) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of the %d jobs reached the database", n, len(want))
		}
	}
	src2 := report.NewSource(pool, store)
	cluster, m, err := src2.Resolve(ctx, "", report.Month{})
	if err != nil {
		t.Fatal(err)
	}
	if now := time.Now().UTC(); cluster != e.Cluster || m.Year != now.Year() || m.Month != now.Month() {
		t.Fatalf("resolved %s %s; want the lab's cluster %s and this month", cluster, m, e.Cluster)
	}
	cur, err := src2.Load(ctx, cluster, m, true)
	if err != nil {
		t.Fatal(err)
	}
	prev, err := src2.Load(ctx, cluster, m.Prev(), false)
	if err != nil {
		t.Fatal(err)
	}
	r, err := report.Build(cur, prev, report.Options{Cluster: sim.Cluster{Nodes: 2, PerNode: 4, Unit: sim.GPUs}, ShardsPerGPU: 4,
		Now: time.Now(), Counterfactual: true})
	if err != nil {
		t.Fatal(err)
	}
	if r.Summary.Jobs != len(want) || r.Summary.Started != len(want)-1 {
		t.Fatalf("summary counts %d jobs ended, %d started; want %d and %d", r.Summary.Jobs, r.Summary.Started, len(want), len(want)-1)
	}
	return r
}

// pageFigures is what the browser shows of the figures the report repeats.
type pageFigures struct {
	Cards   map[string]string   `json:"cards"`   // card label → value
	Summary map[string]string   `json:"summary"` // summary table row → this month's cell
	Tables  map[string][]string `json:"tables"`  // table id → every cell
	Hidden  []string            `json:"hidden"`  // boxes whose content is cut off (print)
	WaitsX  string              `json:"waits_x"` // the wait chart's axis label
}

const readFigures = `(() => {
	const out = {cards: {}, summary: {}, tables: {}, hidden: [], waits_x: ''};
	document.querySelectorAll('.card').forEach(c => {
		out.cards[c.querySelector('.label').firstChild.textContent.trim()] = c.querySelector('.value').textContent.trim();
	});
	const sum = document.getElementById('tbl-summary').nextElementSibling.querySelector('table');
	sum.querySelectorAll('tbody tr').forEach(tr => {
		const td = tr.querySelectorAll('td');
		out.summary[td[0].firstChild.textContent.trim()] = td[1].firstChild.textContent.trim();
	});
	document.querySelectorAll('h3[id^="tbl-"]').forEach(h => {
		const box = h.nextElementSibling;
		if (!box || !box.classList.contains('scroll')) return;
		out.tables[h.id] = Array.from(box.querySelectorAll('td')).map(td => td.firstChild ? td.firstChild.textContent.trim() : '');
		if (box.scrollHeight > box.clientHeight + 1) out.hidden.push(h.id);
	});
	const w = document.querySelector('#fig-waits svg');
	if (w) out.waits_x = Array.from(w.querySelectorAll('text')).map(t => t.textContent).find(s => s.startsWith('wait before starting')) || '';
	return out;
})()`

// cardCells pairs each card with the summary table row that holds the same
// figure.
var cardCells = map[string]string{
	"Utilization":             "Utilization",
	"Fairness (Jain's index)": "Jain's index over accounts",
	"Median wait":             "Median wait",
	"Cancelled or failed":     "Share of %s cancelled or failed",
	"%s delivered":            "%s delivered",
}

// checkPage opens the report in the browser, screen and print, and checks
// that every card equals its table cell, that no figure is a bare "–",
// that the cancelled and failed hours add up to the share the card shows,
// and that no table hides rows when printed.
func checkPage(t *testing.T, bctx context.Context, file string, r *report.Report) pageFigures {
	t.Helper()
	var screen, print pageFigures
	open(t, bctx, file, func(ctx context.Context) {
		var err error
		if screen, err = chromedp.Run(ctx, chromedp.Evaluate[pageFigures](readFigures)); err != nil {
			t.Fatal(err)
		}
		printMedia := chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
			_, err := cdp.Call(ctx, tg, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{Media: "print"})
			return err
		})
		if err := chromedp.Do(ctx, printMedia); err != nil {
			t.Fatal(err)
		}
		if print, err = chromedp.Run(ctx, chromedp.Evaluate[pageFigures](readFigures)); err != nil {
			t.Fatal(err)
		}
	})
	h := r.Unit + "-hours"
	if len(screen.Cards) != len(cardCells) {
		t.Errorf("cards %v: want %d", screen.Cards, len(cardCells))
	}
	for card, row := range cardCells {
		card, row = strings.Replace(card, "%s", r.Unit+"-hours", 1), strings.Replace(row, "%s", capitalize(h), 1)
		if strings.Contains(row, "Share of") {
			row = strings.Replace(row, capitalize(h), h, 1)
		}
		got, ok := screen.Cards[card]
		if !ok {
			t.Errorf("no card %q (cards %v)", card, screen.Cards)
			continue
		}
		if cell := screen.Summary[row]; got != cell {
			t.Errorf("card %q shows %q, the summary table's %q row %q", card, got, row, cell)
		}
	}
	for id, cells := range screen.Tables {
		for _, c := range cells {
			if c == "–" {
				t.Errorf("table %s has a bare \"–\": a missing figure must say why", id)
				break
			}
		}
	}
	// the cancelled and failed hours as shown add up to the share shown
	num := func(s string) float64 {
		v, err := strconv.ParseFloat(strings.TrimSuffix(strings.ReplaceAll(s, ",", ""), "%"), 64)
		if err != nil {
			t.Fatalf("figure %q is not a number", s)
		}
		return v
	}
	total := num(screen.Summary[capitalize(h)+" delivered"])
	if total <= 0 {
		t.Errorf("%s delivered shown as %q: jobs ran", h, screen.Summary[capitalize(h)+" delivered"])
	}
	lost := num(screen.Summary["Cancelled "+h]) + num(screen.Summary["Failed "+h])
	share := num(screen.Summary["Share of "+h+" cancelled or failed"])
	if got := 100 * lost / total; math.Abs(got-share) > 0.051*max(1, share) {
		t.Errorf("cancelled + failed %s shown %.4g of %.4g = %.3g%%, but the share shown is %.3g%%", h, lost, total, got, share)
	}
	if len(print.Hidden) > 0 {
		t.Errorf("tables cut off when printed: %v", print.Hidden)
	}
	return screen
}

func capitalize(s string) string { return strings.ToUpper(s[:1]) + s[1:] }

// TestReport_LabMonthInChromium renders the report of a month of real lab
// jobs (sub-minute waits, thousandths of a GPU-hour, a job cancelled while
// pending) and checks it for the contradictions a first reader found:
// cards against table cells, precision, the jobs counted, the wait axis.
func TestReport_LabMonthInChromium(t *testing.T) {
	bctx := browser(t)
	r := labMonth(t)
	figs, err := report.Figures(r)
	if err != nil {
		t.Fatal(err)
	}
	dir := artifactsDir(t)
	file := filepath.Join(dir, "lab-report.html")
	f, err := os.Create(file)
	if err != nil {
		t.Fatal(err)
	}
	if err := report.WriteHTML(f, r, figs); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	page := checkPage(t, bctx, file, r)
	if !strings.Contains(page.WaitsX, "(seconds") {
		t.Errorf("wait chart axis %q: want seconds for waits under a minute", page.WaitsX)
	}
	if got := page.Summary["Jobs started (of those ended)"]; got != strconv.Itoa(r.Summary.Started) {
		t.Errorf("jobs started shown %q, want %d", got, r.Summary.Started)
	}
}
