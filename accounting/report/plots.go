package report

import (
	"bytes"
	"fmt"
	"image/color"
	"math"
	"slices"

	"github.com/fairway-hpc/fairway/internal/plural"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"
)

// Figure is one plot of the report as a standalone SVG document.
type Figure struct {
	Name    string // file name stem, e.g. "utilization"
	Title   string
	Caption string // what to read in it, for people and screen readers
	SVG     []byte
}

// palette is Okabe and Ito's colour-blind-safe set ("Color Universal
// Design", 2008), in the order bars and lines take them.
var palette = []color.RGBA{
	{0, 114, 178, 255},   // blue
	{230, 159, 0, 255},   // orange
	{0, 158, 115, 255},   // green
	{204, 121, 167, 255}, // purple
	{86, 180, 233, 255},  // sky blue
	{213, 94, 0, 255},    // vermillion
	{240, 228, 66, 255},  // yellow
	{0, 0, 0, 255},       // black
}

// Plot sizes: wide enough for a month of days or a dozen accounts.
const (
	figWidth  = 7.5 * vg.Inch
	figHeight = 3.6 * vg.Inch
	// maxBars and maxCurves bound how many accounts a plot shows; the
	// tables list all of them.
	maxBars   = 12
	maxCurves = 6
)

// Figures draws the report's plots: daily utilization, entitled vs used
// share per account, the distribution of waits per account, GPU
// efficiency per account, and median waits in the counterfactual. A plot
// with nothing to show is left out.
func Figures(r *Report) ([]Figure, error) {
	var out []Figure
	add := func(f Figure, p *plot.Plot, err error) error {
		if err != nil {
			return fmt.Errorf("plot %s: %w", f.Name, err)
		}
		if p == nil {
			return nil
		}
		if f.SVG, err = svg(p); err != nil {
			return fmt.Errorf("plot %s: %w", f.Name, err)
		}
		out = append(out, f)
		return nil
	}
	hours := r.Unit + "-hours"
	p, err := utilizationPlot(r)
	if err := add(Figure{Name: "utilization", Title: "Daily utilization",
		Caption: fmt.Sprintf("Share of the cluster's %s that jobs used, day by day (UTC). The dashed line is full use.", hours)}, p, err); err != nil {
		return nil, err
	}
	p, err = sharesPlot(r)
	if err := add(Figure{Name: "shares", Title: "Entitled share vs used share",
		Caption: fmt.Sprintf("For each account (the %d largest), the share of the cluster its shares entitle it to beside the share of the month's %s it received.", maxBars, hours)}, p, err); err != nil {
		return nil, err
	}
	p, err = waitsPlot(r)
	if err := add(Figure{Name: "waits", Title: "How long jobs waited",
		Caption: fmt.Sprintf("For each account (the %d with most jobs), the fraction of its jobs that started within a given wait. Further left is better.", maxCurves)}, p, err); err != nil {
		return nil, err
	}
	p, err = efficiencyPlot(r)
	if err := add(Figure{Name: "efficiency", Title: "GPU-hours held vs GPU-hours busy",
		Caption: "For each account, the GPU-hours its jobs held beside the GPU-hours the GPUs were actually busy, from the epilog's measurements."}, p, err); err != nil {
		return nil, err
	}
	p, err = counterfactualPlot(r)
	if err := add(Figure{Name: "counterfactual", Title: "Median wait: what happened vs simulations",
		Caption: fmt.Sprintf("For each account (the %d with most jobs), the median wait of its jobs as it happened, and as the simulator replays the same jobs under Slurm's plain fair-share and under Fairway.", maxBars)}, p, err); err != nil {
		return nil, err
	}
	return out, nil
}

// svg renders p at the report's figure size.
func svg(p *plot.Plot) ([]byte, error) {
	c := vgsvg.New(figWidth, figHeight)
	p.Draw(draw.New(c))
	var b bytes.Buffer
	if _, err := c.WriteTo(&b); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

func newPlot(title, x, y string) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = x
	p.Y.Label.Text = y
	p.Add(plotter.NewGrid())
	return p
}

func utilizationPlot(r *Report) (*plot.Plot, error) {
	if len(r.Daily) == 0 || r.Capacity.Units <= 0 {
		return nil, nil
	}
	p := newPlot(fmt.Sprintf("Daily utilization, %s, %s", noControl(r.Cluster), r.Title), "day of the month", "% of capacity used")
	pts := make(plotter.XYs, 0, len(r.Daily))
	top := 100.0
	for i, d := range r.Daily {
		if !d.Utilization.OK() {
			continue
		}
		v := 100 * float64(d.Utilization)
		pts = append(pts, plotter.XY{X: float64(i + 1), Y: v})
		top = max(top, v)
	}
	if len(pts) == 0 {
		return nil, nil
	}
	l, s, err := plotter.NewLinePoints(pts)
	if err != nil {
		return nil, err
	}
	l.Color, l.Width = palette[0], vg.Points(1.5)
	s.Color, s.Shape = palette[0], draw.CircleGlyph{}
	full, err := plotter.NewLine(plotter.XYs{{X: 1, Y: 100}, {X: float64(len(r.Daily)), Y: 100}})
	if err != nil {
		return nil, err
	}
	full.Color, full.Dashes = color.Gray{Y: 100}, []vg.Length{vg.Points(4), vg.Points(3)}
	p.Add(full, l, s)
	p.Y.Min, p.Y.Max = 0, top*1.05
	p.X.Min, p.X.Max = 0.5, float64(len(r.Daily))+0.5
	p.X.Tick.Marker = dayTicks{n: len(r.Daily)}
	return p, nil
}

// dayTicks labels every day, and every fifth day with its number.
type dayTicks struct{ n int }

func (t dayTicks) Ticks(lo, hi float64) []plot.Tick {
	var out []plot.Tick
	for d := 1; d <= t.n; d++ {
		tk := plot.Tick{Value: float64(d)}
		if d == 1 || d%5 == 0 {
			tk.Label = fmt.Sprint(d)
		}
		out = append(out, tk)
	}
	return out
}

// groupedBars draws len(series) bars per name, side by side.
func groupedBars(p *plot.Plot, names []string, series [][]float64, labels []string) error {
	w := vg.Points(min(40, 360/float64(len(names)))) / vg.Length(len(series))
	for s, vals := range series {
		b, err := plotter.NewBarChart(plotter.Values(vals), w)
		if err != nil {
			return err
		}
		b.Color = palette[s%len(palette)]
		b.LineStyle.Width = 0
		b.Offset = w * (vg.Length(s) - vg.Length(len(series)-1)/2)
		p.Add(b)
		p.Legend.Add(labels[s], b)
	}
	p.NominalX(names...)
	p.Legend.Top = true
	// Headroom above the tallest bar for the legend, one line per series.
	top := 0.0
	for _, vals := range series {
		for _, v := range vals {
			top = max(top, v)
		}
	}
	p.Y.Min = 0
	if top > 0 {
		p.Y.Max = top * (1.1 + 0.1*float64(len(series)))
	}
	if len(names) > 6 {
		p.X.Tick.Label.Rotation = math.Pi / 6
		p.X.Tick.Label.XAlign = text.XRight
		p.X.Tick.Label.YAlign = text.YCenter
	}
	return nil
}

func sharesPlot(r *Report) (*plot.Plot, error) {
	rows := r.Accounts[:min(maxBars, len(r.Accounts))]
	if len(rows) == 0 || !r.Summary.Hours.OK() || r.Summary.Hours <= 0 {
		return nil, nil
	}
	p := newPlot("Entitled vs used share of the cluster, by account", "", "% of the cluster")
	names := make([]string, len(rows))
	ent, used := make([]float64, len(rows)), make([]float64, len(rows))
	for i, a := range rows {
		names[i] = noControl(a.Account)
		ent[i], used[i] = 100*orZero(a.Entitled), 100*orZero(a.Used)
	}
	return p, groupedBars(p, names, [][]float64{ent, used}, []string{"entitled share", "used share"})
}

func waitsPlot(r *Report) (*plot.Plot, error) {
	if len(r.waits) == 0 {
		return nil, nil
	}
	var all []float64
	for _, aw := range r.waits[:min(maxCurves, len(r.waits))] {
		all = append(all, aw.waits...)
	}
	u := waitUnitFor(all)
	p := newPlot("Distribution of waits, by account",
		fmt.Sprintf("wait before starting (%s, log scale; under a second drawn at one second)", u.name), "fraction of jobs started")
	p.X.Scale = plot.LogScale{}
	p.X.Tick.Marker = waitTicks{u}
	p.Y.Min, p.Y.Max = 0, 1
	p.Legend.Top, p.Legend.Left = false, false
	// The axis range is set, not left to gonum: when every wait is the
	// same (all jobs started at once) gonum widens an empty range down to
	// 0, which a log scale cannot draw.
	lo, hi := math.Inf(1), 0.0
	for _, w := range all {
		x := max(w, 1) / u.seconds
		lo, hi = min(lo, x), max(hi, x)
	}
	p.X.Min, p.X.Max = lo, max(hi, 10*lo)
	drawn := 0
	for i, aw := range r.waits[:min(maxCurves, len(r.waits))] {
		pts := cdfPoints(aw.waits, u)
		if len(pts) == 0 {
			continue
		}
		l, err := plotter.NewLine(pts)
		if err != nil {
			return nil, err
		}
		l.Color, l.Width = palette[i%len(palette)], vg.Points(1.5)
		if i >= 4 {
			l.Dashes = []vg.Length{vg.Points(5), vg.Points(2)}
		}
		p.Add(l)
		p.Legend.Add(fmt.Sprintf("%s (%s started)", noControl(aw.account), plural.N(len(aw.waits), "job", "jobs")), l)
		drawn++
	}
	if drawn == 0 {
		return nil, nil
	}
	return p, nil
}

// waitUnit is the unit a wait axis is drawn in, picked from the data so
// that sub-minute waits are not squeezed onto one tick and month-long ones
// are not thousands of hours.
type waitUnit struct {
	seconds float64 // seconds per unit
	name    string  // plural, for the axis label
}

// waitUnitFor picks the unit from the largest wait: seconds up to two
// minutes, minutes up to two hours, hours up to two days, days beyond.
func waitUnitFor(waits []float64) waitUnit {
	top := 0.0
	for _, w := range waits {
		if !math.IsNaN(w) {
			top = max(top, w)
		}
	}
	switch {
	case top < 120:
		return waitUnit{1, "seconds"}
	case top < 2*3600:
		return waitUnit{60, "minutes"}
	case top < 48*3600:
		return waitUnit{3600, "hours"}
	}
	return waitUnit{86400, "days"}
}

// waitTicks labels a log-scale wait axis at readable waits.
type waitTicks struct{ u waitUnit }

func (t waitTicks) Ticks(lo, hi float64) []plot.Tick {
	marks := []struct {
		s     float64
		label string
	}{{1, "1 s"}, {2, "2 s"}, {5, "5 s"}, {10, "10 s"}, {30, "30 s"}, {60, "1 min"}, {2 * 60, "2 min"}, {5 * 60, "5 min"},
		{10 * 60, "10 min"}, {30 * 60, "30 min"}, {3600, "1 h"}, {2 * 3600, "2 h"}, {6 * 3600, "6 h"}, {12 * 3600, "12 h"},
		{86400, "1 d"}, {2 * 86400, "2 d"}, {7 * 86400, "1 wk"}, {30 * 86400, "30 d"}}
	var out []plot.Tick
	for _, m := range marks {
		v := m.s / t.u.seconds
		if v >= lo*0.999 && v <= hi*1.001 {
			out = append(out, plot.Tick{Value: v, Label: m.label})
		}
	}
	for len(out) > 8 { // keep every other mark, always the first and last
		thin := []plot.Tick{out[0]}
		for i := 2; i < len(out)-1; i += 2 {
			thin = append(thin, out[i])
		}
		out = append(thin, out[len(out)-1])
	}
	return out
}

// cdfPoints is the empirical distribution of waits (seconds) through at
// most 200 quantiles, in unit u, waits under a second drawn at one second
// (a log axis has no zero).
func cdfPoints(waits []float64, u waitUnit) plotter.XYs {
	w := slices.Clone(waits)
	slices.Sort(w)
	n := len(w)
	if n == 0 {
		return nil
	}
	k := min(n, 200)
	pts := make(plotter.XYs, 0, k+1)
	pts = append(pts, plotter.XY{X: max(w[0], 1) / u.seconds, Y: 0})
	for i := range k {
		idx := (i + 1) * n / k
		pts = append(pts, plotter.XY{X: max(w[idx-1], 1) / u.seconds, Y: float64(idx) / float64(n)})
	}
	return pts
}

func efficiencyPlot(r *Report) (*plot.Plot, error) {
	rows := r.Efficiency.Accounts[:min(maxBars, len(r.Efficiency.Accounts))]
	if len(rows) == 0 {
		return nil, nil
	}
	p := newPlot("GPU-hours held vs busy, by account", "", "GPU-hours")
	names := make([]string, len(rows))
	held, busy := make([]float64, len(rows)), make([]float64, len(rows))
	for i, a := range rows {
		names[i] = noControl(a.Account)
		held[i], busy[i] = orZero(a.Allocated), orZero(a.Busy)
	}
	return p, groupedBars(p, names, [][]float64{held, busy}, []string{"held (allocated)", "busy (utilization × time)"})
}

func counterfactualPlot(r *Report) (*plot.Plot, error) {
	cf := r.Counterfactual
	if cf == nil || len(cf.Accounts) == 0 {
		return nil, nil
	}
	rows := cf.Accounts[:min(maxBars, len(cf.Accounts))]
	var medians []float64
	for _, a := range rows {
		for _, w := range a.MedianWait {
			medians = append(medians, orZero(w))
		}
	}
	u := waitUnitFor(medians)
	p := newPlot("Median wait by account: what happened vs simulated", "", "median wait ("+u.name+")")
	names := make([]string, len(rows))
	series := make([][]float64, len(cf.Scenarios))
	for s := range series {
		series[s] = make([]float64, len(rows))
	}
	for i, a := range rows {
		names[i] = noControl(a.Account)
		for s := range series {
			series[s][i] = orZero(a.MedianWait[s]) / u.seconds
		}
	}
	labels := make([]string, len(cf.Scenarios))
	for s, sc := range cf.Scenarios {
		labels[s] = sc.Label
	}
	return p, groupedBars(p, names, series, labels)
}

func orZero(n Num) float64 {
	if !n.OK() {
		return 0
	}
	return float64(n)
}
