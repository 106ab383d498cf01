package serve

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/fairway-hpc/fairway/policy"
	"github.com/google/go-cmp/cmp"
)

// TestRunner_PolicyFileReloadSeesEveryChange checks changes the stat of
// size, modification time and inode can miss: a file written in place
// with as many bytes whose modification time is then set back (cp -p,
// rsync --inplace -t, a package with fixed times), and a symlink turned to
// another file. Each must rank from the next cycle on.
func TestRunner_PolicyFileReloadSeesEveryChange(t *testing.T) {
	small := policy.LearnedParams{Size: 1, Age: 0.5}
	large := policy.LearnedParams{Size: -1, Age: 0.5}
	encode := func(p policy.LearnedParams) []byte {
		b, err := policy.NewLearnedFile(p).Encode()
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	one := job(1, "a", policy.StatePending, 0)
	four := job(2, "b", policy.StatePending, time.Second)
	four.GPUs = 4
	tests := []struct {
		name   string
		setup  func(t *testing.T, dir string) string // returns the path serve reads
		change func(t *testing.T, dir, path string)
	}{
		{"written in place, same size, mtime set back", func(t *testing.T, dir string) string {
			path := filepath.Join(dir, "policy.json")
			if err := os.WriteFile(path, encode(small), 0o644); err != nil {
				t.Fatal(err)
			}
			return path
		}, func(t *testing.T, dir, path string) {
			fi, err := os.Stat(path)
			if err != nil {
				t.Fatal(err)
			}
			b := encode(large)
			if len(b) != int(fi.Size()) {
				b = bytes.Replace(b, []byte(`"size": -1`), []byte(`"size":-1`), 1) // same length as "size": 1
			}
			if len(b) != int(fi.Size()) {
				t.Fatalf("%d bytes, want %d", len(b), fi.Size())
			}
			if err := os.WriteFile(path, b, 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Chtimes(path, fi.ModTime(), fi.ModTime()); err != nil {
				t.Fatal(err)
			}
		}},
		{"a symlink turned to another file", func(t *testing.T, dir string) string {
			if err := os.WriteFile(filepath.Join(dir, "a.json"), encode(small), 0o644); err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(dir, "policy.json")
			if err := os.Symlink("a.json", path); err != nil {
				t.Fatal(err)
			}
			return path
		}, func(t *testing.T, dir, path string) {
			if err := os.WriteFile(filepath.Join(dir, "b.json"), encode(large), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink("b.json", path+".new"); err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(path+".new", path); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			path := tt.setup(t, dir)
			pf, err := LoadPolicyFile(path)
			if err != nil {
				t.Fatal(err)
			}
			g := newRig(t, Config{}, true)
			if err := g.r.SetPolicyFile(pf); err != nil {
				t.Fatal(err)
			}
			for _, step := range []struct {
				change func()
				want   []int64
			}{
				{func() {}, []int64{1, 2}},
				{func() { tt.change(t, dir, path) }, []int64{2, 1}},
			} {
				step.change()
				res := g.cycle(t, one, four)
				var order []int64
				for _, sc := range res.Ranked {
					order = append(order, sc.JobID)
				}
				if diff := cmp.Diff(step.want, order); diff != "" {
					t.Fatalf("ranking (-want +got):\n%s", diff)
				}
			}
		})
	}
}
