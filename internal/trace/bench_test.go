package trace

import (
	"compress/gzip"
	"io"
	"os"
	"path/filepath"
	"testing"
)

// BenchmarkReadAll reads Philly-MIX1 whole (30,940 jobs) as `fairway
// simulate --trace` does: from the shipped gzip file, and from the same
// text uncompressed in a file (as contrib/helios/compare hands each
// virtual cluster to fairway), where ReadAll sizes its one slice from the
// file's length.
func BenchmarkReadAll(b *testing.B) {
	gz := filepath.Join(tracesDir(b), "Philly-MIX1.csv.gz")
	plain := filepath.Join(b.TempDir(), "Philly-MIX1.csv")
	if err := gunzipTo(gz, plain); err != nil {
		b.Fatal(err)
	}
	for _, in := range []struct{ name, path string }{{"gzip", gz}, {"plain", plain}} {
		b.Run(in.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				f, err := os.Open(in.path)
				if err != nil {
					b.Fatal(err)
				}
				tr, err := ReadAll(f, PhillyMIX, Options{Name: in.name})
				f.Close()
				if err != nil {
					b.Fatal(err)
				}
				if len(tr.Jobs) != 30940 {
					b.Fatalf("%d jobs, want 30940", len(tr.Jobs))
				}
			}
		})
	}
}

func gunzipTo(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	zr, err := gzip.NewReader(in)
	if err != nil {
		return err
	}
	out, err := os.Create(dst)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, zr); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
