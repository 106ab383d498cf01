package prolog

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"syscall"
	"time"
)

// nodeState is what the hooks remember on a node between a job's prolog and
// its epilog, in a directory (by default on tmpfs: GPU settings and MPS
// daemons do not survive a reboot either):
//
//	lock            flock(2)ed while a hook reads or changes GPU state
//	jobs/ID.json    what the prolog saw: start, shards, the GPUs' identity
//	jobs/ID.mps     MPS settings for the job's tasks (TaskProlog prints it)
//	gpus/N.json     per GPU: the jobs sharing it, whether MPS runs, XIDs judged
type nodeState struct{ dir string }

// jobRecord is the prolog's note for the epilog.
type jobRecord struct {
	JobID  int64       `json:"job_id"`
	Start  time.Time   `json:"start"`
	Shards int         `json:"shards"` // 0 whole GPUs, >0 shards, -1 unknown
	GPUs   []gpuRecord `json:"gpus"`
}

// gpuRecord is one GPU of a job as the prolog saw it; fields stay zero when
// NVML could not say.
type gpuRecord struct {
	Minor         int     `json:"minor"`
	UUID          string  `json:"uuid,omitempty"`
	Model         string  `json:"model,omitempty"`
	MemoryTotalMB int64   `json:"memory_total_mb,omitempty"`
	EnergyMJ      *uint64 `json:"energy_mj,omitempty"` // at the prolog
}

// gpuState is one GPU's shared state.
type gpuState struct {
	Sharers []int64 `json:"sharers,omitempty"` // shard jobs using the GPU
	// Unknown are jobs on the GPU whose shard lookup failed: they may
	// share it, so a later sharer is not the first.
	Unknown []int64 `json:"unknown,omitempty"`
	MPS     bool    `json:"mps,omitempty"` // Fairway started its MPS daemon
	// HeldExclusive says a job whose shard lookup failed was given the GPU
	// as a whole GPU (EXCLUSIVE_PROCESS); the next job to share it returns
	// it to DEFAULT.
	HeldExclusive bool `json:"held_exclusive,omitempty"`
	// XIDSeq is the newest kernel log record judged for this GPU; XIDKnown
	// is false until a first look sets the baseline.
	XIDSeq   uint64 `json:"xid_seq,omitempty"`
	XIDKnown bool   `json:"xid_known,omitempty"`
}

func (g gpuState) clone() gpuState {
	g.Sharers = slices.Clone(g.Sharers)
	g.Unknown = slices.Clone(g.Unknown)
	return g
}

func (g gpuState) equal(o gpuState) bool {
	return slices.Equal(g.Sharers, o.Sharers) && slices.Equal(g.Unknown, o.Unknown) && g.MPS == o.MPS && g.HeldExclusive == o.HeldExclusive && g.XIDSeq == o.XIDSeq && g.XIDKnown == o.XIDKnown
}

func (s nodeState) jobPath(id int64) string {
	return filepath.Join(s.dir, "jobs", strconv.FormatInt(id, 10)+".json")
}

// MPSEnvPath is where the prolog leaves a shard job's MPS environment, in
// TaskProlog's "export NAME=value" form.
func MPSEnvPath(stateDir string, jobID int64) string {
	return filepath.Join(stateDir, "jobs", strconv.FormatInt(jobID, 10)+".mps")
}

func (s nodeState) gpuPath(minor int) string {
	return filepath.Join(s.dir, "gpus", strconv.Itoa(minor)+".json")
}

func (s nodeState) init() error {
	for _, d := range []string{s.dir, filepath.Join(s.dir, "jobs"), filepath.Join(s.dir, "gpus")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return fmt.Errorf("state directory: %w", err)
		}
	}
	return nil
}

// lock takes the node-wide state lock, waiting at most until ctx ends.
// Concurrent prologs and epilogs of different jobs serialise here while
// they change GPU state; each holds it for milliseconds.
func (s nodeState) lock(ctx context.Context) (unlock func(), err error) {
	f, err := os.OpenFile(filepath.Join(s.dir, "lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open state lock: %w", err)
	}
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return func() { f.Close() }, nil // closing releases the lock
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) && !errors.Is(err, syscall.EINTR) {
			f.Close()
			return nil, fmt.Errorf("take state lock: %w", err)
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, fmt.Errorf("take state lock: %w", ctx.Err())
		case <-time.After(2 * time.Millisecond):
		}
	}
}

func (s nodeState) putJob(r jobRecord) error {
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	return writeFileAtomic(s.jobPath(r.JobID), b, 0o600, false)
}

// job returns the prolog's record of job id; ok is false when there is none
// (the prolog did not run, or ran before a reboot).
func (s nodeState) job(id int64) (r jobRecord, ok bool, err error) {
	b, err := os.ReadFile(s.jobPath(id))
	if errors.Is(err, fs.ErrNotExist) {
		return r, false, nil
	}
	if err != nil {
		return r, false, fmt.Errorf("read job state: %w", err)
	}
	if err := json.Unmarshal(b, &r); err != nil {
		return r, false, fmt.Errorf("job state %s: %w", s.jobPath(id), err)
	}
	return r, true, nil
}

// jobs reads every job record on the node; records it cannot read are
// left out and named in the error.
func (s nodeState) jobs() ([]jobRecord, error) {
	names, err := filepath.Glob(filepath.Join(s.dir, "jobs", "*.json"))
	if err != nil {
		return nil, err
	}
	var out []jobRecord
	var errs []error
	for _, n := range names {
		b, err := os.ReadFile(n)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		var r jobRecord
		if err := json.Unmarshal(b, &r); err != nil {
			errs = append(errs, fmt.Errorf("job state %s: %w", n, err))
			continue
		}
		out = append(out, r)
	}
	return out, errors.Join(errs...)
}

func (s nodeState) dropJob(id int64) error {
	var errs []error
	for _, p := range []string{s.jobPath(id), MPSEnvPath(s.dir, id)} {
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// gpu reads one GPU's state; a GPU never seen has the zero state.
func (s nodeState) gpu(minor int) (gpuState, error) {
	var g gpuState
	b, err := os.ReadFile(s.gpuPath(minor))
	if errors.Is(err, fs.ErrNotExist) {
		return g, nil
	}
	if err != nil {
		return g, fmt.Errorf("read GPU %d state: %w", minor, err)
	}
	if err := json.Unmarshal(b, &g); err != nil {
		return g, fmt.Errorf("GPU %d state: %w", minor, err)
	}
	return g, nil
}

func (s nodeState) putGPU(minor int, g gpuState) error {
	b, err := json.Marshal(g)
	if err != nil {
		return err
	}
	return writeFileAtomic(s.gpuPath(minor), b, 0o600, false)
}

// writeFileAtomic writes data to path through a temporary file in the same
// directory and a rename, so readers see the old or the new content, never
// a torn one. With durable it fsyncs the file before the rename and the
// directory after, so the file survives a crash once this returns.
func writeFileAtomic(path string, data []byte, perm fs.FileMode, durable bool) (err error) {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if _, err = tmp.Write(data); err != nil {
		return err
	}
	if err = tmp.Chmod(perm); err != nil {
		return err
	}
	if durable {
		if err = tmp.Sync(); err != nil {
			return err
		}
	}
	if err = tmp.Close(); err != nil {
		return err
	}
	if err = os.Rename(tmp.Name(), path); err != nil {
		return err
	}
	if durable {
		d, err := os.Open(dir)
		if err != nil {
			return err
		}
		defer d.Close()
		return d.Sync()
	}
	return nil
}
