package power

import (
	"time"
)

// Step is what a replay did at one step.
type Step struct {
	Active, Total, Powered int
	// Lack is the demand that found no powered node: the active nodes
	// above those powered during the previous step. The same definition
	// holds for every rule; each such node waits for a resume.
	Lack int
}

// Metrics summarise a replay; every rule's are computed here, alike.
type Metrics struct {
	Rule  string
	Steps int
	Days  float64
	// MeanOff is the mean of total − powered over the steps; NodeHoursOff
	// its sum times the step length, in hours.
	MeanOff      float64
	NodeHoursOff float64
	// UtilPowered is the mean of active/powered; UtilCluster the mean of
	// active/total (a step with nothing powered and nothing active counts
	// as fully used).
	UtilPowered, UtilCluster float64
	// ChangesPerDay counts steps where the powered count changed, UpsPerDay
	// those where it rose (the artifact's "increase changes"), NodesUpPerDay
	// the nodes powered up.
	ChangesPerDay, UpsPerDay, NodesUpPerDay float64
	// LackNodeMinutes is Σ Lack × the step length in minutes: a node short
	// for a step is short for the whole step. LackEvents counts the steps
	// with any lack.
	LackNodeMinutes float64
	LackEvents      int
}

// Replay runs rule over every step of s and returns each step and the
// summary. It holds the two bounds every rule obeys: never more nodes
// than the cluster has, never fewer than the demand (demand above the
// previous step's powered nodes is lack and resumes the nodes it needs).
func Replay(rule Rule, s *Series) ([]Step, Metrics) {
	rule.Reset(s)
	steps := make([]Step, s.Len())
	prev := rule.Start()
	for i := range steps {
		a, total := s.Active[i], s.Total[i]
		on := max(min(rule.Powered(i, prev), total), a)
		steps[i] = Step{Active: a, Total: total, Powered: on, Lack: max(a-min(prev, total), 0)}
		prev = on
	}
	return steps, Summarise(rule.Name(), steps, s.Step)
}

// Summarise computes the metrics of a replay's steps.
func Summarise(name string, steps []Step, step time.Duration) Metrics {
	m := Metrics{Rule: name, Steps: len(steps)}
	if len(steps) == 0 {
		return m
	}
	m.Days = float64(len(steps)) * step.Hours() / 24
	var off, up, ch, ups, lack int
	var uP, uC float64
	for i, x := range steps {
		off += x.Total - x.Powered
		uP += ratio(x.Active, x.Powered)
		uC += ratio(x.Active, x.Total)
		if i > 0 {
			d := x.Powered - steps[i-1].Powered
			if d != 0 {
				ch++
			}
			if d > 0 {
				ups++
				up += d
			}
		}
		if x.Lack > 0 {
			m.LackEvents++
			lack += x.Lack
		}
	}
	n := float64(len(steps))
	m.MeanOff = float64(off) / n
	m.NodeHoursOff = float64(off) * step.Hours()
	m.UtilPowered, m.UtilCluster = uP/n, uC/n
	m.ChangesPerDay, m.UpsPerDay, m.NodesUpPerDay = float64(ch)/m.Days, float64(ups)/m.Days, float64(up)/m.Days
	m.LackNodeMinutes = float64(lack) * step.Minutes()
	return m
}

func ratio(a, b int) float64 {
	if b == 0 {
		return 1
	}
	return float64(a) / float64(b)
}
