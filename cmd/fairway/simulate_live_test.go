package main

import (
	"context"
	"encoding/base64"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fairway-hpc/fairway/internal/shareddata"
	"github.com/fairway-hpc/fairway/slurmctl"
)

// layoutServer answers GET /slurm/<version>/nodes and /partitions from the
// real slurmrestd captures of one Slurm release (../shared/data/slurmrestd)
// and counts the requests it is sent.
func layoutServer(t *testing.T, release, version string) (*httptest.Server, *int) {
	t.Helper()
	dir := filepath.Join(shareddata.Dir(t, "data", "slurmrestd", release), version)
	read := func(name string) (int, []byte) { return readCapture(t, dir, name) }
	files := map[string]string{"/slurm/" + version + "/nodes": "nodes.json", "/slurm/" + version + "/partitions": "partitions.json"}
	var n int
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n++
		name, ok := files[r.URL.Path]
		if r.Method != http.MethodGet || !ok {
			http.NotFound(w, r)
			return
		}
		st, body := read(name)
		w.WriteHeader(st)
		_, _ = w.Write(body)
	}))
	t.Cleanup(srv.Close)
	return srv, &n
}

// unsignedJWT is a token of JWT form valid for an hour: the captures'
// server checks none.
func unsignedJWT() string {
	enc := base64.RawURLEncoding.EncodeToString
	return enc([]byte(`{"alg":"HS256"}`)) + "." + enc([]byte(`{"exp":`+strconv.FormatInt(time.Now().Add(time.Hour).Unix(), 10)+`}`)) + ".sig"
}

// TestReadLiveLayout_Captures: the layout read from every captured release
// and REST version (Slurm 24.11.7: v0.0.40-42, 26.05.3: v0.0.42-45): the
// captured cluster's partition gpu of two nodes of 4 H100s.
func TestReadLiveLayout_Captures(t *testing.T) {
	for _, c := range []struct{ release, version string }{
		{"slurm-24.11.7", slurmctl.V0040}, {"slurm-24.11.7", slurmctl.V0041}, {"slurm-24.11.7", slurmctl.V0042},
		{"slurm-26.05.3", slurmctl.V0042}, {"slurm-26.05.3", slurmctl.V0043}, {"slurm-26.05.3", slurmctl.V0044}, {"slurm-26.05.3", slurmctl.V0045},
	} {
		t.Run(c.release+"/"+c.version, func(t *testing.T) {
			srv, calls := layoutServer(t, c.release, c.version)
			l, err := readLiveLayout(context.Background(), slurmctl.ConnectConfig{URL: srv.URL, User: "root", TokenEnv: unsignedJWT(),
				APIVersion: c.version}, slog.New(slog.DiscardHandler))
			if err != nil {
				t.Fatal(err)
			}
			if got, want := l.String(), "gpu:nodes=2,per-node=4,type=h100"; got != want {
				t.Errorf("layout %s, want %s", got, want)
			}
			if *calls == 0 {
				t.Errorf("no request reached slurmrestd")
			}
		})
	}
}

// TestSimulate_PartitionsFromSlurmrestd: `simulate --from-db --partitions
// slurmrestd` replays a (fake) history on the layout slurmrestd answers
// (the captured 26.05.3 cluster: gpu, 2 × 4 H100s): gpu's H100 jobs run;
// the V100 ones, the A100 one and debug's are left out, each with its
// reason. Without a URL or a token, the error names the flag.
func TestSimulate_PartitionsFromSlurmrestd(t *testing.T) {
	fakeHistory(t, dbJobs())
	srv, _ := layoutServer(t, "slurm-26.05.3", slurmctl.V0045)
	tok := filepath.Join(t.TempDir(), "jwt")
	if err := os.WriteFile(tok, []byte(unsignedJWT()), 0o600); err != nil {
		t.Fatal(err)
	}
	args := []string{"simulate", "--from-db", "--database-url", "postgres://fake", "--cluster", "alps", "--month", "2026-10",
		"--policies", "fifo", "--parallel", "1", "--progress", "never", "--partitions", "slurmrestd"}
	out, err := runApp(t, append(args, "--slurm-url", srv.URL, "--slurm-token-file", tok, "--slurm-api", slurmctl.V0045)...)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	h100 := 0
	for _, j := range dbJobs() {
		if j.Partition == "gpu" && j.GPUType == "h100" {
			h100++
		}
	}
	for _, want := range []string{
		"(accounting database): " + strconv.Itoa(h100) + " jobs on 2 nodes of gpus in partitions gpu:nodes=2,per-node=4,type=h100,",
		`no v100 node in partition "gpu"`, `no a100 node in partition "gpu"`, `partition "debug" not in the cluster`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	for _, c := range []struct {
		extra []string
		want  string
	}{
		{[]string{"--slurm-url", ""}, "--partitions slurmrestd: --slurm-url (FAIRWAY_SLURM_URL) is required"},
		{[]string{"--slurm-url", srv.URL, "--slurm-token-file", ""}, "--partitions slurmrestd: no token"},
	} {
		t.Setenv("SLURM_JWT", "")
		t.Setenv("FAIRWAY_SLURM_TOKEN_FILE", "")
		out, err := runApp(t, append(args, c.extra...)...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: err %v, want %q\n%s", c.extra, err, c.want, out)
		}
	}
}

// TestLiveLayout: nodes and partitions as slurmrestd lists them become the
// layout: the default partition first, nodes in every partition they list,
// GPU counts and types (or CPUs, on a cluster without GPUs); nodes of
// neither and empty partitions left out; a cluster with nothing to run on
// an error.
func TestLiveLayout(t *testing.T) {
	node := func(name string, gpus int, typ string, cpus int, parts ...string) slurmctl.Node {
		return slurmctl.Node{Name: name, GPUs: gpus, GPUType: typ, CPUs: cpus, Partitions: parts, State: []string{"IDLE"}}
	}
	part := func(name string, def bool) slurmctl.Partition { return slurmctl.Partition{Name: name, Default: def} }
	for _, c := range []struct {
		name    string
		nodes   []slurmctl.Node
		parts   []slurmctl.Partition
		want    string
		wantErr string
	}{
		{"the lab: two partitions over the same nodes", []slurmctl.Node{node("gpu1", 4, "h100", 8, "gpu", "gpuhi"), node("gpu2", 4, "h100", 8, "gpu", "gpuhi")},
			[]slurmctl.Partition{part("gpu", true), part("gpuhi", false)}, "gpu+gpuhi:nodes=2,per-node=4,type=h100", ""},
		{"the default flagged second comes first, nodes listing it second too",
			[]slurmctl.Node{node("a1", 8, "a100", 64, "debug"), node("h1", 4, "h100", 32, "all", "main"), node("h2", 4, "h100", 32, "all", "main")},
			[]slurmctl.Partition{part("debug", false), part("main", true), part("all", false)},
			"main+all:nodes=2,per-node=4,type=h100;debug:nodes=1,per-node=8,type=a100", ""},
		{"no default flagged (REST v0.0.40-44): the first listed",
			[]slurmctl.Node{node("h1", 4, "h100", 32, "b"), node("h2", 4, "", 32, "a")},
			[]slurmctl.Partition{part("a", false), part("b", false)}, "a:nodes=1,per-node=4;b:nodes=1,per-node=4,type=h100", ""},
		{"GPU cluster: a CPU-only node and its partition are left out",
			[]slurmctl.Node{node("c1", 0, "", 128, "cpu"), node("g1", 8, "h100", 64, "gpu")},
			[]slurmctl.Partition{part("cpu", true), part("gpu", false)}, "gpu:nodes=1,per-node=8,type=h100", ""},
		{"CPU cluster: CPUs", []slurmctl.Node{node("c1", 0, "", 128, "batch"), node("c2", 0, "", 64, "batch")},
			[]slurmctl.Partition{part("batch", true)}, "batch:nodes=1,per-node=128;batch:nodes=1,per-node=64", ""},
		{"a partition a node lists that the partition list lacks",
			[]slurmctl.Node{node("g1", 2, "", 8, "new"), node("g2", 2, "", 8, "gpu")},
			[]slurmctl.Partition{part("gpu", true)}, "gpu:nodes=1,per-node=2;new:nodes=1,per-node=2", ""},
		{"no nodes", nil, []slurmctl.Partition{part("gpu", true)}, "", "slurmrestd lists no nodes"},
		{"GPU nodes in no partition", []slurmctl.Node{node("g1", 4, "h100", 8)}, []slurmctl.Partition{part("gpu", true)}, "",
			"no node with GPUs in a partition, of 1 nodes"},
		{"a partition name the layout cannot spell", []slurmctl.Node{node("g1", 4, "h100", 8, "gpu/x")}, nil, "",
			`partition name "gpu/x"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			l, err := liveLayout(c.nodes, c.parts)
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("err %v, want %q", err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := l.String(); got != c.want {
				t.Errorf("layout %s, want %s", got, c.want)
			}
			if l.Partitions[0] != strings.FieldsFunc(c.want, func(r rune) bool { return r == ':' || r == '+' })[0] {
				t.Errorf("default %s, want the first named in %s", l.Partitions[0], c.want)
			}
		})
	}
}
