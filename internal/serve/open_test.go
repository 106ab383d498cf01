package serve

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fairway-hpc/fairway/policy"
	"github.com/fairway-hpc/fairway/slurmctl"
)

// validServe is a ServeConfig that passes Validate.
func validServe() ServeConfig {
	return ServeConfig{
		Runner: Config{Cluster: "lab", Policy: policy.Default, Predictor: "fairway", BufferLimit: 10, BufferDir: "/tmp/x"},
		Slurm:  slurmctl.ConnectConfig{URL: "http://127.0.0.1:6820", TokenEnv: "jwt"}, WriteModeName: "scontrol-site-factor", Gap: 1,
		DatabaseURL: "postgres://x/y", Interval: time.Second, MaxBackoff: time.Minute, HistoryFrom: HistoryFromREST,
		RewriteRules: "share,cpus",
	}
}

func TestServeConfigValidate(t *testing.T) {
	table := filepath.Join(t.TempDir(), "t")
	for _, tc := range []struct {
		name string
		edit func(*ServeConfig)
		want string // "" for valid
	}{
		{"valid", func(*ServeConfig) {}, ""},
		{"no cluster", func(c *ServeConfig) { c.Runner.Cluster = "" }, "--cluster"},
		{"no url", func(c *ServeConfig) { c.Slurm.URL = "" }, "--slurm-url"},
		{"no token", func(c *ServeConfig) { c.Slurm.TokenEnv = "" }, "no slurmrestd token"},
		{"fast interval", func(c *ServeConfig) { c.Interval = time.Millisecond }, "--interval"},
		{"backoff below interval", func(c *ServeConfig) { c.MaxBackoff = 0 }, "--max-backoff"},
		{"no buffer", func(c *ServeConfig) { c.Runner.BufferLimit = 0 }, "--buffer-limit"},
		{"no buffer dir", func(c *ServeConfig) { c.Runner.BufferDir = "" }, "--buffer-dir"},
		{"negative writes", func(c *ServeConfig) { c.Runner.MaxWrites = -1 }, "--max-writes"},
		{"history from", func(c *ServeConfig) { c.HistoryFrom = "ftp" }, `--history-from "ftp"`},
		{"policy", func(c *ServeConfig) { c.Runner.Policy = "lottery" }, `--policy "lottery"`},
		{"oracle", func(c *ServeConfig) { c.Runner.Policy = "sjf-oracle" }, "only in `fairway simulate`"},
		{"write mode", func(c *ServeConfig) { c.WriteModeName = "telepathy" }, "--write-mode"},
		{"gap", func(c *ServeConfig) { c.Gap = 0 }, "--gap 0"},
		{"database", func(c *ServeConfig) { c.DatabaseURL = "" }, "no database"},
		{"unknown rule", func(c *ServeConfig) { c.RewriteRules = "share,magic" }, `unknown rule "magic"`},
		{"rewrite on", func(c *ServeConfig) { c.Rewrite = validRewrite(table); c.ShardsPerGPU = 4 }, ""},
		{"share without shards", func(c *ServeConfig) { c.Rewrite = validRewrite(table); c.ShardsPerGPU = 1 }, "--shards-per-gpu 1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := validServe()
			tc.edit(&c)
			err := c.Validate()
			if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
				t.Fatalf("Validate() = %v, want %q", err, tc.want)
			}
		})
	}
}

func TestServeConfigValidateFillsDerived(t *testing.T) {
	c := validServe()
	c.WriteModeName, c.Gap = "rest-priority", 7
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	if c.WriteMode != slurmctl.ModeRESTPriority || c.Runner.Field != "priority" || c.Runner.Range.Gap != 7 ||
		c.Runner.Range.Max != policy.PriorityRange().Max || !c.Rewrite.Rules["share"] || !c.Rewrite.Rules["cpus"] {
		t.Errorf("derived fields: mode %v, field %q, range %+v, rules %v", c.WriteMode, c.Runner.Field, c.Runner.Range, c.Rewrite.Rules)
	}
}

func validRewrite(table string) RewriteConfig {
	return RewriteConfig{Partitions: []string{"gpu"}, Table: table, TableMaxAge: time.Minute, HistoryDays: 1, RefreshEvery: 1,
		MinHistory: 1, ShareMaxUtil: 50, TableMaxRulesPerUser: 1, TableMaxBytes: 4096}
}

func TestRewriteConfigValidate(t *testing.T) {
	table := filepath.Join(t.TempDir(), "t")
	for _, tc := range []struct {
		name string
		edit func(*RewriteConfig)
		want string
	}{
		{"off ignores the rest", func(c *RewriteConfig) { c.Partitions, c.ShareMaxUtil = nil, -1 }, ""},
		{"no rules", func(c *RewriteConfig) { c.Rules = nil }, "--rewrite-rules: empty"},
		{"no table", func(c *RewriteConfig) { c.Table = "" }, "--rewrite-table is required"},
		{"small table", func(c *RewriteConfig) { c.TableMaxBytes = 100 }, "--rewrite-table-max-bytes 100"},
		{"young table", func(c *RewriteConfig) { c.TableMaxAge = time.Second }, "--rewrite-table-max-age"},
		{"no history", func(c *RewriteConfig) { c.MinHistory = 0 }, "--rewrite-min-history"},
		{"negative cpus", func(c *RewriteConfig) { c.CPUsPerGPU = -1 }, "--rewrite-cpus-per-gpu"},
		{"util", func(c *RewriteConfig) { c.ShareMaxUtil = 101 }, "--rewrite-share-max-util 101"},
		{"table dir missing", func(c *RewriteConfig) { c.Table = "/nonexistent/dir/t" }, "its directory must exist"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := validRewrite(table)
			c.ShardsPerGPU, c.Rules = 4, map[string]bool{"share": true}
			tc.edit(&c)
			err := c.Validate()
			if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
				t.Fatalf("Validate() = %v, want %q", err, tc.want)
			}
		})
	}
}

func TestNewSinkDryRunIsAPlanner(t *testing.T) {
	c := validServe()
	if _, ok := NewSink(c, Deps{}).(*Live); !ok {
		t.Errorf("serve without --dry-run: sink %T, want *Live", NewSink(c, Deps{}))
	}
	c.DryRun = true
	if _, ok := NewSink(c, Deps{}).(*Planner); !ok {
		t.Errorf("serve --dry-run: sink %T, want *Planner", NewSink(c, Deps{}))
	}
}
