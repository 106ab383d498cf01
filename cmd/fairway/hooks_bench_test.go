package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"testing"
	"time"

	"github.com/fairway-hpc/fairway/contrib/lab"
	"github.com/fairway-hpc/fairway/prolog"
)

// BenchmarkHookProcess measures what slurmd waits for: the wall time of a
// whole `fairway prolog` and `fairway epilog` process (start, config file,
// mock NVML, state and spool files, exit) per job, and of /bin/true started
// the same way as the floor. Each iteration is one job on 2 of the mock's 8
// H100s with the production defaults (XID check on this machine's
// /dev/kmsg, no shard lookup); the epilog spools its records and, when the
// lab is up, stores them in a throwaway database ("epilog-db" metrics).
// Run with -benchtime 1000x for the p50/p99 in docs/BENCHMARKS.md.
func BenchmarkHookProcess(b *testing.B) {
	bin := buildFairway(b, "fairway_nvmlmock") // FAIRWAY_TEST_NVML=dgxh100 selects the mock DGX H100
	dir := b.TempDir()
	settings := fmt.Sprintf("FAIRWAY_SPOOL_DIR=%s\nFAIRWAY_STATE_DIR=%s\nFAIRWAY_LOG_FILE=%s\n",
		filepath.Join(dir, "spool"), filepath.Join(dir, "state"), filepath.Join(dir, "hooks.log"))
	cfg := filepath.Join(dir, "hooks.env")
	if err := os.WriteFile(cfg, []byte(settings), 0o600); err != nil {
		b.Fatal(err)
	}
	var cfgDB string
	if os.Getenv("FAIRWAY_DATABASE_URL") != "" && os.Geteuid() == 0 {
		url, _ := throwawayDB(b, lab.Get(b))
		cfgDB = filepath.Join(dir, "hooks-db.env")
		if err := os.WriteFile(cfgDB, []byte(settings+"FAIRWAY_DATABASE_URL="+url+"\n"), 0o600); err != nil {
			b.Fatal(err)
		}
	}

	jobID := 1_000_000
	run := func(cfg string, args ...string) time.Duration {
		cmd := exec.Command(args[0], args[1:]...)
		if cfg != "" {
			cmd.Args = append(cmd.Args, "--config", cfg)
		}
		cmd.Env = []string{"PATH=/usr/bin:/bin", "FAIRWAY_TEST_NVML=dgxh100", "SLURM_JOB_ID=" + strconv.Itoa(jobID),
			"SLURM_JOB_UID=1001", "SLURM_JOB_USER=alice", "SLURMD_NODENAME=bench", "SLURM_CLUSTER_NAME=bench",
			"SLURM_JOB_GPUS=0,1", "CUDA_VISIBLE_DEVICES=0,1"}
		t0 := time.Now()
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("%v: %v\n%s", args, err, out)
		}
		return time.Since(t0)
	}

	// The result is not trivial: the epilog measured the mock GPUs.
	run(cfg, bin, "prolog")
	run(cfg, bin, "epilog")
	pending, _, err := prolog.Spool{Dir: filepath.Join(dir, "spool")}.Pending()
	if err != nil || len(pending) != 2 || pending[0].GPUUUID == "" || pending[0].UtilAvgPct == nil {
		log, _ := os.ReadFile(filepath.Join(dir, "hooks.log"))
		b.Fatalf("warm-up job: spool %+v %v, want 2 records measured through the mock NVML; log:\n%s", pending, err, log)
	}

	var pro, epi, epiDB, floor []time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		jobID++
		pro = append(pro, run(cfg, bin, "prolog"))
		epi = append(epi, run(cfg, bin, "epilog"))
		floor = append(floor, run("", "/bin/true"))
		if cfgDB != "" {
			jobID++
			run(cfgDB, bin, "prolog")
			epiDB = append(epiDB, run(cfgDB, bin, "epilog"))
		}
	}
	b.StopTimer()
	for _, m := range []struct {
		name string
		d    []time.Duration
	}{{"prolog", pro}, {"epilog", epi}, {"epilog-db", epiDB}, {"true", floor}} {
		if len(m.d) == 0 {
			continue
		}
		p50, p99 := percentiles(m.d)
		b.ReportMetric(ms(p50), m.name+"-p50-ms")
		b.ReportMetric(ms(p99), m.name+"-p99-ms")
	}
}

// percentiles returns the 50th and 99th percentile (nearest rank).
func percentiles(d []time.Duration) (p50, p99 time.Duration) {
	s := append([]time.Duration(nil), d...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	rank := func(p float64) time.Duration {
		i := int(float64(len(s))*p+0.999999) - 1
		return s[max(0, min(i, len(s)-1))]
	}
	return rank(0.50), rank(0.99)
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
