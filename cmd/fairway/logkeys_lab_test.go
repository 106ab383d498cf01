package main

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/fairway-hpc/fairway/contrib/lab"
	"github.com/google/go-cmp/cmp"
)

// logKeys lists the keys of one slog text line, in order, skipping quoted
// values (which may hold "k=v" of their own, e.g. an error's text).
func logKeys(line string) []string {
	var keys []string
	for i := 0; i < len(line); {
		for i < len(line) && line[i] == ' ' {
			i++
		}
		eq := strings.IndexByte(line[i:], '=')
		if eq < 0 {
			break
		}
		keys = append(keys, line[i:i+eq])
		i += eq + 1
		if i < len(line) && line[i] == '"' {
			for i++; i < len(line) && line[i] != '"'; i++ {
				if line[i] == '\\' {
					i++
				}
			}
			i++
		} else {
			for i < len(line) && line[i] != ' ' {
				i++
			}
		}
	}
	return keys
}

func TestLogKeys(t *testing.T) {
	for _, tc := range []struct {
		line string
		want []string
	}{
		{`time=t level=INFO msg=cycle component=serve cycle=3`, []string{"time", "level", "msg", "component", "cycle"}},
		{`level=WARN msg="a b=c \"d=e\"" err="x y=z" n=1`, []string{"level", "msg", "err", "n"}},
	} {
		if diff := cmp.Diff(tc.want, logKeys(tc.line)); diff != "" {
			t.Errorf("%q (-want +got):\n%s", tc.line, diff)
		}
	}
}

// TestLab_ServeLogKeysOnce: no line serve logs carries a key twice. A log
// shipper reading "component=serve component=history" keeps one of the
// two, so the line is filed under the wrong component. The history pull
// (every cycle here) logs the windows slurmdbd found empty.
func TestLab_ServeLogKeysOnce(t *testing.T) {
	e := lab.Get(t)
	dbURL, _ := throwawayDB(t, e)
	bin := buildFairway(t)
	p := startServe(t, bin, e, dbURL, "--no-ha", "--sync-history-every", "1")
	var log string
	waitFor(t, 60*time.Second, "serve to log a history pull", func() bool {
		b, _ := os.ReadFile(p.log.Name())
		log = string(b)
		return strings.Contains(log, "slurmdbd found no jobs in some windows")
	})
	for _, line := range strings.Split(log, "\n") {
		seen := map[string]bool{}
		for _, k := range logKeys(line) {
			if seen[k] {
				t.Errorf("key %q twice in: %s", k, line)
			}
			seen[k] = true
		}
	}
}
