package main

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fairway-hpc/fairway/contrib/lab"
	"github.com/fairway-hpc/fairway/internal/serve"
	"github.com/fairway-hpc/fairway/policy"
	"github.com/fairway-hpc/fairway/slurmctl"
	"github.com/jackc/pgx/v5"
)

// onlyJobs is the lab's slurmrestd seen through a filter: the cycle sees
// (and so writes) only this test's jobs, never another test's on the
// shared lab.
type onlyJobs struct {
	serve.Source
	ids []int64
}

func (o onlyJobs) Read(ctx context.Context) (*slurmctl.Cluster, error) {
	cl, err := o.Source.Read(ctx)
	if err != nil {
		return nil, err
	}
	cl.Jobs = slices.DeleteFunc(cl.Jobs, func(j slurmctl.Job) bool { return !slices.Contains(o.ids, j.ID) })
	return cl, nil
}

// niceAndPriority reads a job's nice and priority from squeue.
func niceAndPriority(t *testing.T, e *lab.Env, id int64) (nice, prio int64) {
	t.Helper()
	f := strings.Fields(e.Run(t, "", "squeue", "-h", "-j", strconv.FormatInt(id, 10), "-o", "%y %Q"))
	if len(f) != 2 {
		t.Fatalf("squeue for job %d: %q", id, f)
	}
	nice, _ = strconv.ParseInt(f[0], 10, 64)
	prio, _ = strconv.ParseInt(f[1], 10, 64)
	return nice, prio
}

// TestLab_ServeModeSwitchHandsBack: a rest-priority serve freezes two
// jobs' priorities (Slurm resets bob's nice 100 to 0); the serve is then
// restarted in a site-factor mode. Its first cycle finds the two frozen
// priorities in the decision log, hands them back to multifactor with
// bob's nice restored, and only then writes site factors, which now move
// the jobs' priorities. Both site-factor modes, where the release serves
// rest-site-factor's REST versions (not 22.05).
func TestLab_ServeModeSwitchHandsBack(t *testing.T) {
	e := lab.Get(t)
	ctx := context.Background()
	for _, target := range []slurmctl.Mode{slurmctl.ModeScontrolSiteFactor, slurmctl.ModeRESTSiteFactor} {
		dbURL, _ := throwawayDB(t, e)
		tag := fmt.Sprintf("modesw%d", time.Now().UnixNano()%1e6)
		ids := []int64{
			e.Submit(t, "bob", "-J", tag, "-p", e.Partition, "--nice=100", "--begin=now+1hour", "-t", "5", "--wrap", "sleep 1"),
			e.Submit(t, "carol", "-J", tag, "-p", e.Partition, "--begin=now+1hour", "-t", "5", "--wrap", "sleep 1"),
		}
		run := func(mode slurmctl.Mode) (*serve.CycleResult, string) {
			t.Helper()
			cfg := serveLabConfig(e, "fifo", false)
			cfg.HA, cfg.DatabaseURL, cfg.Runner.BufferDir = false, dbURL, t.TempDir()
			cfg.WriteMode = mode
			if mode == slurmctl.ModeRESTPriority {
				cfg.Runner.Range, cfg.Runner.Field = policy.PriorityRange(), "priority"
			}
			cfg.Runner.Range.Gap = 1
			s, err := openServe(ctx, cfg, quietLogger())
			if err != nil {
				t.Fatalf("%s: %v", mode, err)
			}
			defer s.Close()
			d := s.Deps
			d.Source = onlyJobs{d.Source, ids}
			r, err := newServeRunner(ctx, cfg, d, serve.Parts{Sink: newSink(cfg, d)}, quietLogger())
			if err != nil {
				t.Fatal(err)
			}
			res, err := r.RunCycle(ctx)
			if err != nil {
				t.Fatalf("%s: %v", mode, err)
			}
			return res, s.Client.Version()
		}

		res, version := run(slurmctl.ModeRESTPriority)
		if target == slurmctl.ModeRESTSiteFactor && version == slurmctl.V0038 {
			t.Logf("rest-site-factor: slurmrestd %s (Slurm 22.05) has no site_factor; that switch is checked on newer releases", version)
			continue
		}
		if len(res.Report.Applied) != 2 {
			t.Fatalf("rest-priority: applied %+v, want both jobs", res.Report.Applied)
		}
		frozen := map[int64]int64{}
		for _, c := range res.Report.Applied {
			frozen[c.JobID] = c.To
		}
		if nice, prio := niceAndPriority(t, e, ids[0]); nice != 0 || prio != frozen[ids[0]] {
			t.Fatalf("bob's job after the admin priority: nice %d priority %d, want Slurm's reset to 0 and %d", nice, prio, frozen[ids[0]])
		}
		conn, err := pgx.Connect(ctx, dbURL)
		if err != nil {
			t.Fatal(err)
		}
		var logged int64
		err = conn.QueryRow(ctx, `SELECT nice FROM decision WHERE job_id = $1 AND field = 'priority'`, ids[0]).Scan(&logged)
		conn.Close(ctx)
		if err != nil || logged != 100 {
			t.Fatalf("decision log nice of bob's job: %d, %v; want 100", logged, err)
		}

		res, _ = run(target)
		if res.HandBack == nil || len(res.HandBack.Applied) != 2 || len(res.HandBack.Failed) != 0 {
			t.Fatalf("%s serve's hand-back: %+v, want both jobs handed back", target, res.HandBack)
		}
		wrote := map[int64]int64{}
		for _, c := range res.Report.Applied {
			wrote[c.JobID] = c.To
		}
		for i, id := range ids {
			nice, prio := niceAndPriority(t, e, id)
			wantNice := int64(0)
			if i == 0 {
				wantNice = 100
			}
			if nice != wantNice || prio == frozen[id] || wrote[id] == 0 || prio < wrote[id]-wantNice {
				t.Errorf("%s: job %d after the switch: nice %d priority %d (frozen at %d, site factor written %d); want nice %d and a priority the site factor moved",
					target, id, nice, prio, frozen[id], wrote[id], wantNice)
			}
		}
		t.Logf("%s on slurmrestd %s: frozen %v handed back, site factors %v", target, version, frozen, wrote)
	}
}
