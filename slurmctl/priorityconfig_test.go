package slurmctl

import (
	"context"
	"fmt"
	"maps"
	"math"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fairway-hpc/fairway/policy"
	"github.com/google/go-cmp/cmp"
)

// TestParsePriorityConfig reads the priority settings from real `scontrol
// show config` output of 22.05.8 (the lab, with its gpuhi partition's
// weight), 24.11.7 and 26.05.3 (captured for /work/shared/data/slurmrestd).
func TestParsePriorityConfig(t *testing.T) {
	week := 7 * 24 * time.Hour
	base := PriorityConfig{Type: "priority/multifactor", SchedulerType: "sched/backfill",
		CalcPeriod: 5 * time.Minute, BackfillInterval: 5 * time.Second,
		Multifactor: policy.MultifactorParams{WeightAge: 1000, WeightFairshare: 10000, MaxAge: week, DecayHalfLife: week, Dampening: 1, FairTree: true}}
	lab := base
	lab.Multifactor.WeightPartition = 2000
	boot := func(c PriorityConfig, t string) PriorityConfig {
		var err error
		if c.BootTime, err = time.ParseInLocation(time.DateTime, t, time.Local); err != nil {
			panic(err)
		}
		return c
	}
	for _, tc := range []struct {
		file string
		want PriorityConfig
	}{
		{"scontrol-show-config-22.05.8.txt", boot(lab, "2026-11-26 05:58:22")},
		{"scontrol-show-config-24.11.7.txt", boot(base, "2026-11-24 08:10:43")},
		{"scontrol-show-config-26.05.3.txt", boot(base, "2026-11-24 08:04:30")},
	} {
		t.Run(tc.file, func(t *testing.T) {
			out, err := os.ReadFile("testdata/config/" + tc.file)
			if err != nil {
				t.Fatal(err)
			}
			got, err := ParsePriorityConfig(out)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("ParsePriorityConfig (-want +got):\n%s", diff)
			}
		})
	}
}

// TestParsePriorityConfig_Settings: each setting the policy models, in
// the spellings scontrol prints, and bad values named.
func TestParsePriorityConfig_Settings(t *testing.T) {
	const head = "Configuration data as of 2026-11-26T05:59:09\nPriorityType            = priority/multifactor\n"
	tests := []struct {
		name, text string
		check      func(PriorityConfig) bool
		wantErr    string
	}{
		{"favor small, flags", "PriorityFavorSmall      = Yes\nPriorityFlags           = SMALL_RELATIVE_TO_TIME,NO_FAIR_TREE,NO_NORMAL_PART\n",
			func(c PriorityConfig) bool {
				return c.Multifactor.FavorSmall && c.Multifactor.SizeRelative && c.Multifactor.NoNormalPartition && !c.Multifactor.FairTree && len(c.Flags) == 3 &&
					c.Unmodelled == nil
			}, ""},
		{"durations", "PriorityMaxAge          = 1-12:00:00\nPriorityDecayHalfLife   = 00:30:00\nPriorityCalcPeriod      = 1\n",
			func(c PriorityConfig) bool {
				return c.Multifactor.MaxAge == 36*time.Hour && c.Multifactor.DecayHalfLife == 30*time.Minute && c.CalcPeriod == time.Minute
			}, ""},
		{"no decay", "PriorityDecayHalfLife   = 00:00:00\n", func(c PriorityConfig) bool { return c.Multifactor.DecayHalfLife < 0 }, ""},
		{"defaults", "", func(c PriorityConfig) bool {
			return c.BackfillInterval == 30*time.Second && c.CalcPeriod == 5*time.Minute && c.Multifactor.FairTree
		}, ""},
		{"dampening", "FairShareDampeningFactor = 4\n", func(c PriorityConfig) bool { return c.Multifactor.Dampening == 4 }, ""},
		{"unmodelled", "PriorityFlags           = MAX_TRES,CALCULATE_RUNNING\nPriorityWeightAssoc     = 100\nPriorityWeightTRES      = CPU=1000,Billing=5,Mem=2000,License/matlab=7,GRES/gpu=3000,Mem=1G\n",
			func(c PriorityConfig) bool {
				return slices.Equal(c.Unmodelled, []string{"PriorityFlags MAX_TRES", "PriorityWeightTRES Billing=5,License/matlab=7,Mem=1G"})
			}, ""},
		{"association weight", "PriorityWeightAssoc     = 100\nPriorityFlags           = NO_NORMAL_ASSOC\n",
			func(c PriorityConfig) bool {
				return c.Multifactor.WeightAssoc == 100 && c.Multifactor.NoNormalAssoc && c.Unmodelled == nil
			}, ""},
		{"bad association weight", "PriorityWeightAssoc     = lots\n", nil, "PriorityWeightAssoc"},
		{"TRES weights", "PriorityWeightTRES      = CPU=1000,Mem=2000,GRES/gpu=3000,GRES/gpu:H100=500,Node=0\nPriorityFlags           = NO_NORMAL_TRES\n",
			func(c PriorityConfig) bool {
				return maps.Equal(c.Multifactor.WeightTRES, map[string]float64{"cpu": 1000, "mem": 2000, "gres/gpu": 3000, "gres/gpu:h100": 500}) &&
					c.Multifactor.NoNormalTRES && c.Unmodelled == nil
			}, ""},
		{"TRES weights unset or zero", "PriorityWeightTRES      = (null)\nPriorityWeightAssoc     = 0\n", func(c PriorityConfig) bool { return c.Unmodelled == nil && c.Multifactor.WeightTRES == nil }, ""},
		{"TRES weights zero", "PriorityWeightTRES      = CPU=0,GRES/gpu=0\n", func(c PriorityConfig) bool { return c.Unmodelled == nil && c.Multifactor.WeightTRES == nil }, ""},
		{"bad TRES weight", "PriorityWeightTRES      = CPU\n", nil, "PriorityWeightTRES"},
		{"bad weight", "PriorityWeightAge       = lots\n", nil, "PriorityWeightAge"},
		{"bad max age", "PriorityMaxAge          = soon\n", nil, "PriorityMaxAge"},
		{"bad favor small", "PriorityFavorSmall      = maybe\n", nil, "PriorityFavorSmall"},
		{"zero dampening", "FairShareDampeningFactor = 0\n", nil, "FairShareDampeningFactor"},
		// slurmctld logs a bf_interval it cannot use and backfills every
		// 30 s; -1 turns the loop off, which the replay does not (it keeps 30 s).
		{"bf_interval not a number", "SchedulerParameters     = bf_interval=x\n", func(c PriorityConfig) bool { return c.BackfillInterval == 30*time.Second }, ""},
		{"bf_interval with a unit", "SchedulerParameters     = bf_interval=60s,bf_window=60\n", func(c PriorityConfig) bool { return c.BackfillInterval == time.Minute }, ""},
		{"bf_interval off", "SchedulerParameters     = bf_interval=-1\n", func(c PriorityConfig) bool {
			return c.BackfillInterval == 30*time.Second && len(c.Unmodelled) == 1 && strings.Contains(c.Unmodelled[0], "bf_interval=-1")
		}, ""},
		{"bf_interval zero", "SchedulerParameters     = bf_interval=0\n", func(c PriorityConfig) bool { return c.BackfillInterval == 30*time.Second }, ""},
		// sched/backfill finds the first "bf_interval=" in any case.
		{"bf_interval in capitals", "SchedulerParameters     = bf_window=60,BF_Interval=90\n", func(c PriorityConfig) bool { return c.BackfillInterval == 90*time.Second }, ""},
		{"bf_interval twice", "SchedulerParameters     = bf_interval=60,bf_continue,bf_interval=120\n", func(c PriorityConfig) bool { return c.BackfillInterval == time.Minute }, ""},
		{"bad boot time", "BOOT_TIME               = yesterday\n", nil, "BOOT_TIME"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParsePriorityConfig([]byte(head + tc.text))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v: want one naming %s", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !tc.check(got) {
				t.Errorf("got %+v", got)
			}
		})
	}
	if _, err := ParsePriorityConfig([]byte("hello\n")); err == nil || !strings.Contains(err.Error(), "PriorityType") {
		t.Errorf("not a config: err = %v, want one naming PriorityType", err)
	}
}

// TestParsePriorityConfig_OutOfRange holds values once taken as something
// they are not: an empty PriorityType (found by FuzzParsePriorityConfig,
// in testdata/fuzz), durations past time.Duration's range (wrapped to a
// negative max age, or to a wrong positive one), "0-05" read as 5 minutes
// though the day prefix makes it D-HH, and a bf_interval past what
// sched/backfill takes (wrapped to -1 s). Each is an error naming the
// setting now, or read as slurmctld reads it (a bf_interval it cannot use:
// its default 30 s).
func TestParsePriorityConfig_OutOfRange(t *testing.T) {
	const head = "PriorityType            = priority/multifactor\n"
	for _, tc := range []struct{ text, want string }{
		{"PriorityType=\n", "PriorityType is empty"},
		{head + "PriorityMaxAge = 106752-00:00:00\n", "PriorityMaxAge: \"106752-00:00:00\": more than 4294967295 seconds"},
		{head + "PriorityMaxAge = 3000000000000:00:00\n", "PriorityMaxAge: \"3000000000000:00:00\": more than"},
		{head + "PriorityDecayHalfLife = 9223372036854775807\n", "PriorityDecayHalfLife: \"9223372036854775807\": more than"},
	} {
		if _, err := ParsePriorityConfig([]byte(tc.text)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: err = %v, want one containing %q", tc.text, err, tc.want)
		}
	}
	c, err := ParsePriorityConfig([]byte(head + "PriorityCalcPeriod = 0-05\nPriorityMaxAge = 49710-06:28:15\nSchedulerParameters = bf_interval=10800\n"))
	if err != nil {
		t.Fatal(err)
	}
	if c.CalcPeriod != 5*time.Hour || c.Multifactor.MaxAge != math.MaxUint32*time.Second || c.BackfillInterval != 3*time.Hour {
		t.Errorf("calc period %v, max age %v, backfill %v; want 5h (D-HH), 2^32-1 s, 3h", c.CalcPeriod, c.Multifactor.MaxAge, c.BackfillInterval)
	}
	// Past 3 h slurmctld takes its default 30 s. glibc's atoi is (int)
	// strtol: 2^32 - 1, or past any long (saturated to LONG_MAX), is -1,
	// the loop off without a word; 2^32 is 0, invalid.
	for _, tc := range []struct {
		v   string
		off bool
	}{{"10801", false}, {"4294967296", false}, {"-9223372036854775809", false},
		{"4294967295", true}, {"9223372036854775807", true}, {"99999999999999999999999", true}} {
		c, err := ParsePriorityConfig([]byte(head + "SchedulerParameters = bf_interval=" + tc.v + ",bf_window=60\n"))
		off := len(c.Unmodelled) == 1 && c.Unmodelled[0] == "SchedulerParameters bf_interval="+tc.v+" (the backfill loop off; the replay still backfills)"
		if err != nil || c.BackfillInterval != 30*time.Second || off != tc.off {
			t.Errorf("bf_interval=%s: backfill %v, unmodelled %q (%v); want slurmctld's default 30s, the loop off: %v", tc.v, c.BackfillInterval, c.Unmodelled, err, tc.off)
		}
	}
}

func TestParsePartitions(t *testing.T) {
	out, err := os.ReadFile("testdata/config/scontrol-show-partition-o-22.05.8.txt")
	if err != nil {
		t.Fatal(err)
	}
	got, err := ParsePartitions(out)
	if err != nil {
		t.Fatal(err)
	}
	totals := map[string]float64{"cpu": 16, "mem": 32000, "node": 2, "billing": 16, "gres/gpu": 8, "gres/shard": 32}
	// gpu is Default=YES: "" holds its values.
	want := Partitions{Factor: map[string]float64{"gpu": 1, "gpuhi": 2, "": 1}, TRES: map[string]map[string]float64{"gpu": totals, "gpuhi": totals, "": totals}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	for _, bad := range []string{"", "Nodes=a\n", "PartitionName=x PriorityJobFactor=high\n", "PartitionName=x TRES=cpu=many\n",
		"PartitionName=x TRES=mem=lots\n", "PartitionName=x TRES=cpu\n", "PartitionName=x TRES=cpu=-1\n"} {
		if _, err := ParsePartitions([]byte(bad)); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

func TestParseAssocPriorities(t *testing.T) {
	got, err := ParseAssocPriorities([]byte("root|||\nphysics|||10\nphysics|alice||30\r\nphysics|bob||10\nchem|carol|gpuhi|50\nchem|carol||4294967295\n\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := AssocPriorities{ByAssoc: map[policy.Assoc]float64{{Account: "root"}: 0, {Account: "physics"}: 10, {Account: "physics", User: "alice"}: 30,
		{Account: "physics", User: "bob"}: 10, {Account: "chem", User: "carol"}: 0}, Max: 50, PerPartition: 1}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	for bad, want := range map[string]string{"": "no records", "physics|alice|5\n": "fields", "physics|alice||high\n": "user \"alice\"", "|alice||5\n": "empty account"} {
		if _, err := ParseAssocPriorities([]byte(bad)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: err %v, want one naming %q", bad, err, want)
		}
	}
}

func TestParseQOSPriorities(t *testing.T) {
	got, err := ParseQOSPriorities([]byte("normal|0\nhigh|100\r\nscavenger|\n\n"))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]float64{"normal": 0, "high": 100, "scavenger": 0}, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	for bad, want := range map[string]string{"": "no records", "normal|0|x\n": "fields", "high|lots\n": "QOS high", "|5\n": "without a name"} {
		if _, err := ParseQOSPriorities([]byte(bad)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: err %v, want one naming %q", bad, err, want)
		}
	}
}

// TestReadPriorityConfig runs scontrol through the Runner.
func TestReadPriorityConfig(t *testing.T) {
	out, err := os.ReadFile("testdata/config/scontrol-show-config-24.11.7.txt")
	if err != nil {
		t.Fatal(err)
	}
	r := &cfgRunner{out: out}
	c, err := Commands{Runner: r}.ReadPriorityConfig(context.Background(), "/usr/bin/scontrol")
	if err != nil {
		t.Fatal(err)
	}
	if r.cmd != "/usr/bin/scontrol show config" || c.Multifactor.WeightFairshare != 10000 {
		t.Errorf("ran %q, got %+v", r.cmd, c)
	}
}

type cfgRunner struct {
	out []byte
	cmd string
}

func (r *cfgRunner) Run(_ context.Context, _ []byte, name string, args ...string) ([]byte, []byte, error) {
	r.cmd = strings.Join(append([]string{name}, args...), " ")
	return r.out, nil, nil
}

// TestPriorityConfig_MaxMove: the sum of the weights in effect, which a
// site factor's gap must exceed, on the lab's captured configs and on
// TRES weights with and without a bound.
func TestPriorityConfig_MaxMove(t *testing.T) {
	read := func(path string) PriorityConfig {
		t.Helper()
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		c, err := ParsePriorityConfig(b)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	lab := read("testdata/config/scontrol-show-config-22.05.8.txt")
	tres := read("testdata/tres-26.05.3/scontrol-show-config.txt")
	noNormal := read("testdata/tres-26.05.3-no-normal/scontrol-show-config.txt")
	billing, err := ParsePriorityConfig([]byte("PriorityType = priority/multifactor\nPriorityWeightAge = 100\nPriorityWeightAssoc = 7\nPriorityWeightTRES = Billing=50,Mem=1G\n"))
	if err != nil {
		t.Fatal(err)
	}
	type maxMoveCase struct {
		name      string
		c         PriorityConfig
		sum       float64
		weights   []string
		unbounded bool
	}
	tests := []maxMoveCase{
		{"lab 22.05.8", lab, 13000, []string{"PriorityWeightAge=1000", "PriorityWeightFairshare=10000", "PriorityWeightPartition=2000"}, false},
		{"TRES", tres, 13000 + 1000 + 3000 + 700 + 500 + 250 + 100, []string{"PriorityWeightAge=1000", "PriorityWeightFairshare=10000", "PriorityWeightPartition=2000",
			"PriorityWeightTRES cpu=1000", "PriorityWeightTRES gres/gpu=3000", "PriorityWeightTRES gres/gpu:h100=700", "PriorityWeightTRES gres/shard=100",
			"PriorityWeightTRES mem=500", "PriorityWeightTRES node=250"}, false},
		{"NO_NORMAL_TRES", noNormal, 13000 + 100 + 300 + 70 + 0.5 + 25 + 10, nil, true},
		{"billing, a unit", billing, 100 + 7 + 50, []string{"PriorityWeightAge=100", "PriorityWeightAssoc=7", "PriorityWeightTRES billing=50", "PriorityWeightTRES mem=1G"}, true},
	}
	// A factor that is the priority itself (NO_NORMAL_*) has no bound
	// where its weight is set, and changes nothing where it is not.
	for _, f := range []struct{ flag, weight string }{{"NO_NORMAL_PART", "PriorityWeightPartition"}, {"NO_NORMAL_QOS", "PriorityWeightQOS"}, {"NO_NORMAL_ASSOC", "PriorityWeightAssoc"}} {
		for _, w := range []float64{0, 100} {
			c, err := ParsePriorityConfig([]byte(fmt.Sprintf("PriorityType = priority/multifactor\nPriorityWeightAge = 10\nPriorityFlags = %s\n%s = %g\n", f.flag, f.weight, w)))
			if err != nil {
				t.Fatal(err)
			}
			tests = append(tests, maxMoveCase{f.flag + fmt.Sprintf(" weight %g", w), c, 10 + w, nil, w > 0})
		}
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			sum, weights, unbounded := tc.c.MaxMove()
			if math.Abs(sum-tc.sum) > 1e-9 || unbounded != tc.unbounded || (tc.weights != nil && !slices.Equal(weights, tc.weights)) {
				t.Errorf("MaxMove = %v, %q, %v; want %v, %q, %v", sum, weights, unbounded, tc.sum, tc.weights, tc.unbounded)
			}
		})
	}
}
