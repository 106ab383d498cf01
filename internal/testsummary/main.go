// Command testsummary reads `go test -json` on stdin and prints what a
// person needs from a long test run: one line per package, the output of
// every failed test, at the end one line saying how many tests were
// skipped and why, so that a run that quietly skipped the trace-based
// tests says so, and one naming the slowest tests, so that what holds CI
// near its time budget is in every run's output. `make test` pipes into
// it. It exits 1 when a test or a package failed.
package main

import (
	"bufio"
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path"
	"regexp"
	"slices"
	"strings"

	"github.com/fairway-hpc/fairway/internal/shareddata"
)

// event is one line of `go test -json` (cmd/test2json).
type event struct {
	Action  string
	Package string
	Test    string
	Elapsed float64
	Output  string
}

func main() {
	failed, err := summarize(os.Stdin, os.Stdout)
	if err != nil {
		fmt.Fprintln(os.Stderr, "testsummary:", err)
		os.Exit(2)
	}
	if failed {
		os.Exit(1)
	}
}

// location is the "file_test.go:123: " a test's t.Skip line starts with.
var location = regexp.MustCompile(`^\s*\S+\.go:\d+: `)

// why names the reason a skip message gives, so that skips with the same
// cause count together; the data ones say how to provide the data.
func why(msg string) string {
	msg = strings.TrimSpace(location.ReplaceAllString(msg, ""))
	switch {
	case strings.HasPrefix(msg, shareddata.SkipPrefix) && strings.Contains(msg, "slurmrestd"):
		return "slurmrestd captures not found (set FAIRWAY_SHARED to the shared folder, or place shared/ beside the repository; see README, \"Traces and captures\")"
	case strings.HasPrefix(msg, shareddata.SkipPrefix):
		return "traces not found (set FAIRWAY_TRACES to the traces folder, or place shared/ beside the repository; see README, \"Traces and captures\")"
	case strings.HasPrefix(msg, "lab not configured"):
		return "the lab is not running (make lab-up; eval \"$(contrib/lab/lab env)\")"
	case msg == "":
		return "no reason given"
	}
	if len(msg) > 100 {
		msg = msg[:100] + "…"
	}
	return msg
}

func summarize(in io.Reader, out io.Writer) (bool, error) {
	type key struct{ pkg, test string }
	logs := map[key][]string{}
	skips := map[string]int{}
	var slow []timed
	var pkgFailed, anyFailed bool
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		line := sc.Bytes()
		var e event
		if err := json.Unmarshal(line, &e); err != nil || e.Action == "" {
			fmt.Fprintln(out, string(line)) // not test2json: a build error, pass it on
			continue
		}
		k := key{e.Package, e.Test}
		if (e.Action == "pass" || e.Action == "fail") && e.Test != "" && !strings.Contains(e.Test, "/") {
			slow = append(slow, timed{e.Package, e.Test, e.Elapsed})
		}
		switch e.Action {
		case "output":
			logs[k] = append(logs[k], e.Output)
		case "fail":
			anyFailed = true
			if e.Test == "" {
				pkgFailed = true
				// a package that failed outside any test (build error, panic, timeout)
				fmt.Fprint(out, strings.Join(logs[k], ""))
				fmt.Fprintf(out, "FAIL\t%s\t%.1fs\n", e.Package, e.Elapsed)
			} else if !strings.Contains(e.Test, "/") {
				fmt.Fprint(out, strings.Join(logs[k], ""))
				for sub, l := range logs { // its subtests' output
					if sub.pkg == e.Package && strings.HasPrefix(sub.test, e.Test+"/") {
						fmt.Fprint(out, strings.Join(l, ""))
					}
				}
			}
			delete(logs, k)
		case "skip":
			if e.Test != "" {
				msg := ""
				for _, l := range logs[k] {
					if t := strings.TrimSpace(l); t != "" && !strings.HasPrefix(t, "=== ") && !strings.HasPrefix(t, "--- SKIP") {
						msg = l
						break
					}
				}
				skips[why(msg)]++
			}
			delete(logs, k)
		case "pass":
			if e.Test == "" {
				fmt.Fprintf(out, "ok  \t%s\t%.1fs\n", e.Package, e.Elapsed)
				for l := range logs {
					if l.pkg == e.Package {
						delete(logs, l)
					}
				}
			} else {
				delete(logs, k)
			}
		}
	}
	if err := sc.Err(); err != nil {
		return true, err
	}
	n := 0
	reasons := make([]string, 0, len(skips))
	for r, c := range skips {
		n += c
		reasons = append(reasons, r)
	}
	slices.SortFunc(reasons, func(a, b string) int { return skips[b] - skips[a] })
	switch n {
	case 0:
		fmt.Fprintln(out, "no test skipped")
	default:
		parts := make([]string, len(reasons))
		for i, r := range reasons {
			parts[i] = fmt.Sprintf("%d: %s", skips[r], r)
		}
		fmt.Fprintf(out, "%d tests skipped: %s\n", n, strings.Join(parts, "; "))
	}
	printSlowest(out, slow)
	_ = pkgFailed
	return anyFailed, nil
}

// timed is one top-level test's run time.
type timed struct {
	pkg, test string
	secs      float64
}

// slowestShown and slowestFrom bound the slowest-tests line: the few
// tests that decide a run's length, not a list of every test.
const (
	slowestShown = 8
	slowestFrom  = 10.0 // seconds
)

// printSlowest prints the slowest top-level tests that took slowestFrom
// seconds or more, longest first, with their package's last path element.
func printSlowest(out io.Writer, ts []timed) {
	slices.SortStableFunc(ts, func(a, b timed) int { return cmp.Compare(b.secs, a.secs) })
	var parts []string
	for _, t := range ts {
		if len(parts) == slowestShown || t.secs < slowestFrom {
			break
		}
		parts = append(parts, fmt.Sprintf("%s (%s) %.0fs", t.test, path.Base(t.pkg), t.secs))
	}
	if len(parts) > 0 {
		fmt.Fprintf(out, "slowest tests: %s\n", strings.Join(parts, ", "))
	}
}
