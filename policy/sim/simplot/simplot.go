// Package simplot draws a simulator comparison (sim.Report and its runs) as
// SVG with gonum/plot. It sits apart from package sim so that the simulator,
// and everything that imports it (serve's forecast among them), does not
// pull in the plotting library.
package simplot

import (
	"fmt"
	"io"
	"math"
	"path/filepath"
	"slices"

	"github.com/fairway-hpc/fairway/internal/atomicfile"
	"github.com/fairway-hpc/fairway/policy/sim"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
)

// Points bounds the points of one curve, so that an SVG of a 77,000-job
// trace stays small: a CDF is drawn through this many quantiles.
const Points = 400

// newPlot is a plot with a grid whose X (logX) or else Y axis is logarithmic
// (waits and JCTs span seconds to weeks), its legend top left or bottom
// right.
func newPlot(title, xLabel, yLabel string, logX, legendTopLeft bool) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = xLabel
	p.Y.Label.Text = yLabel
	log := &p.Y
	if logX {
		log = &p.X
	}
	log.Scale = plot.LogScale{}
	log.Tick.Marker = plot.LogTicks{Prec: -1}
	p.Legend.Top, p.Legend.Left = legendTopLeft, legendTopLeft
	p.Add(plotter.NewGrid())
	return p
}

// Write draws into dir the JCT distribution of every policy (jct_cdf.svg)
// and every policy's per-user 95th-percentile waits, sorted
// (user_p95_wait.svg): the flatter and lower that curve, the more evenly
// waiting is spread over users. runs are rep.Policies' runs, in order.
// Each file is replaced whole (atomicfile): a failed write leaves its old
// version.
func Write(dir string, rep *sim.Report, runs []sim.PolicyRun) error {
	// The JCT CDF rises to the right, so its legend goes bottom right;
	// the sorted p95 waits rise too, leaving the top left free.
	cdf := newPlot("Job completion time, "+rep.Trace, "JCT (s, log scale)", "fraction of jobs", true, false)
	users := newPlot("Per-user 95th-percentile wait, "+rep.Trace, "users, by their p95 wait (fraction)", "p95 wait (s, log scale)", false, true)

	for i, r := range runs {
		name := rep.Policies[i].Name
		// A policy keeps its colour and dash in both plots.
		addLine := func(p *plot.Plot, pts plotter.XYs) error {
			l, err := plotter.NewLine(pts)
			if err != nil {
				return fmt.Errorf("plot %s: %w", name, err)
			}
			l.Color, l.Dashes, l.Width = plotutil.Color(i), plotutil.Dashes(i/7), vg.Points(1.2)
			p.Add(l)
			p.Legend.Add(name, l)
			return nil
		}
		if err := addLine(cdf, quantileCurve(r.JCT)); err != nil {
			return err
		}

		waits := make([]float64, len(r.Users))
		for k, u := range r.Users {
			waits[k] = u.P95Wait
		}
		slices.Sort(waits)
		up := make(plotter.XYs, len(waits))
		for k, v := range waits {
			up[k] = plotter.XY{X: (float64(k) + 0.5) / float64(len(waits)), Y: math.Max(v, 1)}
		}
		if err := addLine(users, up); err != nil {
			return err
		}
	}
	for _, p := range []struct {
		plot *plot.Plot
		file string
	}{{cdf, "jct_cdf.svg"}, {users, "user_p95_wait.svg"}} {
		wt, err := p.plot.WriterTo(7*vg.Inch, 4.5*vg.Inch, "svg")
		if err != nil {
			return fmt.Errorf("plot %s: %w", p.file, err)
		}
		if err := atomicfile.Write(filepath.Join(dir, p.file), 0o644, func(w io.Writer) error {
			_, err := wt.WriteTo(w)
			return err
		}); err != nil {
			return err
		}
	}
	return nil
}

// quantileCurve is the empirical CDF of sorted (ascending, seconds) through
// at most Points quantiles, with JCTs below 1 s drawn at 1 s for the
// log axis.
func quantileCurve(sorted []float64) plotter.XYs {
	n := len(sorted)
	k := min(n, Points)
	pts := make(plotter.XYs, 0, k)
	for i := range k {
		idx := (i + 1) * n / k
		pts = append(pts, plotter.XY{X: math.Max(sorted[idx-1], 1), Y: float64(idx) / float64(n)})
	}
	return pts
}
