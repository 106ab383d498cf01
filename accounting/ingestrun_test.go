package accounting

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestIngestConfigValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  IngestConfig
		want string // "" for valid
	}{
		{"trace", IngestConfig{From: "swf", NArgs: 1}, ""},
		{"slurmdbd sacct", IngestConfig{From: FromSlurmdbd, Cluster: "c"}, ""},
		{"slurmdbd rest with token", IngestConfig{From: FromSlurmdbd, Cluster: "c", SlurmREST: true, HasToken: true}, ""},
		{"unknown source", IngestConfig{From: "csv", NArgs: 1}, `From "csv": want one of`},
		{"slurmdbd with file", IngestConfig{From: FromSlurmdbd, Cluster: "c", NArgs: 1}, "reads no file"},
		{"slurmdbd no cluster", IngestConfig{From: FromSlurmdbd}, "--cluster: required"},
		{"file missing", IngestConfig{From: FormatSacctJSON}, "needs exactly one FILE"},
		{"rest without token", IngestConfig{From: FromSlurmdbd, Cluster: "c", SlurmREST: true}, "no slurmrestd token"},
		{"negative overlap", IngestConfig{From: FromSlurmdbd, Cluster: "c", Overlap: -time.Second}, "Overlap: must not be negative"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.cfg.Validate()
			if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
				t.Errorf("Validate() = %v, want %q", err, tc.want)
			}
		})
	}
}

func TestIngestSource(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	b, err := os.ReadFile("testdata/sacct-22.05.json")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, file, want, wantErr string
	}{
		{"sacct json", write("jobs.json", string(b)), FormatSacctJSON, ""},
		{"swf", write("t.swf", "; MaxProcs: 8\n1 0 1 10 1 -1 -1 1 60 -1 1 1 1 -1 -1 -1 -1 -1\n"), "swf", ""},
		{"no file", "", "", "--from: give one of slurmdbd"},
		{"stdin", "-", "", "--from: give one of slurmdbd"},
		{"missing file", filepath.Join(dir, "none"), "", "no such file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := IngestSource(tc.file)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("IngestSource = %q, %v; want error %q", got, err, tc.wantErr)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("IngestSource = %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}

func TestParseSince(t *testing.T) {
	for in, want := range map[string]time.Time{
		"2026-10-01":           time.Date(2026, 10, 1, 0, 0, 0, 0, time.UTC),
		"2026-10-01T12:00:00Z": time.Date(2026, 10, 1, 12, 0, 0, 0, time.UTC),
	} {
		if got, err := ParseSince(in); err != nil || !got.Equal(want) {
			t.Errorf("ParseSince(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	if _, err := ParseSince("yesterday"); err == nil || !strings.Contains(err.Error(), `Since "yesterday"`) {
		t.Errorf("ParseSince(yesterday) = %v, want a Since error", err)
	}
}

func TestCountingReaderSeekRestartsCount(t *testing.T) {
	f, err := os.Open("testdata/sacct-22.05.json")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	cr := &countingReader{r: f}
	buf := make([]byte, 100)
	if _, err := cr.Read(buf); err != nil {
		t.Fatal(err)
	}
	if cr.n.Load() != 100 {
		t.Fatalf("count after a 100-byte read = %d", cr.n.Load())
	}
	if _, err := cr.Seek(10, 0); err != nil {
		t.Fatal(err)
	}
	if cr.n.Load() != 10 {
		t.Fatalf("count after seeking to 10 = %d", cr.n.Load())
	}
	if _, err := (&countingReader{r: strings.NewReader("x")}).Seek(0, 0); err != nil {
		t.Fatalf("a strings.Reader seeks: %v", err)
	}
}
