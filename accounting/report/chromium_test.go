package report_test

import (
	"bytes"
	"context"
	"fmt"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/fairway-hpc/fairway/accounting/report"
)

// chromiumPath finds Debian's chromium; the test is skipped without it,
// and fails under CI=true (`make test` installs it).
func chromiumPath(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("chromium")
	if err != nil {
		msg := "chromium not installed (apt-get install chromium; make test installs it)"
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return p
}

// browser starts headless chromium as the brief of the report test says:
// no sandbox (the tests run as root), no GPU, no network of its own
// (QUIC, background networking, component updates, sync), a fresh profile.
func browser(t *testing.T) context.Context {
	t.Helper()
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(chromiumPath(t)),
		chromedp.Flag("headless", true),
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("hide-scrollbars", true),
		chromedp.WindowSize(1280, 900),
		chromedp.UserDataDir(t.TempDir()),
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	actx, acancel := chromedp.NewExecAllocator(ctx, opts...)
	t.Cleanup(acancel)
	bctx, bcancel := chromedp.NewContext(actx)
	t.Cleanup(bcancel)
	if _, err := chromedp.Run(bctx, chromedp.Evaluate[int](`1`)); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	return bctx
}

// pageLog is what a page wrote to the console while it loaded.
type pageLog struct {
	Errors, Others []string
}

// open loads file in a new tab and runs check on it. It then returns
// every console message the page produced, delimited by a probe: after
// check, the test itself writes console.error(probe) and reads messages
// until the probe arrives. So the listener provably works (the probe came
// through it) and every message of the page before the probe is in the
// result: "no errors" means none was written, not that none was seen yet.
func open(t *testing.T, bctx context.Context, file string, check func(ctx context.Context)) pageLog {
	t.Helper()
	ctx, cancel := chromedp.NewContext(bctx)
	defer cancel()
	msgs := chromedp.Console(ctx)
	if err := chromedp.Do(ctx, chromedp.Navigate("file://"+file)); err != nil {
		t.Fatalf("load %s: %v", file, err)
	}
	if check != nil {
		check(ctx)
	}
	probe := fmt.Sprintf("fairway-probe-%d", time.Now().UnixNano())
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[any](`console.error(`+fmt.Sprintf("%q", probe)+`)`)); err != nil {
		t.Fatalf("write the probe: %v", err)
	}
	var pl pageLog
	for m, err := range msgs {
		if err != nil {
			t.Fatalf("read the console of %s: %v", file, err)
		}
		if strings.Contains(m.Text, probe) {
			return pl
		}
		line := fmt.Sprintf("%s %s (%s:%d)", m.Type, m.Text, m.URL, m.Line)
		if m.Type == chromedp.ConsoleError || m.IsException() {
			pl.Errors = append(pl.Errors, line)
		} else {
			pl.Others = append(pl.Others, line)
		}
	}
	t.Fatalf("console of %s ended before the probe arrived", file)
	return pl
}

// svgBox is one inline SVG as the browser laid it out.
type svgBox struct {
	Label  string  `json:"label"`
	Width  float64 `json:"width"`
	Height float64 `json:"height"`
	Paths  int     `json:"paths"`
}

// TestReport_HTMLInChromium renders the HTML report of January 1997 of the
// KTH trace (loaded through the ingest path) in headless chromium, checks
// that the page writes no console error and fetches nothing, that every
// SVG plot is laid out with a non-zero size and has drawing in it, and
// that every footnote link lands on a definition; it saves a screenshot.
// A control page that tries to load an image from the network must give
// a console error, which shows the check can fail.
func TestReport_HTMLInChromium(t *testing.T) {
	bctx := browser(t)
	m := report.Month{Year: 1997, Month: time.January}
	fx := kthFixture(t, m.Prev().Start(), m.End())
	r := fx.build(t, m, kthOptions())
	figs, err := report.Figures(r)
	if err != nil {
		t.Fatal(err)
	}
	if len(figs) != 5 {
		t.Fatalf("%d figures, want all 5 (utilization, shares, waits, efficiency, counterfactual)", len(figs))
	}
	dir := artifactsDir(t)
	var page bytes.Buffer
	if err := report.WriteHTML(&page, r, figs); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "report.html")
	if err := os.WriteFile(file, page.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}

	t.Run("control", func(t *testing.T) {
		ctl := filepath.Join(dir, "control.html")
		doc := `<!DOCTYPE html><html><head><meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; img-src data:"></head>` +
			`<body><img src="http://127.0.0.1:9/forbidden.png" alt=""></body></html>`
		if err := os.WriteFile(ctl, []byte(doc), 0o644); err != nil {
			t.Fatal(err)
		}
		pl := open(t, bctx, ctl, nil)
		if len(pl.Errors) == 0 {
			t.Errorf("a page loading an image from the network gave no console error (others: %q): the check would not see one", pl.Others)
		}
	})

	t.Run("report", func(t *testing.T) {
		var boxes []svgBox
		var resources, broken []string
		var terms int
		var shot []byte
		pl := open(t, bctx, file, func(ctx context.Context) {
			var err error
			boxes, err = chromedp.Run(ctx, chromedp.Evaluate[[]svgBox](`Array.from(document.querySelectorAll('svg')).map(s => {
				const r = s.getBoundingClientRect();
				return {label: s.getAttribute('aria-label') || '', width: r.width, height: r.height, paths: s.querySelectorAll('path').length};
			})`))
			if err != nil {
				t.Fatal(err)
			}
			if resources, err = chromedp.Run(ctx, chromedp.Evaluate[[]string](`performance.getEntriesByType('resource').map(e => e.name)`)); err != nil {
				t.Fatal(err)
			}
			if broken, err = chromedp.Run(ctx, chromedp.Evaluate[[]string](`Array.from(document.querySelectorAll('a[href^="#"]'))
				.map(a => a.getAttribute('href')).filter(h => !document.getElementById(h.slice(1)))`)); err != nil {
				t.Fatal(err)
			}
			if terms, err = chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll('dl.defs dt').length`)); err != nil {
				t.Fatal(err)
			}
			if shot, err = chromedp.Run(ctx, chromedp.FullScreenshot(100)); err != nil {
				t.Fatal(err)
			}
		})
		if len(pl.Errors) > 0 {
			t.Errorf("console errors:\n%s", strings.Join(pl.Errors, "\n"))
		}
		for _, o := range pl.Others {
			t.Logf("console: %s", o)
		}
		if len(boxes) != len(figs) {
			t.Errorf("%d SVG elements in the page, want %d", len(boxes), len(figs))
		}
		for _, b := range boxes {
			if b.Width <= 0 || b.Height <= 0 || b.Paths == 0 {
				t.Errorf("SVG %q laid out %.0f×%.0f px with %d paths, want a non-zero size and drawing", b.Label, b.Width, b.Height, b.Paths)
			}
		}
		if len(resources) > 0 {
			t.Errorf("the page fetched %q, want nothing: it must be self-contained", resources)
		}
		if len(broken) > 0 {
			t.Errorf("links to missing anchors: %q", broken)
		}
		if want := len(report.Glossary(r)); terms != want {
			t.Errorf("%d definitions in the page, want %d", terms, want)
		}
		checkScreenshot(t, shot, filepath.Join(dir, "report.png"))
	})

	t.Run("cards equal table cells", func(t *testing.T) {
		page := checkPage(t, bctx, file, r)
		if !strings.Contains(page.WaitsX, "(days") {
			t.Errorf("wait chart axis %q: want days for KTH's multi-day waits", page.WaitsX)
		}
	})
}

// checkScreenshot saves the PNG and checks it is a page, not a blank.
func checkScreenshot(t *testing.T, shot []byte, path string) {
	t.Helper()
	if err := os.WriteFile(path, shot, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s", path)
	img, err := png.Decode(bytes.NewReader(shot))
	if err != nil {
		t.Fatalf("screenshot is not a PNG: %v", err)
	}
	b := img.Bounds()
	if b.Dx() < 800 || b.Dy() < 2000 {
		t.Errorf("screenshot %d×%d px, want the whole page (at least 800×2000)", b.Dx(), b.Dy())
	}
	colours := map[[3]uint32]bool{}
	for y := b.Min.Y; y < b.Max.Y; y += 7 {
		for x := b.Min.X; x < b.Max.X; x += 7 {
			r, g, bl, _ := img.At(x, y).RGBA()
			colours[[3]uint32{r >> 8, g >> 8, bl >> 8}] = true
		}
	}
	if len(colours) < 20 {
		t.Errorf("screenshot has %d colours: blank or unstyled page", len(colours))
	}
}

// artifactsDir is where the test leaves the page and its screenshot:
// $FAIRWAY_REPORT_ARTIFACTS when set (to look at them), else a temporary
// directory.
func artifactsDir(t *testing.T) string {
	if d := os.Getenv("FAIRWAY_REPORT_ARTIFACTS"); d != "" {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		return d
	}
	return t.TempDir()
}
