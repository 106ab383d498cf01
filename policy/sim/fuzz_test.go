package sim

import (
	"slices"
	"strings"
	"testing"
)

// FuzzParseLayout feeds ParseLayout arbitrary text as the --partitions
// SPEC an admin types (or the file it names). Seeds are the specs of
// partition_test.go. An accepted layout must pass validate, name its
// partitions once each, and read back from its String (which reports
// print) as the same nodes with the same default partition. Run it with
//
//	go test -run '^$' -fuzz '^FuzzParseLayout$' -fuzztime 10m -parallel 1 ./policy/sim
func FuzzParseLayout(f *testing.F) {
	for _, s := range []string{
		"gpu:nodes=120,per-node=8,type=v100;debug:nodes=4,per-node=8",
		"gpu:nodes=2,per-node=8,type=v100\ngpu:nodes=1,per-node=4,type=a100 # small\n\n  debug:nodes=1,per-node=8 ;",
		"a:nodes=1,per-node=4;b:nodes=2,per-node=4;all:of=a+b",
		"a+b:nodes=1, per-node = 4",
		"a:nodes=1,per-node=4;b:nodes=1,per-node=8;a:of=b;c:of=a",
		"a:nodes=1,per-node=4;b:nodes=1,per-node=8;b:of=a;a:of=b",
		"all:of=gpu+debug\ngpu:nodes=3,per-node=8\ndebug:nodes=1,per-node=2",
		"gpu:nodes=1,per-node=8;all:of=gpu,nodes=2",
		"gpu:nodes=1,nodes=2,per-node=8",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, spec string) {
		l, err := ParseLayout(spec)
		if err != nil {
			if msg := err.Error(); !strings.HasPrefix(msg, "partition") && !strings.HasPrefix(msg, "line ") {
				t.Fatalf("error %q does not say it is about the partitions", msg)
			}
			return
		}
		checkLayout(t, l)
		text := l.String()
		back, err := ParseLayout(text)
		if err != nil {
			t.Fatalf("%q read as %q, which does not read back: %v", spec, text, err)
		}
		if back.Partitions[0] != l.Partitions[0] {
			t.Fatalf("%q read as %q: default partition %q, read back %q", spec, text, l.Partitions[0], back.Partitions[0])
		}
		if len(back.Nodes) != len(l.Nodes) || len(back.Partitions) != len(l.Partitions) {
			t.Fatalf("%q read as %q: %d nodes in %d partitions, read back %d in %d", spec, text,
				len(l.Nodes), len(l.Partitions), len(back.Nodes), len(back.Partitions))
		}
		for i := range l.Nodes {
			a, b := l.Nodes[i], back.Nodes[i]
			if a.Units != b.Units || a.Type != b.Type || !slices.Equal(partNames(l, a), partNames(back, b)) {
				t.Fatalf("%q read as %q: node %d %+v, read back %+v", spec, text, i, a, b)
			}
		}
	})
}

// checkLayout holds what ParseLayout promises of a layout it accepts.
func checkLayout(t *testing.T, l *Layout) {
	t.Helper()
	if err := l.validate(); err != nil {
		t.Fatalf("accepted layout is invalid: %v", err)
	}
	if len(l.Nodes) > 1<<20 {
		t.Fatalf("%d nodes", len(l.Nodes))
	}
	seen := map[string]bool{}
	for _, p := range l.Partitions {
		if !validName(p) || seen[p] {
			t.Fatalf("partitions %q: a bad or repeated name", l.Partitions)
		}
		seen[p] = true
	}
	for i, nd := range l.Nodes {
		if nd.Units > 1<<20 || nd.Type != "" && !validName(nd.Type) {
			t.Fatalf("node %d: %+v", i, nd)
		}
		ps := slices.Clone(nd.Partitions)
		slices.Sort(ps)
		if len(slices.Compact(ps)) != len(nd.Partitions) {
			t.Fatalf("node %d: partitions %v repeat", i, nd.Partitions)
		}
	}
}

// partNames is nd's partitions by name, sorted.
func partNames(l *Layout, nd Node) []string {
	var out []string
	for _, p := range nd.Partitions {
		out = append(out, l.Partitions[p])
	}
	slices.Sort(out)
	return out
}
