package slurmctl

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fairway-hpc/fairway/policy"
)

// renewable is a token source that counts renewals.
type renewable struct {
	tok         string
	invalidated atomic.Int32
}

func (r *renewable) Token(context.Context) (string, error) { return r.tok, nil }
func (r *renewable) Invalidate()                           { r.invalidated.Add(1) }

// restModes are the REST writer modes with the combinations each runs on.
func restModes() []Mode { return []Mode{ModeRESTSiteFactor, ModeRESTPriority} }

func restRange(m Mode) policy.SlurmRange {
	if m == ModeRESTPriority {
		return policy.PriorityRange()
	}
	return siteRange()
}

// captureWriter reads c's jobs and returns them with a REST writer in mode m
// against srv.
func captureWriter(t *testing.T, c combo, srv *replayServer, m Mode, tok TokenSource) ([]Job, *Writer) {
	t.Helper()
	jobs, _, err := parseJobs(c.reply(t, "jobs.json").body)
	if err != nil {
		t.Fatal(err)
	}
	cl := testClient(t, srv.URL, c.version, func(cfg *Config) {
		if tok != nil {
			cfg.Token = tok
		}
	})
	w, err := NewWriter(WriterConfig{Mode: m, Range: restRange(m)}, cl, nil)
	if err != nil {
		t.Fatal(err)
	}
	return jobs, w
}

func postPath(c combo, target string) string { return "POST /slurm/" + c.version + "/job/" + target }

// writeRoutes are c's read routes without the single-job answers: the
// captures hold what Slurm had before any of these writes, so they cannot
// stand for a read-back of them (TestWriterREST_ReadBack uses them where
// they can). A read-back that fails is logged and judges nothing.
func writeRoutes(t *testing.T, c combo) map[string][]reply {
	routes := c.readRoutes(t)
	for k := range routes {
		if strings.HasPrefix(k, "GET /slurm/"+c.version+"/job/") {
			delete(routes, k)
		}
	}
	return routes
}

// TestWriterREST_BodiesAndArrayTarget: in every combination and REST mode,
// the site factor goes on the wire as 2^31 + N, the priority as a set
// number, and the pending array record 10 (tasks 10_[2-9]) is written as
// job 10.
func TestWriterREST_BodiesAndArrayTarget(t *testing.T) {
	for _, c := range captureCombos(t) {
		for _, m := range restModes() {
			t.Run(c.String()+"/"+m.String(), func(t *testing.T) {
				routes := writeRoutes(t, c)
				ok := c.reply(t, "update.site_factor-14.json")
				for _, id := range []string{"10", "13", "17"} {
					routes[postPath(c, id)] = []reply{ok}
				}
				srv := newReplay(t, routes)
				jobs, w := captureWriter(t, c, srv, m, nil)
				rep, err := w.Write(context.Background(), jobs, map[int64]int64{10: 4200, 13: 4300, 17: 4400})
				if err != nil {
					t.Fatalf("Write: %v", err)
				}
				if len(rep.Applied) != 3 || len(rep.Failed) != 0 {
					t.Fatalf("applied %v, failed %v", rep.Applied, rep.Failed)
				}
				want := map[string]string{}
				for id, v := range map[string]int64{"10": 4200, "13": 4300, "17": 4400} {
					if m == ModeRESTSiteFactor {
						want[id] = `{"site_factor":` + strconv.FormatInt(NiceOffset+v, 10) + `}`
					} else {
						want[id] = `{"priority":{"set":true,"number":` + strconv.FormatInt(v, 10) + `}}`
					}
				}
				for i, u := range srv.urls {
					if !strings.Contains(u.Path, "/job/") || srv.bodies[i] == nil || len(srv.bodies[i]) == 0 {
						continue
					}
					id := u.Path[strings.LastIndexByte(u.Path, '/')+1:]
					if string(srv.bodies[i]) != want[id] {
						t.Errorf("job %s body %s, want %s", id, srv.bodies[i], want[id])
					}
				}
				if srv.count(postPath(c, "10")) != 1 {
					t.Errorf("the array record was not written as job 10: %v", srv.calls)
				}
				if m == ModeRESTSiteFactor && NiceOffset != 2147483648 {
					t.Fatal("NiceOffset is not 2^31")
				}
			})
		}
	}
}

// TestWriterREST_OneRejectionDoesNotStopTheOthers: job 13's update gets a
// captured per-job refusal (an unknown key's warning, 422, 404); jobs 10
// and 17 are still written.
func TestWriterREST_OneRejectionDoesNotStopTheOthers(t *testing.T) {
	for _, c := range captureCombos(t) {
		for _, m := range restModes() {
			for _, refusal := range []string{"err.update-bad-field-14.json", "err.update-bad-type-14.json", "err.update-nonexistent-999999.json"} {
				t.Run(c.String()+"/"+m.String()+"/"+refusal, func(t *testing.T) {
					routes := writeRoutes(t, c)
					ok := c.reply(t, "update.site_factor-14.json")
					routes[postPath(c, "10")] = []reply{ok}
					routes[postPath(c, "13")] = []reply{c.reply(t, refusal)}
					routes[postPath(c, "17")] = []reply{ok}
					srv := newReplay(t, routes)
					jobs, w := captureWriter(t, c, srv, m, nil)
					rep, err := w.Write(context.Background(), jobs, map[int64]int64{10: 4200, 13: 4300, 17: 4400})
					if err == nil {
						t.Fatal("Write: no error for a rejected job")
					}
					if len(rep.Applied) != 2 || len(rep.Failed) != 1 || rep.Failed[0].JobID != 13 || srv.count(postPath(c, "17")) != 1 {
						t.Errorf("%v: applied %v, failed %v, job 17 posted %d times", err, rep.Applied, rep.Failed, srv.count(postPath(c, "17")))
					}
					if w.Stopped() != nil {
						t.Errorf("a rejected job stopped the writer: %v", w.Stopped())
					}
				})
			}
		}
	}
}

// TestWriterREST_RejectedTokenRenewedOnce: a captured 511/1007 answer to an
// update makes a renewable source renew once and the update go again; a
// second refusal stops the batch (the token is the problem for every job).
func TestWriterREST_RejectedTokenRenewedOnce(t *testing.T) {
	for _, c := range captureCombos(t) {
		for _, m := range restModes() {
			t.Run(c.String()+"/"+m.String(), func(t *testing.T) {
				forged, ok := c.reply(t, "err.update-forged-token-14.json"), c.reply(t, "update.site_factor-14.json")
				if forged.status != 511 {
					t.Fatalf("captured forged-token update: HTTP %d, want 511", forged.status)
				}
				routes := writeRoutes(t, c)
				routes[postPath(c, "10")] = []reply{forged, ok}
				routes[postPath(c, "13")] = []reply{forged, forged}
				routes[postPath(c, "17")] = []reply{ok}
				srv := newReplay(t, routes)
				tok := &renewable{tok: testJWT(time.Now().Add(time.Hour))}
				jobs, w := captureWriter(t, c, srv, m, tok)
				rep, err := w.Write(context.Background(), jobs, map[int64]int64{10: 4200, 13: 4300, 17: 4400})
				if !errors.Is(err, ErrTokenRejected) {
					t.Fatalf("Write: %v, want ErrTokenRejected", err)
				}
				if srv.count(postPath(c, "10")) != 2 || len(rep.Applied) != 1 || rep.Applied[0].JobID != 10 {
					t.Errorf("job 10: %d posts, applied %v; want renewed once and applied", srv.count(postPath(c, "10")), rep.Applied)
				}
				if srv.count(postPath(c, "13")) != 2 || srv.count(postPath(c, "17")) != 0 || len(rep.Failed) != 2 || !errors.Is(rep.Failed[1].Err, errNotAttempted) {
					t.Errorf("job 13 posted %d times, job 17 %d; failed %v: want the batch stopped at 13", srv.count(postPath(c, "13")), srv.count(postPath(c, "17")), rep.Failed)
				}
				if n := tok.invalidated.Load(); n != 2 {
					t.Errorf("%d renewals, want one per refused request (2)", n)
				}
			})
		}
	}
}

// TestWriterREST_ReadBack: the read-back net fires on the captured
// corruption and stays quiet for a job correctly ranked last.
//
// Record 10 in the 26.05.3 v0.0.43-45 single-job captures has priority 1:
// v0.0.42's {"site_factor":4200} was stored as 4200 - 2^31. Writing site
// factor 4500 (or priority 450000) and reading that back must stop the
// writer. Job 13 (priority 10000) written with the lowest site factor, 1,
// and job 10 written with 1 (priority 1 is what a job at the floor of every
// factor legitimately has) raise nothing.
func TestWriterREST_ReadBack(t *testing.T) {
	for _, c := range captureCombos(t) {
		if c.name != "26.05.3" || c.version == V0042 {
			continue
		}
		for _, m := range restModes() {
			t.Run(c.String()+"/"+m.String(), func(t *testing.T) {
				routes := c.readRoutes(t)
				ok := c.reply(t, "update.site_factor-14.json")
				routes[postPath(c, "10")] = []reply{ok}
				routes[postPath(c, "13")] = []reply{ok}
				srv := newReplay(t, routes)
				jobs, w := captureWriter(t, c, srv, m, nil)
				// Quiet: correctly ranked last (site factor 1), or priority
				// mode writing what Slurm then holds.
				quiet := map[int64]int64{13: 1}
				if m == ModeRESTSiteFactor {
					quiet[10] = 1
				} else {
					for i := range jobs {
						if jobs[i].ID == 13 {
							jobs[i].Priority = 9000 // read a moment before: 13 is then written back to 10000
						}
					}
					quiet[13] = 10000
				}
				rep, err := w.Write(context.Background(), jobs, quiet)
				if err != nil || len(rep.ReadBack.Mismatches) != 0 || rep.ReadBack.Checked != len(quiet) {
					t.Fatalf("quiet write: %v, read back %+v", err, rep.ReadBack)
				}
				// The captured corruption.
				v := int64(4500)
				if m == ModeRESTPriority {
					v = 450000
				}
				rep, err = w.Write(context.Background(), jobs, map[int64]int64{10: v})
				if !errors.Is(err, ErrReadBack) || len(rep.ReadBack.Mismatches) != 1 || rep.ReadBack.Mismatches[0].Priority != 1 {
					t.Fatalf("corrupted write: %v, read back %+v; want ErrReadBack on job 10 at priority 1", err, rep.ReadBack)
				}
				// Stopped: nothing more is written in this mode.
				before := srv.total()
				rep, err = w.Write(context.Background(), jobs, map[int64]int64{13: 7})
				if !errors.Is(err, ErrReadBack) || srv.total() != before || len(rep.Failed) != 1 {
					t.Errorf("after the alarm: %v, %d more requests, failed %v; want no write", err, srv.total()-before, rep.Failed)
				}
			})
		}
	}
}
