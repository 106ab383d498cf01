package serve

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/fairway-hpc/fairway/policy/rewrite"
)

// FuzzRewriteTable feeds job_submit.lua's table reader arbitrary tables
// and submits, through the real script under lua5.1, a job that a table
// can turn into shards. Whatever the table says, the job is accepted, the
// script raises no error, and a rewrite yields a well-formed shard request
// that one of the table's own shard lines asked for. Seeds: tables written
// by serve's writer.
//
//	go test -run '^$' -fuzz '^FuzzRewriteTable$' -fuzztime 10m -parallel 1 ./internal/serve
func FuzzRewriteTable(f *testing.F) {
	now := time.Now()
	rules := []rewrite.ShareRule{
		{User: "alice", Name: "train", Shards: 2, Reason: "p95 memory 9 GiB of 80, utilisation 31%"},
		{User: "alice", Name: "my sweep 3", Shards: 1, Reason: "names may hold spaces"},
	}
	f.Add(string(rewrite.RenderTable(now, 24*365*time.Hour, []string{"gpu"}, rules)))
	f.Add(string(rewrite.RenderTable(now, 15*time.Minute, []string{"gpu", "debug"}, rules[:1])))
	f.Add(string(rewrite.RenderTable(now.Add(-time.Hour), 15*time.Minute, []string{"gpu"}, rules)))
	f.Add("fairway-rewrite\t1\ngenerated\t" + fmt.Sprint(now.Unix()) + "\nmax_age\t1e9\npartition\tgpu\nshard\talice\t2\ttrain\n")
	wellFormed := regexp.MustCompile(`^gres:shard:([1-9][0-9]*)$`)
	f.Fuzz(func(t *testing.T, table string) {
		path := filepath.Join(t.TempDir(), "fairway-rewrite.table")
		if err := os.WriteFile(path, []byte(table), 0o644); err != nil {
			t.Fatal(err)
		}
		got, errLog := runJobSubmit(t, path, []luaCase{{user: "alice", jobName: "train", partition: "gpu", tresPerNode: "gres:gpu:1"}})
		if errLog != "" {
			t.Fatalf("job_submit.lua raised an error: %s", errLog)
		}
		if len(got) != 1 {
			t.Fatalf("lua printed %q", got)
		}
		rc, node, _ := strings.Cut(got[0], "|")
		node, _, _ = strings.Cut(node, "|")
		if rc != "0" {
			t.Fatalf("job rejected: rc %s", rc)
		}
		if node == "gres:gpu:1" {
			return // left as submitted
		}
		m := wellFormed.FindStringSubmatch(node)
		if m == nil {
			t.Fatalf("job rewritten to %q: not a shard request Slurm reads", node)
		}
		if !strings.Contains(table, "alice\t") || !strings.Contains(table, "\ttrain") {
			t.Fatalf("job rewritten to %q by a table without its user and name", node)
		}
	})
}

// TestJobSubmitLua_TableNumbers: the table's numbers are plain digits.
// tonumber once let "1e20" and "inf" through, and the job went to Slurm
// as --gres=shard:1e+20.
func TestJobSubmitLua_TableNumbers(t *testing.T) {
	for _, tc := range []struct{ shards, generated, want string }{
		{"2", "", "gres:shard:2"},
		{"1e20", "", "gres:gpu:1"},
		{"inf", "", "gres:gpu:1"},
		{"0x10", "", "gres:gpu:1"},
		{"2.0", "", "gres:gpu:1"},
		{"2", "0x10", "gres:gpu:1"}, // generated in hex: not a table serve wrote
	} {
		gen := fmt.Sprint(time.Now().Unix())
		if tc.generated != "" {
			gen = tc.generated
		}
		path := filepath.Join(t.TempDir(), "fairway-rewrite.table")
		table := "fairway-rewrite\t1\ngenerated\t" + gen + "\nmax_age\t900\npartition\tgpu\nshard\talice\t" + tc.shards + "\ttrain\n"
		if err := os.WriteFile(path, []byte(table), 0o644); err != nil {
			t.Fatal(err)
		}
		got, errLog := runJobSubmit(t, path, []luaCase{{user: "alice", jobName: "train", partition: "gpu", tresPerNode: "gres:gpu:1"}})
		if want := "0|" + tc.want + "|nil"; len(got) != 1 || got[0] != want || errLog != "" {
			t.Errorf("shards %q generated %q: got %q (log %q), want %q", tc.shards, gen, got, errLog, want)
		}
	}
}
