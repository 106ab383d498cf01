package serve

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"syscall"
	"time"

	"github.com/fairway-hpc/fairway/policy"
	"github.com/prometheus/client_golang/prometheus"
)

// Policy files (--policy-file): a point of a parameterised family that
// `fairway tune` fitted, which serve, explain and queue rank with instead
// of a registered policy named by --policy. serve checks the file at every
// cycle and reloads it when it changed; a file that cannot be loaded then
// leaves the last good policy ranking (see policyWatch).

// maxPolicyFileBytes bounds what is read: a policy file is a few
// kilobytes (its validation table included); anything far larger is not
// one.
const maxPolicyFileBytes = 4 << 20

// PolicyFile is a policy file as read: what policy.ParseFile accepted, the
// policy it describes, and the file's identity when read.
type PolicyFile struct {
	Path   string
	File   *policy.File
	Policy policy.Policy
	// Loaded is when it was read.
	Loaded time.Time
	stamp  fileStamp
	sum    []byte // its bytes, to tell a touched file from a changed one
}

// Info is what a cycle ranked with this file says of it.
func (pf *PolicyFile) Info() *PolicyFileInfo {
	return &PolicyFileInfo{Path: pf.Path, TrainedOn: pf.File.TrainedOn, Objective: pf.File.Objective, Loaded: pf.Loaded}
}

// PolicyFileInfo is the policy file a cycle ranked with, for serve --once,
// explain and the decision's reader.
type PolicyFileInfo struct {
	Path      string           `json:"path"`
	TrainedOn policy.TrainedOn `json:"trained_on"`
	Objective string           `json:"objective,omitempty"`
	Loaded    time.Time        `json:"loaded"`
	// Error is why the file as it is on disk now could not be loaded: the
	// cycle ranked with the last good one, this one. "" when the file on
	// disk is the one ranking.
	Error string `json:"error,omitempty"`
}

// String says in one line which file ranked and what it was trained on.
func (i *PolicyFileInfo) String() string {
	s := fmt.Sprintf("policy file %s (trained on %s)", i.Path, i.TrainedOn)
	if i.Error != "" {
		s += fmt.Sprintf("; the file on disk now cannot be loaded (%s): this is the last good one, loaded %s", i.Error, i.Loaded.Local().Format(time.RFC3339))
	}
	return s
}

// fileStamp is what tells that a file changed without reading it: its
// size, modification time, status change time and identity (a file
// renamed over it is another file, whatever its times). The change time
// because the modification time can be set back: cp -p, rsync --inplace
// -t or a package with fixed times write a file in place, as many bytes,
// and leave its old modification time; no one can set the change time.
type fileStamp struct {
	size   int64
	mod    time.Time
	change syscall.Timespec
	info   fs.FileInfo
}

func (a fileStamp) same(b fileStamp) bool {
	return a.info != nil && b.info != nil && a.size == b.size && a.mod.Equal(b.mod) && a.change == b.change && os.SameFile(a.info, b.info)
}

func stampOf(fi fs.FileInfo) fileStamp {
	st := fileStamp{size: fi.Size(), mod: fi.ModTime(), info: fi}
	if sys, ok := fi.Sys().(*syscall.Stat_t); ok {
		st.change = sys.Ctim
	}
	return st
}

// LoadPolicyFile reads the policy file at path and builds its policy. The
// error names the file and the problem: unreadable, of another format
// version, a feature missing, a parameter not finite, ...
// (policy.ParseFile).
func LoadPolicyFile(path string) (*PolicyFile, error) {
	b, st, err := readPolicyFile(path)
	if err != nil {
		return nil, err
	}
	return parsePolicyFile(path, b, st)
}

// readPolicyFile reads path and says what it was when read.
func readPolicyFile(path string) ([]byte, fileStamp, error) {
	// O_NONBLOCK: opening a named pipe put at path would otherwise wait
	// for a writer, and the cycle with it; the regular-file check below
	// then refuses it. Reads of a regular file ignore the flag.
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, fileStamp{}, fmt.Errorf("policy file %s: %w", path, pathErr(err))
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fileStamp{}, fmt.Errorf("policy file %s: %w", path, pathErr(err))
	}
	if !fi.Mode().IsRegular() {
		return nil, fileStamp{}, fmt.Errorf("policy file %s: not a regular file", path)
	}
	b, err := io.ReadAll(io.LimitReader(f, maxPolicyFileBytes+1))
	if err != nil {
		return nil, fileStamp{}, fmt.Errorf("policy file %s: %w", path, pathErr(err))
	}
	if len(b) > maxPolicyFileBytes {
		return nil, fileStamp{}, fmt.Errorf("policy file %s: larger than %d bytes: not a policy file", path, maxPolicyFileBytes)
	}
	return b, stampOf(fi), nil
}

func parsePolicyFile(path string, b []byte, st fileStamp) (*PolicyFile, error) {
	f, err := policy.ParseFile(b)
	if err != nil {
		return nil, fmt.Errorf("policy file %s: %w", path, err)
	}
	p, err := f.Policy()
	if err != nil {
		return nil, fmt.Errorf("policy file %s: %w", path, err)
	}
	return &PolicyFile{Path: path, File: f, Policy: p, Loaded: time.Now(), stamp: st, sum: b}, nil
}

// pathErr drops the path an *fs.PathError repeats.
func pathErr(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// policyWatch is serve's policy file between cycles. At every cycle it
// stats the file; when the size, modification or change time or identity changed
// since the last look, or the last look failed, it reads the file again.
// A file that loads replaces the policy; one that does not (unreadable,
// removed, another format version, a bad parameter, half written) leaves
// the last good policy ranking, and the error is logged at every cycle
// until the file is fixed, so that an admin who broke it sees it.
//
// A stat per cycle rather than SIGHUP: an admin or a cron job that
// replaces the file needs no signal, and a serve behind systemd needs no
// ExecReload.
type policyWatch struct {
	cur     *PolicyFile // the last good file: the policy ranking
	seen    fileStamp   // the file as last looked at
	lastErr error       // the last look's error; nil when cur is the file on disk
	m       *policyFileMetrics
}

// check looks at the file and returns the policy file to rank with from
// now on when it changed (nil when not), and the error of a file that
// could not be loaded.
func (w *policyWatch) check() (*PolicyFile, error) {
	fi, err := os.Stat(w.cur.Path)
	if err == nil && w.lastErr == nil && stampOf(fi).same(w.seen) {
		return nil, nil
	}
	b, st, err := readPolicyFile(w.cur.Path)
	if err == nil && w.lastErr == nil && bytes.Equal(b, w.cur.sum) {
		w.seen = st // touched, or written again with the same bytes
		return nil, nil
	}
	var pf *PolicyFile
	if err == nil {
		w.seen = st
		pf, err = parsePolicyFile(w.cur.Path, b, st)
	}
	if err != nil {
		w.lastErr = err
		w.m.state.Set(0)
		w.m.reloads.WithLabelValues("error").Inc()
		return nil, err
	}
	w.lastErr = nil
	if bytes.Equal(pf.sum, w.cur.sum) {
		// Back to the file that ranks already: nothing to swap.
		w.cur.stamp = st
		w.m.state.Set(1)
		return nil, nil
	}
	w.cur = pf
	w.m.state.Set(1)
	w.m.reloads.WithLabelValues("ok").Inc()
	w.m.loaded.Set(float64(pf.Loaded.Unix()))
	return pf, nil
}

// info is what a cycle says of the file it ranked with.
func (w *policyWatch) info() *PolicyFileInfo {
	i := w.cur.Info()
	if w.lastErr != nil {
		i.Error = w.lastErr.Error()
	}
	return i
}

// policyFileMetrics are serve's metrics of its policy file, registered
// only when it has one: a 0 state would otherwise read as a bad file.
type policyFileMetrics struct {
	state   prometheus.Gauge
	reloads *prometheus.CounterVec
	loaded  prometheus.Gauge
}

func newPolicyFileMetrics(reg *prometheus.Registry) *policyFileMetrics {
	m := &policyFileMetrics{
		state: prometheus.NewGauge(prometheus.GaugeOpts{Name: "fairway_policy_file_ok",
			Help: "1 when the policy file on disk is the policy ranking; 0 when it changed and cannot be loaded (serve ranks with the last good one and logs why at every cycle)."}),
		reloads: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "fairway_policy_file_reloads_total",
			Help: "Reloads of the policy file after it changed, by result (ok, error)."}, []string{"result"}),
		loaded: prometheus.NewGauge(prometheus.GaugeOpts{Name: "fairway_policy_file_loaded_timestamp_seconds",
			Help: "When the policy file ranking now was loaded (Unix time)."}),
	}
	reg.MustRegister(m.state, m.reloads, m.loaded)
	return m
}

// PolicyFile is the policy file the runner ranks with now; nil without
// one. Read it between cycles: a cycle may reload it.
func (r *Runner) PolicyFile() *PolicyFile {
	if r.pf == nil {
		return nil
	}
	return r.pf.cur
}

// SetPolicyFile makes the runner rank with pf's policy from the next cycle
// on, and reload pf's file when it changes (policyWatch).
func (r *Runner) SetPolicyFile(pf *PolicyFile) error {
	if err := r.engine.SetPolicy(pf.Policy); err != nil {
		return err
	}
	if r.metrics.policyFile == nil {
		r.metrics.policyFile = newPolicyFileMetrics(r.metrics.reg)
	}
	m := r.metrics.policyFile
	m.state.Set(1)
	m.loaded.Set(float64(pf.Loaded.Unix()))
	r.pf = &policyWatch{cur: pf, seen: pf.stamp, m: m}
	r.cfg.Policy = pf.Policy.Name()
	return nil
}

// checkPolicyFile reloads the policy file when it changed; a file that
// cannot be loaded is logged and the last good policy kept.
func (r *Runner) checkPolicyFile(log *slog.Logger) {
	if r.pf == nil {
		return
	}
	pf, err := r.pf.check()
	switch {
	case err != nil:
		log.Error("policy file cannot be loaded: ranking with the last good one until it is fixed",
			"err", err, "last_good_loaded", r.pf.cur.Loaded.Format(time.RFC3339))
	case pf != nil:
		if err := r.engine.SetPolicy(pf.Policy); err != nil {
			log.Error("policy file reloaded but not applied", "path", pf.Path, "err", err)
			return
		}
		r.cfg.Policy = pf.Policy.Name()
		log.Info("policy file reloaded", "path", pf.Path, "policy", pf.Policy.Name(), "trained_on", pf.File.TrainedOn.String())
	}
}

// policyLabel names the policy ranking for people: its name, and the
// policy file it came from.
func (r *Runner) policyLabel() string {
	if r.pf == nil {
		return r.cfg.Policy
	}
	return fmt.Sprintf("%s (policy file %s)", r.cfg.Policy, r.pf.cur.Path)
}
