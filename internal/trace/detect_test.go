package trace

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDetect tells each format from the real excerpts, plain and gzipped,
// and says what it wants of a file it cannot place.
func TestDetect(t *testing.T) {
	sdsc, err := os.ReadFile(filepath.Join("testdata", "sdsc-blue-excerpt.swf"))
	if err != nil {
		t.Fatal(err)
	}
	noHeader := strings.SplitN(kthHead, "\n", 2)[1] // records only: 18 fields
	for _, tc := range []struct {
		name string
		in   string
		want Format
	}{
		{"swf header", ctcHead, SWF}, {"swf records only", noHeader, SWF}, {"sdsc", string(sdsc), SWF},
		{"helios", heliosHead, Helios}, {"philly", phillyHead, PhillyMIX},
		{"blank lines first", "\n\n" + phillyHead, PhillyMIX},
	} {
		for _, gz := range []bool{false, true} {
			in := []byte(tc.in)
			if gz {
				in = gzipBytes(t, in)
			}
			got, err := Detect(bytes.NewReader(in), "t")
			if err != nil || got != tc.want {
				t.Errorf("%s (gzip %v): %q, %v; want %q", tc.name, gz, got, err, tc.want)
			}
		}
	}
	for _, bad := range []string{"", "a,b,c\n1,2,3\n", "1 2 3\n"} {
		if f, err := Detect(strings.NewReader(bad), "t"); err == nil || !strings.Contains(err.Error(), "--format") && bad != "" {
			t.Errorf("Detect(%q) = %q, %v; want an error saying to give --format", bad, f, err)
		}
	}
}

func TestFileFormat(t *testing.T) {
	path := filepath.Join(t.TempDir(), "philly.csv")
	if err := os.WriteFile(path, []byte(phillyHead), 0o600); err != nil {
		t.Fatal(err)
	}
	if f, err := FileFormat(path, ""); err != nil || f != PhillyMIX {
		t.Errorf("told from the file: %q, %v; want philly-mix", f, err)
	}
	if f, err := FileFormat(path, "helios"); err != nil || f != Helios {
		t.Errorf("named: %q, %v; want helios, whatever the file holds", f, err)
	}
	if _, err := FileFormat(path, "csv"); err == nil || !strings.HasPrefix(err.Error(), "--format: ") {
		t.Errorf("unknown name: %v, want a --format error", err)
	}
	if _, err := FileFormat(filepath.Join(t.TempDir(), "none.swf"), ""); err == nil || !strings.HasPrefix(err.Error(), "--trace: trace ") || !strings.HasSuffix(err.Error(), ": no such file") {
		t.Errorf("missing file: %v, want a --trace error", err)
	}
}

// TestFileFormat_NotAFile: a directory is named as one, and a pipe
// (`--trace <(zcat t.swf.gz)`) is refused unless --format is given: telling
// its format reads its first lines, which the reader then never sees, and
// it would start mid-file, the header (MaxProcs) and first jobs lost.
func TestFileFormat_NotAFile(t *testing.T) {
	dir := t.TempDir()
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	go func() {
		pw.WriteString("; MaxProcs: 100\n")
		pw.Close()
	}()
	pipe := fmt.Sprintf("/dev/fd/%d", pr.Fd())
	for _, tc := range []struct {
		name, path, named string
		want              string // "" : no error
	}{
		{"a directory", dir, "", "--trace: trace " + dir + ": is a directory"},
		{"a pipe", pipe, "", "--trace: trace " + pipe + " is not a regular file (a pipe?): its format cannot be told without reading it twice; give --format"},
		{"a pipe, named", pipe, "swf", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := FileFormat(tc.path, tc.named)
			if got := fmt.Sprint(err); (tc.want == "" && err != nil) || (tc.want != "" && got != tc.want) {
				t.Errorf("FileFormat(%s, %q) = %v, want %q", tc.path, tc.named, err, tc.want)
			}
		})
	}
}

// TestNewReader_Directory: the error names the directory once.
func TestNewReader_Directory(t *testing.T) {
	dir := t.TempDir()
	f, err := os.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	_, err = ReadAll(f, SWF, Options{Name: dir})
	if want := "read " + dir + ": is a directory"; err == nil || err.Error() != want {
		t.Errorf("ReadAll(directory) = %v, want %q", err, want)
	}
}
