package prolog

import (
	"context"
	"os"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseKmsgRecord(t *testing.T) {
	seq, fac, msg, ok := parseKmsgRecord([]byte("4,2207,123456789,-;NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, GPU has fallen off the bus.\n SUBSYSTEM=pci\n"))
	if !ok || seq != 2207 || fac != 0 || msg != "NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, GPU has fallen off the bus." {
		t.Fatalf("got %d %d %q %v", seq, fac, msg, ok)
	}
	if _, fac, _, ok := parseKmsgRecord([]byte("13,2208,123456790,-;written by a program")); !ok || fac != 1 {
		t.Errorf("LOG_USER record: facility %d ok %v, want 1 true", fac, ok)
	}
	for _, bad := range []string{"no separator", "4,x,1,-;msg", "4;msg", "x,1,1,-;msg"} {
		if _, _, _, ok := parseKmsgRecord([]byte(bad)); ok {
			t.Errorf("parseKmsgRecord(%q) ok, want not", bad)
		}
	}
}

func TestParseXID(t *testing.T) {
	tests := []struct {
		msg    string
		want   XID
		wantOK bool
	}{
		{"NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, GPU has fallen off the bus.", XID{PCI: PCIAddress{0, 0x3b, 0}, Code: 79}, true},
		{"NVRM: Xid (PCI:0001:b1:00.0): 48, pid='<unknown>', An uncorrectable double bit error", XID{PCI: PCIAddress{1, 0xb1, 0}, Code: 48}, true},
		{"NVRM: Xid (PCI:0000:18:00): 13 Graphics SM Warp Exception", XID{PCI: PCIAddress{0, 0x18, 0}, Code: 13}, true},
		{"NVRM: GPU at PCI:0000:3b:00: GPU-abc", XID{}, false},
		{"NVRM: Xid (PCI:zz:3b:00): 79, x", XID{}, false},
		{"usb 1-1: new device", XID{}, false},
		// The prefix counts only at the start of the message.
		{"x NVRM: Xid (PCI:0000:3b:00): 79, x", XID{}, false},
		{"NVRM: Xid (PCI:0000:3b:00): 79x", XID{}, false},
	}
	for _, tt := range tests {
		got, ok := parseXID(tt.msg)
		if ok != tt.wantOK {
			t.Errorf("parseXID(%q) ok = %v, want %v", tt.msg, ok, tt.wantOK)
			continue
		}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("parseXID(%q) (-want +got):\n%s", tt.msg, diff)
		}
	}
}

func TestXID_Fault(t *testing.T) {
	if what, ok := (XID{Code: 79}).Fault(); !ok || what != "XID 79 (GPU has fallen off the bus)" {
		t.Errorf("XID 79: %q %v", what, ok)
	}
	for _, code := range []int{13, 31, 43, 63, 94} {
		if what, ok := (XID{Code: code}).Fault(); ok {
			t.Errorf("XID %d judged a hardware fault (%q); it is not", code, what)
		}
	}
}

func TestHealth_Faults(t *testing.T) {
	if f := (Health{}).Faults(); len(f) != 0 {
		t.Errorf("healthy: %v", f)
	}
	got := Health{UncorrectableECC: 2, RemapPending: true, RemapFailed: true, RetiredPagesPending: true}.Faults()
	want := []string{"2 uncorrectable ECC errors", "row remapping failed", "row remapping pending (needs a GPU reset)", "page retirement pending (needs a GPU reset)"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

// TestKernelLog_Read reads this machine's real /dev/kmsg, when it may.
func TestKernelLog_Read(t *testing.T) {
	if _, err := os.Stat("/dev/kmsg"); err != nil {
		t.Skip("no /dev/kmsg")
	}
	_, last, err := KernelLog{Path: "/dev/kmsg"}.Read(context.Background())
	if os.IsPermission(err) {
		t.Skip("kernel log not readable here")
	}
	if err != nil {
		t.Fatal(err)
	}
	if last == 0 {
		t.Error("kernel log read, but no record sequence number seen")
	}
}

// segfaultRecords are /dev/kmsg records of the kernel's own segfault
// report (arch/x86/mm/fault.c show_signal_msg: "<comm>[pid]: segfault at
// ADDR ip IP sp SP error N in <file>[BASE+SIZE]", comm cut to 15 bytes)
// for programs a user named like an XID message: the whole name, and the
// name behind one character so the file name, not comm, carries it.
var segfaultRecords = []string{
	"6,5001,912345678,-;NVRM: Xid (PCI:[4242]: segfault at 0 ip 0000000000401126 sp 00007ffc3a1f2e40 error 6 in NVRM: Xid (PCI:0000:3b:00): 79, x[401000+1000] likely on CPU 3 (core 3, socket 0)\n SUBSYSTEM=cpu\n",
	"6,5002,912345690,-;xNVRM: Xid (PC[4243]: segfault at 0 ip 0000000000401126 sp 00007ffc3a1f2e40 error 6 in xNVRM: Xid (PCI:0000:3b:00): 79, x[401000+1000]\n",
	// The same text written into /dev/kmsg by a program gets LOG_USER.
	"14,5003,912345700,-;NVRM: Xid (PCI:0000:3b:00): 79, pid=1, GPU has fallen off the bus.\n",
}

// TestKmsgXIDs_SegfaultNamedLikeXID: a crashing program named like an XID
// message yields no XID (it used to read as XID 79 and drain the node).
func TestKmsgXIDs_SegfaultNamedLikeXID(t *testing.T) {
	var a kmsgXIDs
	for _, r := range segfaultRecords {
		a.add([]byte(r))
	}
	if len(a.xids) != 0 || a.last != 5003 {
		t.Fatalf("got XIDs %+v, last %d; want none, last 5003", a.xids, a.last)
	}
	a.add([]byte("3,5004,912345800,-;NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, name=python, GPU has fallen off the bus.\n"))
	want := []XID{{Seq: 5004, PCI: PCIAddress{0, 0x3b, 0}, Code: 79}}
	if diff := cmp.Diff(want, a.xids); diff != "" {
		t.Errorf("the driver's own XID (-want +got):\n%s", diff)
	}
}
