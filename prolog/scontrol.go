package prolog

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
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

// Scontrol is ShardLookup through squeue's JSON (Squeue) and Drainer
// through scontrol (Path); both absolute paths, since slurmd gives hooks no
// PATH. An empty Squeue means the squeue next to Path.
type Scontrol struct{ Path, Squeue string }

// JobShards reads `squeue --json --jobs=ID`. A job's text fields (comment,
// mail user, work dir, name) are user input: in `scontrol show job -o`
// they print as "Key=value" words among Slurm's own, so a comment
// "x TRES=gres/shard=8" read as a shard count. JSON keeps every field in
// its place. Slurm 22.05's squeue ignores --jobs with --json (it prints
// every job, a few KB each) and its scontrol has no --json; newer releases
// print the one job.
func (s Scontrol) JobShards(ctx context.Context, jobID int64) (int, error) {
	sq := s.Squeue
	if sq == "" {
		sq = filepath.Join(filepath.Dir(s.Path), "squeue")
	}
	out, err := run(ctx, sq, "--json", "--jobs="+strconv.FormatInt(jobID, 10))
	if err != nil {
		return 0, err
	}
	return jobShardsJSON(out, jobID)
}

// Drain runs `scontrol update nodename=NODE state=drain reason=...`, so the
// drain reason names the GPU and the fault rather than Slurm's "Prolog error".
func (s Scontrol) Drain(ctx context.Context, node, reason string) error {
	if node == "" {
		return errors.New("drain: node name unknown (no SLURMD_NODENAME)")
	}
	_, err := run(ctx, s.Path, "update", "nodename="+node, "state=drain", "reason="+reason)
	return err
}

func run(ctx context.Context, path string, args ...string) ([]byte, error) {
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, path, args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("%s %s: %w: %s", filepath.Base(path), strings.Join(args, " "), err, bytes.TrimSpace(stderr.Bytes()))
	}
	return stdout.Bytes(), nil
}

// squeueJob is what the prolog reads of one job in `squeue --json`: only
// fields Slurm itself writes and validates.
type squeueJob struct {
	JobID       jsonInt `json:"job_id"`
	TresPerNode string  `json:"tres_per_node"` // gres:shard:3 (22.05), gres/shard:3 (newer)
	TresAlloc   string  `json:"tres_alloc_str"`
	NodeCount   jsonInt `json:"node_count"`
}

// jobShardsJSON finds jobID in `squeue --json` output and returns its
// shards per node: from tres_per_node, else the allocated gres/shard TRES
// divided by the node count; 0 for a job without shards. Records that do
// not decode are skipped (they may belong to other jobs); the job itself
// must be there.
func jobShardsJSON(out []byte, jobID int64) (int, error) {
	var doc struct {
		Jobs []json.RawMessage `json:"jobs"`
	}
	if err := json.Unmarshal(out, &doc); err != nil {
		return 0, fmt.Errorf("squeue --json: %w", err)
	}
	for _, raw := range doc.Jobs {
		var j squeueJob
		if err := json.Unmarshal(raw, &j); err != nil || int64(j.JobID) != jobID {
			continue
		}
		return jobShards(j)
	}
	return 0, fmt.Errorf("squeue --json: job %d not listed", jobID)
}

func jobShards(j squeueJob) (int, error) {
	for _, g := range strings.Split(j.TresPerNode, ",") {
		g = strings.Replace(g, "gres/", "gres:", 1)
		parts := strings.Split(g, ":")
		if len(parts) >= 3 && parts[0] == "gres" && parts[1] == "shard" {
			n, err := strconv.Atoi(parts[len(parts)-1])
			if err != nil || n < 0 {
				return 0, fmt.Errorf("job %d: tres_per_node %q: bad shard count", j.JobID, g)
			}
			return n, nil
		}
	}
	for _, t := range strings.Split(j.TresAlloc, ",") {
		k, v, _ := strings.Cut(t, "=")
		if k == "gres/shard" || strings.HasPrefix(k, "gres/shard:") {
			total, err := strconv.Atoi(v)
			if err != nil || total < 0 {
				return 0, fmt.Errorf("job %d: tres_alloc_str %q: bad shard count", j.JobID, t)
			}
			nodes := max(int(j.NodeCount), 1)
			return (total + nodes - 1) / nodes, nil
		}
	}
	return 0, nil
}

// jsonInt is an integer as squeue --json prints it: a plain number (22.05)
// or {"set": true, "infinite": false, "number": N} (23.02 and later); an
// unset or infinite one reads as 0.
type jsonInt int64

func (n *jsonInt) UnmarshalJSON(b []byte) error {
	*n = 0
	b = bytes.TrimSpace(b)
	switch {
	case bytes.Equal(b, []byte("null")):
		return nil
	case len(b) > 0 && b[0] == '{':
		var s struct {
			Set      bool  `json:"set"`
			Infinite bool  `json:"infinite"`
			Number   int64 `json:"number"`
		}
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		if s.Set && !s.Infinite {
			*n = jsonInt(s.Number)
		}
		return nil
	}
	var v int64
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*n = jsonInt(v)
	return nil
}
