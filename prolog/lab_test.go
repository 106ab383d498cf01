package prolog

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/fairway-hpc/fairway/contrib/lab"
	"github.com/fairway-hpc/fairway/slurmctl"
)

// TestLab_ScontrolJobShards asks the lab's slurmctld, as the prolog does,
// how many shards held jobs hold, including jobs whose comment or mail user
// imitates the "Key=value" words of `scontrol show job -o` (slurmctld
// accepts both with spaces).
func TestLab_ScontrolJobShards(t *testing.T) {
	e := lab.Get(t)
	t.Setenv("SLURM_CONF", e.SlurmConf)
	tag := time.Now().UnixNano()
	shard := e.Submit(t, "carol", "--hold", "-J", fmt.Sprintf("fw-shards-%d", tag), "--gres=shard:3", "--wrap", "true")
	whole := e.Submit(t, "alice", "--hold", "-J", fmt.Sprintf("fw-whole-%d", tag), "--gres=gpu:h100:2", "--wrap", "true")
	craftedWhole := e.Submit(t, "alice", "--hold", "-J", fmt.Sprintf("fw-crafted-%d", tag), "--gres=gpu:1",
		"--comment", "x TRES=gres/shard=8 TresPerNode=gres:shard:8", "--wrap", "true")
	craftedShard := e.Submit(t, "bob", "--hold", "-J", fmt.Sprintf("fw-crafted-%d", tag), "--gres=shard:3",
		"--mail-type=END", "--mail-user", "a TresPerNode=gres:gpu:1 TRES=cpu=1", "--wrap", "true")
	// The lab's own scontrol (and squeue beside it): under a prefix,
	// /usr/bin's is another release's, whose squeue cannot load the
	// prefix's plugins.
	sc := Scontrol{Path: e.Scontrol, Slurm: slurmctl.Commands{}}
	if _, err := os.Stat(sc.Path); err != nil {
		t.Fatalf("lab without scontrol: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for id, want := range map[int64]int{shard: 3, whole: 0, craftedWhole: 0, craftedShard: 3} {
		got, err := sc.JobShards(ctx, id)
		if err != nil || got != want {
			t.Errorf("JobShards(%d) = %d, %v; want %d", id, got, err, want)
		}
	}
	if _, err := sc.JobShards(ctx, 999999999); err == nil {
		t.Error("JobShards of a job slurmctld does not know: no error")
	}
}
