package accounting

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/fairway-hpc/fairway/internal/trace"
)

// FormatSacctJSON is FileImport.Format for a `sacct --json` document; the
// other formats are internal/trace's.
const FormatSacctJSON = "sacct-json"

// FileImport says what a file holds and how to import it.
type FileImport struct {
	Format  string // FormatSacctJSON or a trace.Format
	Name    string // for messages, and a trace's default cluster
	Cluster string // a trace's cluster; "": named after the file
	SkipBad bool   // import the good records of a file with bad ones
	Phase   func(string)
}

// ImportFile imports a `sacct --json` document or a workload trace read
// from r. It returns the import's summary and, for a trace, the cluster its
// jobs were filed under. Without SkipBad, a bad record imports nothing and
// the error says so.
func (s *Store) ImportFile(ctx context.Context, r io.Reader, f FileImport) (Summary, string, error) {
	opt := ImportOptions{Source: f.Format, SkipBad: f.SkipBad, Phase: f.Phase}
	if f.Format == FormatSacctJSON {
		src := NewSacctSource(r, f.Name, f.SkipBad)
		sum, err := s.Import(ctx, src, opt)
		if err != nil && IsBadInput(err) && !f.SkipBad {
			// An invalid job stopped the import part way: the rest of the
			// document may be no document at all, or hold a record that
			// does not decode, which is what to report (as when the whole
			// file was decoded before the import).
			src.drain()
			if serr := src.Err(); serr != nil {
				return Summary{}, "", serr
			}
		}
		for _, e := range src.Bad() {
			if len(sum.Rejects) >= MaxRejects {
				break
			}
			sum.Rejects = append(sum.Rejects, e)
		}
		return sum, "", err
	}
	cluster := f.Cluster
	if cluster == "" {
		cluster = TraceCluster(f.Name)
	}
	src, err := NewTraceSource(r, trace.Format(f.Format), f.Name, cluster, f.SkipBad)
	if err != nil {
		return Summary{}, cluster, err
	}
	sum, err := s.Import(ctx, src, opt)
	for _, e := range src.SkipReasons() {
		if len(sum.Rejects) >= MaxRejects {
			break
		}
		sum.Rejects = append(sum.Rejects, e)
	}
	sum.LeftOut = src.LeftOut()
	if sum.LeftOut == nil {
		sum.LeftOut = map[string]int{} // read from a trace: "left out: none"
	}
	if IsBadInput(err) && !f.SkipBad {
		return sum, cluster, fmt.Errorf("%w (nothing imported; --skip-bad imports the rest)", err)
	}
	return sum, cluster, err
}

// IsBadInput reports whether err is about the input rather than the
// database.
func IsBadInput(err error) bool {
	return errors.Is(err, trace.ErrMalformed) || errors.Is(err, ErrMalformed) || errors.Is(err, ErrInvalidJob)
}

// TraceCluster names a trace's cluster after its file:
// KTH-SP2-filtered.swf.gz gives KTH-SP2-filtered.
func TraceCluster(name string) string {
	base := filepath.Base(name)
	for _, ext := range []string{".gz", ".swf", ".csv", ".log", ".txt"} {
		base = strings.TrimSuffix(base, ext)
	}
	return base
}
