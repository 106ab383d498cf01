package prolog

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
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

// SlurmCommands runs the two Slurm commands the hooks use, each at the
// absolute path it is given. slurmctl.Commands is the real one, wired in
// cmd/fairway: slurmctl is the one package that executes Slurm, and the
// adapters do not import each other.
type SlurmCommands interface {
	// JobShards runs squeue for the job's shards per node.
	JobShards(ctx context.Context, squeue string, jobID int64) (int, error)
	// DrainNode runs scontrol to drain node with reason.
	DrainNode(ctx context.Context, scontrol, node, reason string) error
}

// errNoSlurm: Scontrol without its SlurmCommands runs nothing, so a shard
// lookup fails (and the prolog fails closed) rather than guessing.
var errNoSlurm = errors.New("no Slurm commands wired")

// Scontrol is ShardLookup through squeue (Squeue) and Drainer through
// scontrol (Path), both run by Slurm; both absolute paths, since slurmd
// gives hooks no PATH. An empty Squeue means the squeue next to Path.
type Scontrol struct {
	Path, Squeue string
	Slurm        SlurmCommands
}

// JobShards implements ShardLookup. squeue runs as root, so its path must
// be root's alone like scontrol's (CheckRootPath): next to scontrol is not
// enough. The check is made here, before Slurm is asked to run it.
func (s Scontrol) JobShards(ctx context.Context, jobID int64) (int, error) {
	sq := s.Squeue
	if sq == "" {
		sq = filepath.Join(filepath.Dir(s.Path), "squeue")
	}
	if err := CheckRootPath(sq); err != nil {
		return 0, fmt.Errorf("squeue not run: %w", err)
	}
	if s.Slurm == nil {
		return 0, fmt.Errorf("squeue not run: %w", errNoSlurm)
	}
	return s.Slurm.JobShards(ctx, sq, jobID)
}

// Drain implements Drainer with `scontrol update nodename=NODE state=drain
// reason=...`, so the drain reason names the GPU and the fault rather than
// Slurm's "Prolog error".
func (s Scontrol) Drain(ctx context.Context, node, reason string) error {
	if node == "" {
		return errors.New("drain: node name unknown (no SLURMD_NODENAME)")
	}
	if s.Slurm == nil {
		return fmt.Errorf("drain: %w", errNoSlurm)
	}
	return s.Slurm.DrainNode(ctx, s.Path, node, reason)
}
