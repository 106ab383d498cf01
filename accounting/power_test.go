package accounting

import (
	"math"
	"testing"
	"time"
)

func TestSummarisePower(t *testing.T) {
	from := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	to := from.AddDate(0, 1, 0)
	act := func(h float64, node, action string) PowerAction {
		return PowerAction{At: from.Add(time.Duration(h * float64(time.Hour))), Node: node, Action: action}
	}
	as := []PowerAction{
		act(-10, "n1", "power-down"), // off before the month: counts from its start
		act(5, "n1", "power-up"),     // 5 h in the month
		act(10, "n2", "power-down"),
		act(12, "n2", "power-down"), // a repeat does not restart the clock
		act(13, "n2", "power-up"),   // 3 h
		{At: from.Add(20 * time.Hour), Node: "n3", Action: "power-down", Error: "Invalid node state specified"}, // refused: never off
		{At: from.Add(21 * time.Hour), Action: "lack", LackNodes: 2, Span: 30 * time.Minute},                    // 1 node-hour
		{At: from.Add(22 * time.Hour), Node: "n4", Action: "power-down", Planned: true},                         // another kind
		act(-1, "n5", "power-down"), // off through the whole month
	}
	got := SummarisePower(as, from, to, 500, false)
	wantHours := 5.0 + 3 + to.Sub(from).Hours()
	if math.Abs(got.NodeHoursOff-wantHours) > 1e-9 || got.PowerDowns != 2 || got.PowerUps != 2 || got.Refused != 1 ||
		got.LackCycles != 1 || math.Abs(got.LackNodeHours-1) > 1e-9 || math.Abs(got.EnergyKWh-wantHours*0.5) > 1e-9 {
		t.Errorf("live summary %+v, want %.1f node-hours off, 2 downs, 2 ups, 1 refused, 1 node-hour of lack in 1 cycle", got, wantHours)
	}
	dry := SummarisePower(as, from, to, 0, true)
	if want := to.Sub(from.Add(22 * time.Hour)).Hours(); math.Abs(dry.NodeHoursOff-want) > 1e-9 || dry.PowerDowns != 1 || dry.EnergyKWh != 0 {
		t.Errorf("dry-run summary %+v, want %.1f node-hours off from one planned power-down", dry, want)
	}
}
