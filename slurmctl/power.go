package slurmctl

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Power saving through Slurm: node names from host lists, a node's power
// state from its flags, the nodes the backfill plan holds for pending jobs,
// and the one way Fairway changes a node's power: `scontrol update
// nodename=N state=POWER_DOWN|POWER_UP`, which runs slurm.conf's
// SuspendProgram or ResumeProgram exactly as Slurm's own power saving does.
// It is the form every release since 21.08 accepts (`scontrol power down`
// is newer); slurmrestd v0.0.38 has no node update at all.

// ExpandHostlist expands a Slurm host list ("gpu[1-3,07],cpu1") into node
// names, in order. An empty list, "(null)" and "None assigned" give none.
func ExpandHostlist(s string) ([]string, error) {
	s = strings.TrimSpace(s)
	if s == "" || s == "(null)" || s == "None assigned" {
		return nil, nil
	}
	var out []string
	depth, start := 0, 0
	for i := 0; i <= len(s); i++ {
		if i < len(s) && (s[i] != ',' || depth > 0) {
			switch s[i] {
			case '[':
				depth++
			case ']':
				if depth--; depth < 0 {
					return nil, fmt.Errorf("host list %q: unbalanced brackets", s)
				}
			}
			continue
		}
		names, err := expandHost(s[start:i])
		if err != nil {
			return nil, err
		}
		if len(out)+len(names) > maxHosts {
			return nil, fmt.Errorf("host list %q: more than %d hosts", s, maxHosts)
		}
		out = append(out, names...)
		start = i + 1
	}
	if depth != 0 {
		return nil, fmt.Errorf("host list %q: unbalanced brackets", s)
	}
	return out, nil
}

// maxHosts bounds one host list's expansion: far above any cluster, far
// below what a typo like "n[1-999999999]" would allocate.
const maxHosts = 1 << 20

// expandHost expands one expression, "gpu[1-2,5]x" or "gpu1"; brackets
// may repeat ("r[1-2]n[1-2]").
func expandHost(h string) ([]string, error) {
	if h == "" {
		return nil, fmt.Errorf("host list: empty host name")
	}
	open := strings.IndexByte(h, '[')
	if open < 0 {
		if strings.ContainsAny(h, "]") {
			return nil, fmt.Errorf("host %q: unbalanced brackets", h)
		}
		return []string{h}, nil
	}
	closeAt := strings.IndexByte(h[open:], ']')
	if closeAt < 0 {
		return nil, fmt.Errorf("host %q: unbalanced brackets", h)
	}
	closeAt += open
	prefix, ranges, rest := h[:open], h[open+1:closeAt], h[closeAt+1:]
	tails := []string{""}
	if rest != "" {
		var err error
		if tails, err = expandHost(rest); err != nil {
			return nil, err
		}
	}
	var out []string
	for _, r := range strings.Split(ranges, ",") {
		lo, hi, isRange := strings.Cut(r, "-")
		if !isRange {
			hi = lo
		}
		a, err1 := strconv.Atoi(lo)
		b, err2 := strconv.Atoi(hi)
		if err1 != nil || err2 != nil || a < 0 || b < a {
			return nil, fmt.Errorf("host %q: range %q: want N or N-M with N <= M", h, r)
		}
		if len(out)+(b-a+1)*len(tails) > maxHosts {
			return nil, fmt.Errorf("host %q: more than %d hosts", h, maxHosts)
		}
		for v := a; v <= b; v++ {
			num := strconv.Itoa(v)
			if len(num) < len(lo) { // keep zero padding: gpu[01-02]
				num = strings.Repeat("0", len(lo)-len(num)) + num
			}
			for _, t := range tails {
				out = append(out, prefix+num+t)
			}
		}
	}
	return out, nil
}

// NodePower is a node's power state as its flags say.
type NodePower int

// Node power states.
const (
	NodeOn           NodePower = iota
	NodeOff                    // POWERED_DOWN (sinfo "~")
	NodePoweringDown           // POWER_DOWN ("!") or POWERING_DOWN ("%")
	NodePoweringUp             // POWERING_UP ("#") or POWER_UP (asked, not yet begun)
)

// Power reads the node's power state from its state flags.
func (n *Node) Power() NodePower {
	has := func(f string) bool { return slices.Contains(n.State, f) }
	switch {
	case has("POWERING_UP"), has("POWER_UP"):
		return NodePoweringUp
	case has("POWERED_DOWN"):
		return NodeOff
	case has("POWERING_DOWN"), has("POWER_DOWN"):
		return NodePoweringDown
	}
	return NodeOn
}

// Busy reports whether a job holds part of the node.
func (n *Node) Busy() bool {
	for _, s := range n.State {
		switch s {
		case "ALLOCATED", "ALLOC", "MIXED", "COMPLETING":
			return true
		}
	}
	return n.AllocCPUs > 0 || n.AllocGPUs > 0 || n.AllocShards > 0
}

// UsableWhenPowered is Usable without the power flags: whether jobs could
// start on the node once it is on.
func (n *Node) UsableWhenPowered() bool {
	for _, s := range n.State {
		switch s {
		case "POWERED_DOWN", "POWERING_DOWN", "POWER_DOWN", "POWERING_UP":
			continue
		case "DOWN", "DRAIN", "DRAINED", "DRAINING", "FAIL", "FAILING", "ERROR", "INVALID",
			"NOT_RESPONDING", "FUTURE", "MAINTENANCE", "UNKNOWN", "REBOOT_REQUESTED", "REBOOT_ISSUED", "RESERVED":
			return false
		}
	}
	return len(n.State) > 0
}

// parseScheduledNodes reads `squeue -h -t PD -o "%A %Y"`: each pending
// record's job id and the nodes the backfill plan holds for it ("(null)"
// or "N/A" when none). Slurm 22.05's REST API has no scheduled_nodes, so
// this is where serve learns them there.
func parseScheduledNodes(out []byte) (map[int64][]string, error) {
	got := map[int64][]string{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 0 {
			continue
		}
		if len(f) > 2 {
			return nil, fmt.Errorf("squeue line %q: want job id and scheduled nodes", sc.Text())
		}
		id, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil || id <= 0 {
			return nil, fmt.Errorf("squeue line %q: job id is not a positive integer", sc.Text())
		}
		if len(f) == 1 || f[1] == "N/A" {
			continue
		}
		nodes, err := ExpandHostlist(f[1])
		if err != nil {
			return nil, fmt.Errorf("squeue line %q: %w", sc.Text(), err)
		}
		if len(nodes) > 0 {
			got[id] = nodes
		}
	}
	return got, sc.Err()
}

// PowerConfig configures a PowerWriter.
type PowerConfig struct {
	Scontrol   string        // default "scontrol"
	Squeue     string        // default "squeue"
	Runner     Runner        // default ExecRunner{}
	CmdTimeout time.Duration // per command; default 1m
}

// PowerWriter changes nodes' power through scontrol and reads the backfill
// plan's nodes through squeue. It has no other operation: it cannot
// drain, resume, down or reboot a node.
type PowerWriter struct{ cfg PowerConfig }

// NewPowerWriter fills cfg's defaults.
func NewPowerWriter(cfg PowerConfig) (*PowerWriter, error) {
	fillCommands(&cfg.Runner, &cfg.CmdTimeout, time.Minute, program{&cfg.Scontrol, "scontrol"}, program{&cfg.Squeue, "squeue"})
	if cfg.CmdTimeout < 0 {
		return nil, fmt.Errorf("power writer: command timeout %v: want positive", cfg.CmdTimeout)
	}
	return &PowerWriter{cfg: cfg}, nil
}

// ErrPowerUpNotSent is the error, wrapped, of a power-up SetPower did not
// send because the node was no longer powered down or was already coming
// up (Slurm allocated it a job meanwhile and resumed it itself).
var ErrPowerUpNotSent = errors.New("no POWER_UP sent")

// SetPower powers node down (up false) or up through scontrol. scontrol's
// refusal (e.g. "Invalid node state specified" when power saving is off)
// comes back as the error.
//
// A power-up is sent only to a node slurmctld still has powered down and
// not yet resuming, read just before: for a node already powering up,
// slurmctld takes POWER_UP as a new request ("power up request
// repeating"), runs ResumeProgram again and waits for a boot later than
// the new request, so a node that boots in time for the first request is
// marked DOWN at ResumeTimeout. Between the cycle's read and the action
// Slurm may have resumed the node for a job it allocated there; the read
// here narrows that window to one command.
func (w *PowerWriter) SetPower(ctx context.Context, node string, up bool) error {
	// A name starting with '-' would reach scontrol's option parser as
	// `show node -o NAME` (getopt permutes): -M would read another
	// cluster's node.
	if node == "" || strings.ContainsAny(node, " \t\n=,[]") || strings.HasPrefix(node, "-") {
		return fmt.Errorf("power: node name %q: want one plain node name", node)
	}
	state := "POWER_DOWN"
	if up {
		state = "POWER_UP"
		flags, err := w.nodeState(ctx, node)
		if err != nil {
			return err
		}
		if !slices.Contains(flags, "POWERED_DOWN") || slices.Contains(flags, "POWERING_UP") || slices.Contains(flags, "POWER_UP") {
			return fmt.Errorf("node %s is %s, powered or already coming up: %w", node, strings.Join(flags, "+"), ErrPowerUpNotSent)
		}
	}
	cctx, cancel := context.WithTimeout(ctx, w.cfg.CmdTimeout)
	defer cancel()
	_, stderr, err := w.cfg.Runner.Run(cctx, nil, w.cfg.Scontrol, "update", "nodename="+node, "state="+state)
	if err != nil {
		var exitErr *exec.ExitError
		msg := strings.TrimSpace(string(stderr))
		if errors.As(err, &exitErr) && msg != "" {
			return fmt.Errorf("%s update nodename=%s state=%s: %s", w.cfg.Scontrol, node, state, msg)
		}
		return fmt.Errorf("%s update nodename=%s state=%s: %w: %s", w.cfg.Scontrol, node, state, err, msg)
	}
	return nil
}

// nodeState reads the node's state as `scontrol show node -o` prints it,
// its base state and flags ("IDLE+POWERED_DOWN" gives IDLE, POWERED_DOWN).
func (w *PowerWriter) nodeState(ctx context.Context, node string) ([]string, error) {
	cctx, cancel := context.WithTimeout(ctx, w.cfg.CmdTimeout)
	defer cancel()
	out, stderr, err := w.cfg.Runner.Run(cctx, nil, w.cfg.Scontrol, "show", "node", "-o", node)
	if err != nil {
		return nil, fmt.Errorf("%s show node -o %s: %w: %s", w.cfg.Scontrol, node, err, strings.TrimSpace(string(stderr)))
	}
	flags, err := parseNodeState(out, node)
	if err != nil {
		return nil, fmt.Errorf("%s show node -o %s: %w", w.cfg.Scontrol, node, err)
	}
	return flags, nil
}

// parseNodeState finds node's line in `scontrol show node -o` output and
// splits its State field. The fields before State are the node's own
// (name, architecture, cores ...); Reason and Comment, which admins and
// scripts write, come after it and may hold anything, so only the first
// State= field counts.
func parseNodeState(out []byte, node string) ([]string, error) {
	for line := range strings.SplitSeq(string(out), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 || f[0] != "NodeName="+node {
			continue
		}
		for _, kv := range f[1:] {
			if v, ok := strings.CutPrefix(kv, "State="); ok {
				if v == "" {
					break
				}
				return strings.Split(v, "+"), nil
			}
		}
		return nil, fmt.Errorf("node %s: no State field in %q", node, line)
	}
	return nil, fmt.Errorf("node %s: not in the output", node)
}

// ScheduledNodes returns, per pending job record, the nodes the backfill
// plan holds for it (squeue %Y).
func (w *PowerWriter) ScheduledNodes(ctx context.Context) (map[int64][]string, error) {
	cctx, cancel := context.WithTimeout(ctx, w.cfg.CmdTimeout)
	defer cancel()
	out, stderr, err := w.cfg.Runner.Run(cctx, nil, w.cfg.Squeue, "-h", "-t", "PD", "-o", "%A %Y")
	if err != nil {
		return nil, fmt.Errorf("scheduled nodes: %s: %v: %s", w.cfg.Squeue, err, strings.TrimSpace(string(stderr)))
	}
	got, err := parseScheduledNodes(out)
	if err != nil {
		return nil, fmt.Errorf("scheduled nodes: %w", err)
	}
	return got, nil
}
