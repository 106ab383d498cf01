package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fairway-hpc/fairway/internal/serve"
	"github.com/fairway-hpc/fairway/policy"
	"github.com/fairway-hpc/fairway/policy/power"
	"github.com/fairway-hpc/fairway/slurmctl"
)

// validServe is a serveConfig that passes Validate.
func validServe() serveConfig {
	return serveConfig{
		Runner: serve.Config{Cluster: "lab", Policy: policy.Default, Predictor: "fairway", BufferLimit: 10, BufferDir: "/tmp/x"},
		Slurm:  slurmctl.ConnectConfig{URL: "http://127.0.0.1:6820", TokenEnv: "jwt"}, WriteModeName: "scontrol-site-factor", Gap: 1,
		DatabaseURL: "postgres://x/y", Interval: time.Second, MaxBackoff: time.Minute, HistoryFrom: historyFromREST,
		RewriteRules: "share,cpus",
	}
}

// validPower is power-saving settings that pass.
func validPower() serve.PowerConfig {
	return serve.PowerConfig{Buffer: 1, MaxChangesPerHour: 5, Step: time.Minute}
}

func TestServeConfig_Validate(t *testing.T) {
	table := filepath.Join(t.TempDir(), "t")
	for _, tc := range []struct {
		name string
		edit func(*serveConfig)
		want string // "" for valid
	}{
		{"valid", func(*serveConfig) {}, ""},
		{"no cluster", func(c *serveConfig) { c.Runner.Cluster = "" }, "--cluster"},
		{"no url", func(c *serveConfig) { c.Slurm.URL = "" }, "--slurm-url"},
		{"no token", func(c *serveConfig) { c.Slurm.TokenEnv = "" }, "no slurmrestd token"},
		{"fast interval", func(c *serveConfig) { c.Interval = time.Millisecond }, "--interval"},
		{"backoff below interval", func(c *serveConfig) { c.MaxBackoff = 0 }, "--max-backoff"},
		{"no buffer", func(c *serveConfig) { c.Runner.BufferLimit = 0 }, "--buffer-limit"},
		{"no buffer dir", func(c *serveConfig) { c.Runner.BufferDir = "" }, "--buffer-dir"},
		{"negative writes", func(c *serveConfig) { c.Runner.MaxWrites = -1 }, "--max-writes"},
		{"history from", func(c *serveConfig) { c.HistoryFrom = "ftp" }, `--history-from "ftp"`},
		{"policy", func(c *serveConfig) { c.Runner.Policy = "lottery" }, `--policy "lottery"`},
		{"oracle", func(c *serveConfig) { c.Runner.Policy = "sjf-oracle" }, "only in `fairway simulate`"},
		{"write mode", func(c *serveConfig) { c.WriteModeName = "telepathy" }, "--write-mode"},
		{"gap", func(c *serveConfig) { c.Gap = 0 }, "--gap 0"},
		{"database", func(c *serveConfig) { c.DatabaseURL = "" }, "no database"},
		{"unknown rule", func(c *serveConfig) { c.RewriteRules = "share,magic" }, `unknown rule "magic"`},
		{"rewrite on", func(c *serveConfig) { c.Rewrite = validRewrite(table); c.ShardsPerGPU = 4 }, ""},
		{"share without shards", func(c *serveConfig) { c.Rewrite = validRewrite(table); c.ShardsPerGPU = 1 }, "--shards-per-gpu 1"},
		{"power mode", func(c *serveConfig) { c.PowerMode = "yes" }, `--power "yes": want off, dry-run or on`},
		{"power off: its settings unchecked", func(c *serveConfig) { c.PowerMode, c.Power.Buffer = powerOff, -1 }, ""},
		{"power on", func(c *serveConfig) { c.PowerMode, c.Power = powerOn, validPower() }, ""},
		{"power buffer", func(c *serveConfig) { c.PowerMode, c.Power = powerDryRun, validPower(); c.Power.Buffer = -1 }, "--power-buffer -1"},
		{"power changes", func(c *serveConfig) { c.PowerMode, c.Power = powerOn, validPower(); c.Power.MaxChangesPerHour = 0 }, "--power-max-changes-per-hour 0"},
		{"power watts", func(c *serveConfig) { c.PowerMode, c.Power = powerOn, validPower(); c.Power.IdleWatts = -3 }, "--power-idle-watts -3"},
		{"power exclude", func(c *serveConfig) {
			c.PowerMode, c.Power = powerOn, validPower()
			c.Power.Exclude = []string{"gpu[1-2]"}
		}, `--power-exclude: "gpu[1-2]" is not one node name`},
		{"power nowcast", func(c *serveConfig) {
			c.PowerMode, c.Power = powerDryRun, validPower()
			c.Power.Nowcast = power.Nowcast{Window: time.Minute, Gain: -1}
		}, "--power-nowcast gain=-1,window=1m,after=0s,expire=0s"},
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

func TestServeConfig_ValidateFillsDerived(t *testing.T) {
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

func validRewrite(table string) serve.RewriteConfig {
	return serve.RewriteConfig{Partitions: []string{"gpu"}, Table: table, TableMaxAge: time.Minute, HistoryDays: 1, RefreshEvery: 1,
		MinHistory: 1, ShareMaxUtil: 50, TableMaxRulesPerUser: 1, TableMaxBytes: 4096}
}

func TestValidateRewrite(t *testing.T) {
	table := filepath.Join(t.TempDir(), "t")
	for _, tc := range []struct {
		name string
		edit func(*serve.RewriteConfig)
		want string
	}{
		{"off ignores the rest", func(c *serve.RewriteConfig) { c.Partitions, c.ShareMaxUtil = nil, -1 }, ""},
		{"no rules", func(c *serve.RewriteConfig) { c.Rules = nil }, "--rewrite-rules: empty"},
		{"no table", func(c *serve.RewriteConfig) { c.Table = "" }, "--rewrite-table is required"},
		{"small table", func(c *serve.RewriteConfig) { c.TableMaxBytes = 100 }, "--rewrite-table-max-bytes 100"},
		{"table job_submit.lua would ignore", func(c *serve.RewriteConfig) { c.TableMaxBytes = serve.MaxTableBytes + 1 }, "--rewrite-table-max-bytes 4194305"},
		{"table at job_submit.lua's cap", func(c *serve.RewriteConfig) { c.TableMaxBytes = serve.MaxTableBytes }, ""},
		{"table dir others write", func(c *serve.RewriteConfig) { c.Table = filepath.Join(openDir(t, 0o777), "t") }, "writable by users other than its owner"},
		{"table dir others write, sticky", func(c *serve.RewriteConfig) { c.Table = filepath.Join(openDir(t, 0o1777), "t") }, "writable by users other than its owner"},
		{"table dir its group writes", func(c *serve.RewriteConfig) { c.Table = filepath.Join(openDir(t, 0o770), "t") }, "writable by users other than its owner"},
		{"table dir others read", func(c *serve.RewriteConfig) { c.Table = filepath.Join(openDir(t, 0o755), "t") }, ""},
		{"young table", func(c *serve.RewriteConfig) { c.TableMaxAge = time.Second }, "--rewrite-table-max-age"},
		{"no history", func(c *serve.RewriteConfig) { c.MinHistory = 0 }, "--rewrite-min-history"},
		{"negative cpus", func(c *serve.RewriteConfig) { c.CPUsPerGPU = -1 }, "--rewrite-cpus-per-gpu"},
		{"util", func(c *serve.RewriteConfig) { c.ShareMaxUtil = 101 }, "--rewrite-share-max-util 101"},
		{"table dir missing", func(c *serve.RewriteConfig) { c.Table = "/nonexistent/dir/t" }, "its directory must exist"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := validRewrite(table)
			c.ShardsPerGPU, c.Rules = 4, map[string]bool{"share": true}
			tc.edit(&c)
			err := validateRewrite(c)
			if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
				t.Fatalf("Validate() = %v, want %q", err, tc.want)
			}
		})
	}
}

// openDir is a new directory with mode perm.
func openDir(t *testing.T, perm os.FileMode) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.Chmod(dir, perm); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestNewSinkDryRunIsAPlanner(t *testing.T) {
	c := validServe()
	if _, ok := newSink(c, serveDeps{}).(*serve.Live); !ok {
		t.Errorf("serve without --dry-run: sink %T, want *Live", newSink(c, serveDeps{}))
	}
	c.Planned = true
	if _, ok := newSink(c, serveDeps{}).(*serve.Planner); !ok {
		t.Errorf("serve --dry-run: sink %T, want *Planner", newSink(c, serveDeps{}))
	}
}

func TestValidateAPI(t *testing.T) {
	ok := serve.APIConfig{UserHeader: "X-Remote-User", Rate: 1, Burst: 1, MaxInFlight: 1}
	for _, c := range []struct {
		name string
		mod  func(*serve.APIConfig)
		want string // in the error; "" for none
	}{
		{"trusted header", func(*serve.APIConfig) {}, ""},
		{"all users", func(c *serve.APIConfig) { c.UserHeader, c.AllUsers = "", true }, ""},
		{"no audience", func(c *serve.APIConfig) { c.UserHeader = "" }, "--http-all-users"},
		{"both", func(c *serve.APIConfig) { c.AllUsers = true }, "choose one"},
		{"header not a name", func(c *serve.APIConfig) { c.UserHeader = "X User:" }, "not an HTTP header name"},
		{"rate 0", func(c *serve.APIConfig) { c.Rate = 0 }, "--http-rate"},
		{"burst 0", func(c *serve.APIConfig) { c.Burst = 0 }, "--http-burst"},
		{"in flight 0", func(c *serve.APIConfig) { c.MaxInFlight = 0 }, "--http-max-in-flight"},
	} {
		cfg := ok
		c.mod(&cfg)
		err := validateAPI(cfg)
		if (err == nil) != (c.want == "") || err != nil && !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
}

// TestDialSlurm_InsecureHTTPNamesTheFlag: slurmctl refuses plain http to
// another host naming its Config field; cmd names the flag instead, in the
// words it always used.
func TestDialSlurm_InsecureHTTPNamesTheFlag(t *testing.T) {
	_, err := dialSlurm(context.Background(), slurmctl.ConnectConfig{URL: "http://192.0.2.7:6820", User: "slurm", TokenEnv: "x"}, quietLogger())
	want := `slurmrestd at http://192.0.2.7:6820: slurmrestd url "http://192.0.2.7:6820": plain http to another host would send the Slurm token in clear text: ` +
		`use https (a TLS proxy in front of slurmrestd), run Fairway on slurmrestd's host with http://127.0.0.1, or accept the risk on a network you trust with --slurm-allow-insecure-http`
	if err == nil || err.Error() != want {
		t.Errorf("dialSlurm: %v\nwant %s", err, want)
	}
}
