package prolog

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
)

// ShardLookup finds how many GPU shards a job holds on a node. slurmd 22.05
// does not say in the prolog environment, where a shard job looks exactly
// like a one-GPU job.
type ShardLookup interface {
	// JobShards returns the job's shards per node; 0 for a whole-GPU job.
	JobShards(ctx context.Context, jobID int64) (int, error)
}

// Drainer takes a node out of service with a reason.
type Drainer interface {
	Drain(ctx context.Context, node, reason string) error
}

// Scontrol is ShardLookup and Drainer through Slurm's scontrol (Path; an
// absolute path, since slurmd gives hooks no PATH).
type Scontrol struct{ Path string }

// JobShards reads `scontrol show job -o ID`.
func (s Scontrol) JobShards(ctx context.Context, jobID int64) (int, error) {
	out, err := s.run(ctx, "show", "job", "-o", strconv.FormatInt(jobID, 10))
	if err != nil {
		return 0, err
	}
	return parseJobShards(out)
}

// Drain runs `scontrol update nodename=NODE state=drain reason=...`, so the
// drain reason names the GPU and the fault rather than Slurm's "Prolog error".
func (s Scontrol) Drain(ctx context.Context, node, reason string) error {
	if node == "" {
		return errors.New("drain: node name unknown (no SLURMD_NODENAME)")
	}
	_, err := s.run(ctx, "update", "nodename="+node, "state=drain", "reason="+reason)
	return err
}

func (s Scontrol) run(ctx context.Context, args ...string) ([]byte, error) {
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, s.Path, args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("scontrol %s: %w: %s", strings.Join(args, " "), err, bytes.TrimSpace(stderr.Bytes()))
	}
	return stdout.Bytes(), nil
}

// parseJobShards reads the shard count per node from one-line `scontrol
// show job -o` output: TresPerNode=gres:shard:3 or gres:shard:h100:3 (22.05),
// gres/shard:3 (newer), else TRES=...,gres/shard=N divided by NumNodes. A
// job without shards gives 0.
func parseJobShards(out []byte) (int, error) {
	fields := map[string]string{}
	for _, f := range strings.Fields(string(out)) {
		if k, v, ok := strings.Cut(f, "="); ok {
			fields[k] = v
		}
	}
	if _, ok := fields["JobId"]; !ok {
		return 0, fmt.Errorf("scontrol show job: no JobId in %q", truncate(string(out), 80))
	}
	for _, g := range strings.Split(fields["TresPerNode"], ",") {
		g = strings.Replace(g, "gres/", "gres:", 1)
		parts := strings.Split(g, ":")
		if len(parts) >= 3 && parts[0] == "gres" && parts[1] == "shard" {
			n, err := strconv.Atoi(parts[len(parts)-1])
			if err != nil {
				return 0, fmt.Errorf("scontrol show job: TresPerNode %q: bad count", g)
			}
			return n, nil
		}
	}
	for _, t := range strings.Split(fields["TRES"], ",") {
		k, v, _ := strings.Cut(t, "=")
		if k == "gres/shard" || strings.HasPrefix(k, "gres/shard:") {
			total, err := strconv.Atoi(v)
			if err != nil {
				return 0, fmt.Errorf("scontrol show job: TRES %q: bad count", t)
			}
			nodes, _ := strconv.Atoi(fields["NumNodes"])
			if nodes <= 0 {
				nodes = 1
			}
			return (total + nodes - 1) / nodes, nil
		}
	}
	return 0, nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
