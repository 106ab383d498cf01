package prolog

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
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
		xids []XID
		last uint64
		buf  = make([]byte, 8192)
	)
	for n := 0; ; n++ {
		if n%256 == 0 && ctx.Err() != nil {
			return nil, 0, ctx.Err()
		}
		m, err := syscall.Read(fd, buf)
		if errors.Is(err, syscall.EAGAIN) || (err == nil && m == 0) {
			return xids, last, nil
		}
		if errors.Is(err, syscall.EPIPE) || errors.Is(err, syscall.EINTR) {
			continue
		}
		if err != nil {
			return nil, 0, fmt.Errorf("read kernel log: %w", err)
		}
		seq, msg, ok := parseKmsgRecord(buf[:m])
		if !ok {
			continue
		}
		last = seq
		if x, ok := parseXID(msg); ok {
			x.Seq = seq
			xids = append(xids, x)
		}
	}
}

// parseKmsgRecord splits a /dev/kmsg record, "prio,seq,usec,flags;message\n"
// followed by optional " KEY=value" lines, into its sequence number and
// message.
func parseKmsgRecord(rec []byte) (uint64, string, bool) {
	head, rest, ok := bytes.Cut(rec, []byte{';'})
	if !ok {
		return 0, "", false
	}
	fields := bytes.SplitN(head, []byte{','}, 3)
	if len(fields) < 3 {
		return 0, "", false
	}
	seq, err := strconv.ParseUint(string(fields[1]), 10, 64)
	if err != nil {
		return 0, "", false
	}
	msg, _, _ := bytes.Cut(rest, []byte{'\n'})
	return seq, string(msg), true
}

// parseXID parses the NVIDIA driver's "NVRM: Xid (PCI:0000:3b:00): 79, ..."
// message.
func parseXID(msg string) (XID, bool) {
	const marker = "NVRM: Xid (PCI:"
	i := strings.Index(msg, marker)
	if i < 0 {
		return XID{}, false
	}
	addr, rest, ok := strings.Cut(msg[i+len(marker):], "): ")
	if !ok {
		return XID{}, false
	}
	pci, ok := parsePCI(addr)
	if !ok {
		return XID{}, false
	}
	num := rest
	if j := strings.IndexAny(rest, ", "); j >= 0 {
		num = rest[:j]
	}
	code, err := strconv.Atoi(num)
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
