package slurmctl

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fairway-hpc/fairway/policy"
	"github.com/google/go-cmp/cmp"
)

// limitsFixture is the lab's real sacctmgr and scontrol output, in dir
// limits/ or nolimits/ (testdata/sacctmgr-22.05.8/README.md).
func limitsFixture(t *testing.T, dir string) (assocs, qos, parts []byte) {
	t.Helper()
	read := func(name string) []byte {
		b, err := os.ReadFile(filepath.Join("testdata", "sacctmgr-22.05.8", dir, name))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	return read("associations.txt"), read("qos.txt"), read("partitions.txt")
}

// scriptRunner answers each command line with its own output; a command
// it has no answer for fails, as a missing tool would.
type scriptRunner struct {
	out   map[string][]byte
	calls []string
}

func (r *scriptRunner) Run(_ context.Context, _ []byte, name string, args ...string) ([]byte, []byte, error) {
	line := strings.Join(append([]string{name}, args...), " ")
	r.calls = append(r.calls, line)
	if b, ok := r.out[line]; ok {
		return b, nil, nil
	}
	return nil, []byte("sacctmgr: error: Problem talking to the database: Connection refused"), errors.New("exit status 1")
}

func limitedJob(user, account, partition, qos string) *Job {
	return &Job{Job: policy.Job{Cluster: "fairwaylab", ID: 7, User: user, Account: account, Partition: partition, QOS: qos,
		State: policy.StatePending}}
}

// TestLimits_CPUMem reads which CPU and memory limits apply to a job from
// the lab's own answers: the user's association (partition-specific or
// not), every account up to root, the job's QOS and its partition's QOS.
// GRES-only limits do not count; a job whose association, account, QOS or
// partition is not listed has unknown limits.
func TestLimits_CPUMem(t *testing.T) {
	a, q, p := limitsFixture(t, "limits")
	l, err := NewLimits(a, q, p)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		job  *Job
		want []string
		err  bool
	}{
		{"no limit in the chain", limitedJob("bob", "physics", "gpu", "normal"), nil, false},
		{"GrpTRES on the account", limitedJob("bob", "lim", "gpu", "normal"), []string{"GrpTRES=cpu=4 on account lim"}, false},
		{"MaxTRES mem on the user", limitedJob("alice", "physics", "gpu", "normal"), []string{"MaxTRES=mem=4000M on user alice in account physics"}, false},
		{"partition-specific user association; GRES limit left out", limitedJob("carol", "chem", "gpu", "normal"),
			[]string{"MaxTRESPerNode=cpu=2 on user carol in account chem partition gpu", "GrpTRESMins=cpu=600000 on account chem"}, false},
		{"QOS limits", limitedJob("bob", "physics", "gpu", "capped"),
			[]string{"GrpTRESRunMins=cpu=1000 on QOS capped", "MaxTRESPU=cpu=8 on QOS capped", "MaxTRESPU=mem=62.50G on QOS capped"}, false},
		{"GRES-only QOS", limitedJob("bob", "physics", "gpu", "gpuonly"), nil, false},
		{"QOS minimum", limitedJob("bob", "physics", "gpu", "floor"), []string{"MinTRES=cpu=1 on QOS floor"}, false},
		{"partition QOS", limitedJob("bob", "physics", "short", "normal"),
			[]string{"GrpTRESRunMins=cpu=1000 on QOS capped", "MaxTRESPU=cpu=8 on QOS capped", "MaxTRESPU=mem=62.50G on QOS capped"}, false},
		{"partition list", limitedJob("bob", "physics", "gpu,short", "normal"),
			[]string{"GrpTRESRunMins=cpu=1000 on QOS capped", "MaxTRESPU=cpu=8 on QOS capped", "MaxTRESPU=mem=62.50G on QOS capped"}, false},
		{"cluster unknown to the job: every cluster's associations", func() *Job { j := limitedJob("bob", "lim", "gpu", "normal"); j.Cluster = ""; return j }(),
			[]string{"GrpTRES=cpu=4 on account lim"}, false},
		{"no association for the user", limitedJob("dave", "physics", "gpu", "normal"), nil, true},
		{"no association on this cluster", func() *Job { j := limitedJob("bob", "physics", "gpu", "normal"); j.Cluster = "other"; return j }(), nil, true},
		{"no account", limitedJob("bob", "", "gpu", "normal"), nil, true},
		{"no QOS", limitedJob("bob", "physics", "gpu", ""), nil, true},
		{"QOS not listed", limitedJob("bob", "physics", "gpu", "gold"), nil, true},
		{"partition not listed", limitedJob("bob", "physics", "debug", "normal"), nil, true},
	} {
		got, err := l.CPUMem(c.job)
		if c.err {
			if !errors.Is(err, ErrLimitsUnknown) {
				t.Errorf("%s: %v, %v; want ErrLimitsUnknown", c.name, got, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if d := cmp.Diff(c.want, got); d != "" {
			t.Errorf("%s (-want +got):\n%s", c.name, d)
		}
	}

	a, q, p = limitsFixture(t, "nolimits")
	if l, err = NewLimits(a, q, p); err != nil {
		t.Fatal(err)
	}
	for _, u := range [][2]string{{"alice", "physics"}, {"bob", "physics"}, {"carol", "chem"}} {
		if got, err := l.CPUMem(limitedJob(u[0], u[1], "gpu", "normal")); err != nil || len(got) != 0 {
			t.Errorf("lab without limits, %s in %s: %v, %v; want none", u[0], u[1], got, err)
		}
	}
}

// TestNewLimits_Malformed: output that is not what was asked for is an
// error, never "no limits".
func TestNewLimits_Malformed(t *testing.T) {
	a, q, p := limitsFixture(t, "limits")
	for _, c := range []struct {
		name            string
		assocs, qos, pt []byte
		want            string
	}{
		{"assoc: a column missing", []byte("fairwaylab|lim|||physics|cpu=4|||||\n"), q, p, "want 12 '|'-separated fields, got 11"},
		{"assoc: not a TRES list", []byte("fairwaylab|lim|||physics|cpu||||||\n"), q, p, `GrpTRES "cpu": want tres=value`},
		{"assoc: no account", []byte("fairwaylab|||||||||||\n"), q, p, "empty account"},
		{"assoc: nothing", nil, q, p, "no records"},
		{"assoc: error text on stdout", []byte("sacctmgr: error: Unknown field 'MaxTRESRunMins'\n"), q, p, "got 1"},
		{"qos: extra column", a, []byte("normal||||||||||||\n"), p, "want 12 '|'-separated fields, got 13"},
		{"qos: no name", a, []byte("|||||||||||\n"), p, "empty name"},
		{"qos: empty TRES value", a, []byte("capped|||cpu=||||||||\n"), p, `GrpTRESRunMins "cpu="`},
		{"partition: no QoS", a, q, []byte("PartitionName=gpu AllowGroups=ALL Nodes=gpu[1-2]\n"), "want PartitionName=… and QoS=…"},
		{"partition: not scontrol", a, q, []byte("gpu up 1-00:00:00 2 idle gpu[1-2]\n"), "want PartitionName=… and QoS=…"},
		{"partition: nothing", a, q, []byte("\n"), "no partitions"},
	} {
		if _, err := NewLimits(c.assocs, c.qos, c.pt); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v; want an error with %q", c.name, err, c.want)
		}
	}
}

// TestResizeWriter_Limits runs the three reads through the Runner, and
// fails as a whole when one of them fails.
func TestResizeWriter_Limits(t *testing.T) {
	a, q, p := limitsFixture(t, "limits")
	answers := map[string][]byte{
		"sacctmgr " + strings.Join(sacctmgrAssocLimitArgs, " "): a,
		"sacctmgr " + strings.Join(sacctmgrQOSLimitArgs, " "):   q,
		"scontrol --all --oneliner show partition":              p,
	}
	r := &scriptRunner{out: answers}
	w, err := NewResizeWriter(ResizeConfig{Runner: r}, nil)
	if err != nil {
		t.Fatal(err)
	}
	l, err := w.Limits(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if got, err := l.CPUMem(limitedJob("bob", "lim", "gpu", "normal")); err != nil || len(got) != 1 {
		t.Errorf("bob in lim: %v, %v; want GrpTRES=cpu=4", got, err)
	}
	if len(r.calls) != 3 {
		t.Errorf("commands %q, want the three reads", r.calls)
	}
	for line := range answers {
		broken := &scriptRunner{out: map[string][]byte{}}
		for k, v := range answers {
			if k != line {
				broken.out[k] = v
			}
		}
		w, _ := NewResizeWriter(ResizeConfig{Runner: broken}, nil)
		if l, err := w.Limits(context.Background()); err == nil || l != nil {
			t.Errorf("%s failing: %v, %v; want an error", line, l, err)
		} else if !strings.Contains(err.Error(), "Connection refused") {
			t.Errorf("%s failing: %v; want the tool's stderr in the error", line, err)
		}
	}
}
