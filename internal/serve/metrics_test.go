package serve

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// TestGrafanaDashboard_UsesOnlyServedMetrics keeps contrib/grafana in step
// with the metrics serve registers.
func TestGrafanaDashboard_UsesOnlyServedMetrics(t *testing.T) {
	b, err := os.ReadFile("../../contrib/grafana/fairway-dashboard.json")
	if err != nil {
		t.Fatal(err)
	}
	m := NewMetrics()
	// Touch the vectors so they are gathered.
	m.cycleDuration.WithLabelValues("total").Observe(1)
	m.cycles.WithLabelValues("ok").Inc()
	m.accountUse.WithLabelValues("a").Set(1)
	m.accountShare.WithLabelValues("a").Set(1)
	m.accountWait.WithLabelValues("a").Set(1)
	m.accountWaitMax.WithLabelValues("a").Set(1)
	fams, err := m.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	served := map[string]bool{}
	for _, f := range fams {
		served[f.GetName()] = true
	}
	used := regexp.MustCompile(`fairway_[a-z_]+`).FindAllString(string(b), -1)
	if len(used) == 0 {
		t.Fatal("dashboard uses no fairway metric")
	}
	for _, name := range used {
		base := strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(name, "_bucket"), "_sum"), "_count")
		if !served[base] {
			t.Errorf("dashboard uses %s, which serve does not export", name)
		}
	}
}
