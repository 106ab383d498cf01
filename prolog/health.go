package prolog

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

// Fault is a hardware fault on one of a job's GPUs: the only reason a
// prolog fails (and Slurm drains the node).
type Fault struct {
	Minor int
	UUID  string // empty when NVML could not say
	What  string
}

// String names the GPU and the fault, for the drain reason and the log.
func (f Fault) String() string {
	if f.UUID == "" {
		return fmt.Sprintf("GPU %d: %s", f.Minor, f.What)
	}
	return fmt.Sprintf("GPU %d (%s): %s", f.Minor, f.UUID, f.What)
}

// Faults judges NVML's health counters. Each returned string is one fault;
// none means healthy. Pending page retirement or row remapping needs a GPU
// reset before the memory is safe again, a failed remapping needs repair, and
// uncorrectable (double-bit) ECC errors since the driver loaded mean a job
// may have computed on corrupt memory: NVIDIA's "GPU Memory Error Management"
// guide treats all of these as reasons to take the GPU out of service.
func (h Health) Faults() []string {
	var out []string
	if h.UncorrectableECC > 0 {
		out = append(out, fmt.Sprintf("%d uncorrectable ECC errors", h.UncorrectableECC))
	}
	if h.RemapFailed {
		out = append(out, "row remapping failed")
	}
	if h.RemapPending {
		out = append(out, "row remapping pending (needs a GPU reset)")
	}
	if h.RetiredPagesPending {
		out = append(out, "page retirement pending (needs a GPU reset)")
	}
	return out
}

// faultXIDs are the XID codes that mean broken or wedged hardware, after
// NVIDIA's "XID Errors" catalogue (docs.nvidia.com/deploy/xid-errors). XIDs
// caused by applications (13, 31, 43, 45, ...) and informational ones (63,
// 92, 94: contained, the pending remap is judged through NVML) are not
// faults.
var faultXIDs = map[int]string{
	48:  "double-bit ECC error",
	61:  "internal micro-controller breakpoint",
	62:  "internal micro-controller halt",
	64:  "ECC page retirement or row remapping failure",
	74:  "NVLink error",
	79:  "GPU has fallen off the bus",
	95:  "uncontained ECC error",
	119: "GSP RPC timeout",
	120: "GSP error",
	140: "unrecovered ECC error",
}

// XID is one NVIDIA XID message from the kernel log.
type XID struct {
	Seq  uint64 // the kernel log record's sequence number
	PCI  PCIAddress
	Code int
}

// Fault returns what the XID means and whether it is a hardware fault.
func (x XID) Fault() (string, bool) {
	what, ok := faultXIDs[x.Code]
	if !ok {
		return "", false
	}
	return fmt.Sprintf("XID %d (%s)", x.Code, what), true
}

// XIDLog reads NVIDIA XID messages from the kernel log.
type XIDLog interface {
	// Read returns the XIDs still in the log and the sequence number of the
	// newest record in it (XIDs or not), so a caller can remember how far it
	// has judged.
	Read(ctx context.Context) ([]XID, uint64, error)
}

// KernelLog is XIDLog over /dev/kmsg (Path), which numbers every record.
type KernelLog struct{ Path string }

// Read reads the whole kernel ring buffer without blocking: each read(2) of
// /dev/kmsg returns one record, EAGAIN means the end, EPIPE means the record
// was overwritten while reading (skip it).
func (k KernelLog) Read(ctx context.Context) ([]XID, uint64, error) {
	f, err := os.OpenFile(k.Path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, 0, fmt.Errorf("open kernel log: %w", err)
	}
	defer f.Close()
	fd := int(f.Fd())
	var (
		acc kmsgXIDs
		buf = make([]byte, 8192)
	)
	for n := 0; ; n++ {
		if n%256 == 0 && ctx.Err() != nil {
			return nil, 0, ctx.Err()
		}
		m, err := syscall.Read(fd, buf)
		if errors.Is(err, syscall.EAGAIN) || (err == nil && m == 0) {
			return acc.xids, acc.last, nil
		}
		if errors.Is(err, syscall.EPIPE) || errors.Is(err, syscall.EINTR) {
			continue
		}
		if err != nil {
			return nil, 0, fmt.Errorf("read kernel log: %w", err)
		}
		acc.add(buf[:m])
	}
}

// kmsgXIDs collects the XIDs of a run of /dev/kmsg records and the newest
// record's sequence number.
type kmsgXIDs struct {
	xids []XID
	last uint64
}

// add judges one record. Only records the kernel itself logged (facility
// 0) can be XIDs: anything else reached the log through a write to
// /dev/kmsg. Within the kernel's records, text a user controls (a
// program's name in a segfault line, a device name) never starts a
// message with the driver's prefix, so parseXID accepts the prefix only at
// the start.
func (a *kmsgXIDs) add(rec []byte) {
	seq, facility, msg, ok := parseKmsgRecord(rec)
	if !ok {
		return
	}
	a.last = seq
	if facility != kernelFacility {
		return
	}
	if x, ok := parseXID(msg); ok {
		x.Seq = seq
		a.xids = append(a.xids, x)
	}
}

// kernelFacility is syslog's LOG_KERN, which the kernel reserves for its
// own messages: a userspace write to /dev/kmsg that asks for it gets
// LOG_USER instead.
const kernelFacility = 0

// parseKmsgRecord splits a /dev/kmsg record, "prio,seq,usec,flags;message\n"
// followed by optional " KEY=value" lines, into its sequence number, syslog
// facility (prio >> 3) and message.
func parseKmsgRecord(rec []byte) (seq uint64, facility int, msg string, ok bool) {
	head, rest, ok := bytes.Cut(rec, []byte{';'})
	if !ok {
		return 0, 0, "", false
	}
	fields := bytes.SplitN(head, []byte{','}, 4)
	if len(fields) < 3 {
		return 0, 0, "", false
	}
	prio, err := strconv.ParseUint(string(fields[0]), 10, 32)
	if err != nil {
		return 0, 0, "", false
	}
	seq, err = strconv.ParseUint(string(fields[1]), 10, 64)
	if err != nil {
		return 0, 0, "", false
	}
	m, _, _ := bytes.Cut(rest, []byte{'\n'})
	return seq, int(prio >> 3), string(m), true
}

// xidPattern is the NVIDIA driver's XID message, anchored at the start of
// the record: "NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, ..." (older
// drivers: "NVRM: Xid (PCI:0000:18:00): 13 Graphics ..."). Compiled on first
// use, not at the start of every hook process.
var xidPattern = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^NVRM: Xid \(PCI:([0-9a-fA-F]{4,8}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}(?:\.[0-7])?)\): ([0-9]{1,4})(?:[, ]|$)`)
})

// parseXID parses the NVIDIA driver's XID message.
func parseXID(msg string) (XID, bool) {
	m := xidPattern().FindStringSubmatch(msg)
	if m == nil {
		return XID{}, false
	}
	pci, ok := parsePCI(m[1])
	if !ok {
		return XID{}, false
	}
	code, err := strconv.Atoi(m[2])
	if err != nil {
		return XID{}, false
	}
	return XID{PCI: pci, Code: code}, true
}

// parsePCI parses "0000:3b:00" or "0000:3b:00.0" (domain:bus:device[.fn]).
func parsePCI(s string) (PCIAddress, bool) {
	s, _, _ = strings.Cut(s, ".")
	parts := strings.Split(s, ":")
	if len(parts) != 3 {
		return PCIAddress{}, false
	}
	var v [3]uint64
	for i, p := range parts {
		n, err := strconv.ParseUint(p, 16, 32)
		if err != nil {
			return PCIAddress{}, false
		}
		v[i] = n
	}
	return PCIAddress{Domain: uint32(v[0]), Bus: uint32(v[1]), Device: uint32(v[2])}, true
}
