package nvmltest

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
)

// RunSpec puts the processes named by spec on the machine's GPUs as running
// compute processes, so a lab test can make real PIDs appear on a mock GPU.
// spec is "MINOR:PID[,PID...]" entries separated by ';', MINOR a device
// minor or "*" for every GPU, e.g. "2:4711,4712;*:4800". An empty spec puts
// nothing. A malformed entry, a minor the machine lacks or a PID of 1 or
// below is an error naming it, and then no process is put anywhere.
func (m *Machine) RunSpec(spec string) error {
	type placed struct {
		g   *GPU
		pid uint32
	}
	var all []placed
	for entry := range strings.SplitSeq(spec, ";") {
		entry = strings.TrimSpace(entry)
		if entry == "" {
			continue
		}
		gpu, pids, ok := strings.Cut(entry, ":")
		if !ok {
			return fmt.Errorf("process spec %q: want MINOR:PID[,PID...]", entry)
		}
		var gs []*GPU
		if gpu = strings.TrimSpace(gpu); gpu == "*" {
			gs = m.GPUs
		} else {
			minor, err := strconv.Atoi(gpu)
			if err != nil {
				return fmt.Errorf("process spec %q: GPU %q is neither a minor number nor *", entry, gpu)
			}
			g := m.ByMinor(minor)
			if g == nil {
				return fmt.Errorf("process spec %q: no GPU with minor %d", entry, minor)
			}
			gs = []*GPU{g}
		}
		for p := range strings.SplitSeq(pids, ",") {
			pid, err := strconv.ParseUint(strings.TrimSpace(p), 10, 32)
			if err != nil || pid <= 1 {
				return fmt.Errorf("process spec %q: PID %q is not a number above 1", entry, p)
			}
			for _, g := range gs {
				all = append(all, placed{g, uint32(pid)})
			}
		}
	}
	for _, p := range all {
		p.g.Run(p.pid, nvml.AccountingStats{})
	}
	return nil
}
