package atomicfile

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
)

var errDisk = errors.New("no space left on the test's disk")

// failAfter is a writer that passes n bytes on to w, then fails, the way a
// full disk fails a write part-way.
type failAfter struct {
	w io.Writer
	n int
}

func (f *failAfter) Write(p []byte) (int, error) {
	if len(p) <= f.n {
		f.n -= len(p)
		return f.w.Write(p)
	}
	k, _ := f.w.Write(p[:f.n])
	f.n = 0
	return k, errDisk
}

// names is the directory's entries, sorted.
func names(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var ns []string
	for _, e := range es {
		ns = append(ns, e.Name())
	}
	return ns
}

// TestFile: a commit replaces the old file (or makes a new one); a failed
// write of the file or abandoning it leaves the old file byte for byte and
// no temporary file beside it, and Commit's error names the file once.
func TestFile(t *testing.T) {
	old := []byte(`{"old": "policy file, still wanted"}` + "\n")
	neu := bytes.Repeat([]byte("new contents, long enough to fail part-way\n"), 100)
	for _, tc := range []struct {
		name    string
		noOld   bool
		write   func(a *File) error // nil: write neu and Commit
		wantErr string              // "" for none; else the error's text after "write PATH: "
	}{
		{name: "commit replaces"},
		{name: "commit creates", noOld: true},
		{name: "the file's write fails", write: func(a *File) error {
			a.f.Close() // Write now fails as a full disk's would, naming the temporary file
			if _, err := a.Write(neu); err == nil {
				t.Error("Write to a closed file: no error")
			}
			return a.Commit()
		}, wantErr: "file already closed"},
		{name: "abandoned", write: func(a *File) error {
			if _, err := a.Write(neu); err != nil {
				return err
			}
			a.Abandon()
			if _, err := a.Write(neu); !errors.Is(err, fs.ErrClosed) {
				t.Errorf("Write after Abandon: %v, want ErrClosed", err)
			}
			return a.Commit()
		}, wantErr: "file already closed"},
		{name: "abandoned, no old file", noOld: true, write: func(a *File) error {
			a.Write(neu)
			a.Abandon()
			return nil
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "out.json")
			if !tc.noOld {
				if err := os.WriteFile(path, old, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			a, err := Create(path, 0o644)
			if err != nil {
				t.Fatal(err)
			}
			defer a.Abandon()
			if tc.write == nil {
				if _, err := a.Write(neu); err != nil {
					t.Fatal(err)
				}
				err = a.Commit()
			} else {
				err = tc.write(a)
			}
			want := neu
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("error %v, want none", err)
			case tc.wantErr != "":
				if msg := "write " + path + ": " + tc.wantErr; err == nil || err.Error() != msg {
					t.Errorf("error %v, want %q", err, msg)
				}
				want = old
			case tc.write != nil: // abandoned without an error
				want = old
			}
			got, rerr := os.ReadFile(path)
			switch {
			case tc.noOld && bytes.Equal(want, old):
				if !errors.Is(rerr, fs.ErrNotExist) {
					t.Errorf("%s exists (%v), want none", path, rerr)
				}
			case rerr != nil:
				t.Fatal(rerr)
			case !bytes.Equal(got, want):
				t.Errorf("%s holds %d bytes %.40q..., want %d bytes %.40q...", path, len(got), got, len(want), want)
			}
			wantNames := []string{"out.json"}
			if rerr != nil {
				wantNames = nil
			}
			if ns := names(t, dir); !slices.Equal(ns, wantNames) {
				t.Errorf("directory holds %q, want %q (no temporary file left)", ns, wantNames)
			}
		})
	}
}

// TestWrite: Write and WriteFile commit what the callback writes, or keep
// the old file on its error (a writer layered on the file, as gzip and CSV
// writers are, failing part-way), naming the file once.
func TestWrite(t *testing.T) {
	old := []byte("time,active,total,pending\nold\n")
	for _, tc := range []struct {
		name    string
		write   func(path string) error
		want    string // the file afterwards
		wantErr string // "" for none; else the error's text after "write PATH: "
	}{
		{"WriteFile", func(p string) error { return WriteFile(p, []byte("new\n"), 0o644) }, "new\n", ""},
		{"Write streams", func(p string) error {
			return Write(p, 0o644, func(w io.Writer) error {
				for range 3 {
					if _, err := io.WriteString(w, "row\n"); err != nil {
						return err
					}
				}
				return nil
			})
		}, "row\nrow\nrow\n", ""},
		{"callback fails", func(p string) error {
			return Write(p, 0o644, func(w io.Writer) error {
				io.WriteString(w, "half a ")
				return errDisk
			})
		}, string(old), errDisk.Error()},
		{"writer fails", func(p string) error {
			return Write(p, 0o644, func(w io.Writer) error {
				_, err := (&failAfter{w: w, n: 3}).Write([]byte("new\n"))
				return err
			})
		}, string(old), errDisk.Error()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "seq.csv")
			if err := os.WriteFile(path, old, 0o644); err != nil {
				t.Fatal(err)
			}
			err := tc.write(path)
			if tc.wantErr == "" && err != nil {
				t.Fatal(err)
			}
			if msg := "write " + path + ": " + tc.wantErr; tc.wantErr != "" && (err == nil || err.Error() != msg) {
				t.Errorf("error %v, want %q", err, msg)
			}
			if got, err := os.ReadFile(path); err != nil || string(got) != tc.want {
				t.Errorf("file holds %q (%v), want %q", got, err, tc.want)
			}
			if ns := names(t, dir); !slices.Equal(ns, []string{"seq.csv"}) {
				t.Errorf("directory holds %q, want only seq.csv", ns)
			}
		})
	}
}

// TestCreate_Targets: the permissions a new and an existing file get, a
// symbolic link kept, a device written in place, and the errors of a
// missing directory and a directory as the target.
func TestCreate_Targets(t *testing.T) {
	dir := t.TempDir()
	defer syscall.Umask(syscall.Umask(0o022)) // tests in this package do not run in parallel

	fresh := filepath.Join(dir, "fresh")
	if err := WriteFile(fresh, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(fresh); err != nil || st.Mode().Perm() != 0o644 {
		t.Errorf("new file: %v %v, want mode 0644", st.Mode(), err)
	}
	private := filepath.Join(dir, "private")
	if err := os.WriteFile(private, []byte("old"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := WriteFile(private, []byte("new"), 0o644); err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(private); err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("existing 0600 file: %v %v, want it kept 0600", st.Mode(), err)
	}

	link := filepath.Join(dir, "link")
	if err := os.Symlink("private", link); err != nil {
		t.Fatal(err)
	}
	if err := WriteFile(link, []byte("through the link"), 0o644); err != nil {
		t.Fatal(err)
	}
	if st, err := os.Lstat(link); err != nil || st.Mode()&fs.ModeSymlink == 0 {
		t.Errorf("link: %v %v, want it still a link", st.Mode(), err)
	}
	if b, _ := os.ReadFile(private); string(b) != "through the link" {
		t.Errorf("the link's target holds %q", b)
	}

	if err := WriteFile(os.DevNull, []byte("gone"), 0o644); err != nil {
		t.Errorf("%s: %v", os.DevNull, err)
	}
	if st, err := os.Stat(os.DevNull); err != nil || st.Mode()&fs.ModeCharDevice == 0 {
		t.Errorf("%s is now %v (%v), want the device", os.DevNull, st.Mode(), err)
	}

	missing := filepath.Join(dir, "missing", "out.json")
	if err := WriteFile(missing, []byte("x"), 0o644); err == nil || err.Error() != "write "+missing+": no such file or directory" || !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing directory: %v", err)
	}
	sub := filepath.Join(dir, "sub")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(sub, "keep"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	empty := filepath.Join(dir, "empty")
	if err := os.Mkdir(empty, 0o755); err != nil {
		t.Fatal(err)
	}
	// rename(2) onto a directory says "file exists" or "directory not
	// empty" when it holds files: the error says what the target is.
	for _, d := range []string{sub, empty} {
		if err := WriteFile(d, []byte("x"), 0o644); err == nil || err.Error() != "write "+d+": is a directory" {
			t.Errorf("a directory as the target: %v, want %q", err, "write "+d+": is a directory")
		}
	}
	if ns := names(t, dir); !slices.Equal(ns, []string{"empty", "fresh", "link", "private", "sub"}) {
		t.Errorf("directory holds %q, want no temporary file left", ns)
	}
}

// TestCheck: the errors Create would give, and no file made or changed.
func TestCheck(t *testing.T) {
	dir := t.TempDir()
	old := filepath.Join(dir, "old.json")
	if err := os.WriteFile(old, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, path, want string // want "": no error
	}{
		{"new file", filepath.Join(dir, "new.json"), ""},
		{"existing file", old, ""},
		{"device", os.DevNull, ""},
		{"missing directory", filepath.Join(dir, "missing", "p.json"), "write " + filepath.Join(dir, "missing", "p.json") + ": no such file or directory"},
		{"a directory", dir, "write " + dir + ": is a directory"},
		{"under a file", filepath.Join(old, "p.json"), "write " + filepath.Join(old, "p.json") + ": not a directory"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := Check(tc.path)
			if got := fmt.Sprint(err); (tc.want == "" && err != nil) || (tc.want != "" && got != tc.want) {
				t.Errorf("Check(%s) = %v, want %q", tc.path, err, tc.want)
			}
		})
	}
	if ns := names(t, dir); !slices.Equal(ns, []string{"old.json"}) {
		t.Errorf("directory holds %q, want only old.json", ns)
	}
	if b, err := os.ReadFile(old); err != nil || string(b) != "old" {
		t.Errorf("old.json holds %q (%v), want it unchanged", b, err)
	}
}
