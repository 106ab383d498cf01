package accounting

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/fairway-hpc/fairway/internal/input"
	"github.com/fairway-hpc/fairway/policy"
)

// sacctReader decodes a `sacct --json` document one job record at a time,
// so that a file of years of history is never held whole (raw and
// decoded: about three times its size). It walks the top-level object
// key by key, as slurmctl's decodeAnswer does, so "jobs" may come before
// or after "errors" and "meta". Because what the envelope says may come
// after the jobs, a caller must not keep the jobs before next has
// returned false and docErr nil.
type sacctReader struct {
	name string
	body *input.Sticky
	dec  *json.Decoder

	started, inJobs, done bool
	sawJobs               bool
	errs                  json.RawMessage // the last "errors" value
	fatal                 error           // the document is not one, or could not be read

	n    int // job records met so far
	at   int // index of the current job
	job  policy.Job
	skip json.RawMessage // a skipped value, reused

	bad      []error // the bad records, the first maxBad of them (all when maxBad is 0)
	maxBad   int
	badCount int
}

// newSacctReader reads the document r holds, gzip-compressed or not.
// name is used in error locations; maxBad bounds how many bad records'
// errors are kept (0: all).
func newSacctReader(name string, r io.Reader, maxBad int) *sacctReader {
	s := &sacctReader{name: name, maxBad: maxBad}
	br := bufio.NewReaderSize(r, 64<<10)
	src, _, err := input.Gunzip(br)
	if err != nil {
		s.body = &input.Sticky{R: br, Err: err}
		s.fail(err)
		return s
	}
	s.body = &input.Sticky{R: src}
	s.dec = json.NewDecoder(s.body)
	return s
}

// next advances to the next job record that decodes and converts; the
// others are kept as bad records. It returns false at the end of the
// document or when it cannot be read on (docErr says which).
func (s *sacctReader) next() bool {
	for !s.done {
		if !s.inJobs {
			s.step()
			continue
		}
		if !s.dec.More() {
			if _, err := s.dec.Token(); err != nil { // the closing ']'
				s.fail(err)
			}
			s.inJobs = false
			continue
		}
		i := s.n
		s.n++
		var sj sacctJob
		err := s.dec.Decode(&sj)
		var se *json.SyntaxError
		if err != nil && (s.body.Err != nil || errors.As(err, &se) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF)) {
			s.fail(err)
			return false
		}
		j, err := recordJob(s.name, i, &sj, err)
		if err != nil {
			s.badCount++
			if s.maxBad == 0 || len(s.bad) < s.maxBad {
				s.bad = append(s.bad, err)
			}
			continue
		}
		s.job, s.at = j, i
		return true
	}
	return false
}

// step reads the document's next top-level token: its start, a key and
// its value (or, for "jobs", the array's start), or its end.
func (s *sacctReader) step() {
	if !s.started {
		s.started = true
		t, err := s.dec.Token()
		if err != nil {
			s.fail(err)
		} else if d, ok := t.(json.Delim); !ok || d != '{' {
			s.fail(fmt.Errorf("want a JSON object, got %v", t))
		}
		return
	}
	if !s.dec.More() {
		if _, err := s.dec.Token(); err != nil { // the closing '}'
			s.fail(err)
			return
		}
		if t, err := s.dec.Token(); err != io.EOF {
			if err == nil {
				err = fmt.Errorf("data after the document: %v", t)
			}
			s.fail(err)
			return
		}
		s.done = true
		return
	}
	t, err := s.dec.Token()
	if err != nil {
		s.fail(err)
		return
	}
	// Keys match as encoding/json matches field names: any case.
	switch key, _ := t.(string); strings.ToLower(key) {
	case "jobs":
		t, err := s.dec.Token()
		if err != nil {
			s.fail(err)
			return
		}
		if t == nil {
			return // "jobs": null is no array
		}
		if d, ok := t.(json.Delim); !ok || d != '[' {
			s.fail(errors.New(`"jobs" is not an array`))
			return
		}
		s.sawJobs, s.inJobs = true, true
	case "errors":
		var raw json.RawMessage
		if err := s.dec.Decode(&raw); err != nil {
			s.fail(err)
		}
		s.errs = raw
	default:
		if err := s.dec.Decode(&s.skip); err != nil {
			s.fail(err)
		}
	}
}

// fail stops the reader: the document cannot be read on.
func (s *sacctReader) fail(err error) {
	s.done, s.inJobs = true, false
	if s.fatal != nil {
		return
	}
	if s.body != nil && s.body.Err != nil {
		s.fatal = fmt.Errorf("read %s: %w", s.name, s.body.Err)
		return
	}
	s.fatal = &RecordError{Where: s.name, Err: fmt.Errorf("not a sacct --json document: %w", err)}
}

// docErr is, once next has returned false, what makes the whole document
// unusable: it could not be read or is not one, sacct reported errors, or
// it has no "jobs" array. Bad records are not: they are in bad.
func (s *sacctReader) docErr() error {
	if s.fatal != nil {
		return s.fatal
	}
	if msgs := restErrors(s.errs); len(msgs) > 0 {
		return fmt.Errorf("%s: sacct reported errors: %s", s.name, strings.Join(msgs, "; "))
	}
	// Every release prints "jobs", an empty window too (with its "Nothing
	// found" error). A document without it is not one: read as no jobs,
	// serve's history sync would move its watermark past a window it never
	// read, and that history would be lost for good.
	if !s.sawJobs && !emptyResult(s.errs) {
		return &RecordError{Where: s.name, Err: errors.New("not a sacct --json document: no \"jobs\" array")}
	}
	return nil
}

// where locates the current job.
func (s *sacctReader) where() string {
	return fmt.Sprintf("%s: jobs[%d] (job %d)", s.name, s.at, s.job.ID)
}

// recordJob converts job record i of the document name, decoded into sj
// with the error decodeErr; the error is a *RecordError locating the
// record.
func recordJob(name string, i int, sj *sacctJob, decodeErr error) (policy.Job, error) {
	where := fmt.Sprintf("%s: jobs[%d]", name, i)
	if decodeErr != nil {
		return policy.Job{}, &RecordError{Where: where, Err: decodeErr}
	}
	j, err := sj.job()
	if err != nil {
		return policy.Job{}, &RecordError{Where: fmt.Sprintf("%s (job %d)", where, sj.JobID.N), Err: err}
	}
	return j, nil
}

// SacctSource is a Source over a `sacct --json` document (gzip-compressed
// or not), decoded one job record at a time as the import reads it. It
// can Rewind when its reader can seek (a file, not a pipe).
//
// A document the import cannot use ends the reading with an error from
// Err: one that is not JSON or not a sacct document, whose errors array
// is not empty, or, without skipBad, one with a job record that does not
// decode (nothing imported then). Import reads its whole input before it
// writes anything, so an error at the end still imports nothing. With
// skipBad the bad records are counted by Skipped and their reasons, the
// first MaxRejects, returned by Bad.
type SacctSource struct {
	r       io.Reader
	name    string
	skipBad bool
	rd      *sacctReader
	err     error
}

// NewSacctSource reads the `sacct --json` document r holds. name is the
// file name for messages ("name: jobs[i] (job N)").
func NewSacctSource(r io.Reader, name string, skipBad bool) *SacctSource {
	return &SacctSource{r: r, name: name, skipBad: skipBad, rd: newSacctReader(name, r, MaxRejects)}
}

// Next implements Source.
func (s *SacctSource) Next() bool {
	if s.rd.next() {
		return true
	}
	s.err = s.rd.docErr()
	if s.err == nil && s.rd.badCount > 0 && !s.skipBad {
		s.err = fmt.Errorf("%w (nothing imported; --skip-bad imports the rest)", s.rd.bad[0])
	}
	return false
}

// Job implements Source.
func (s *SacctSource) Job() policy.Job { return s.rd.job }

// Where implements Source.
func (s *SacctSource) Where() string { return s.rd.where() }

// Err implements Source.
func (s *SacctSource) Err() error { return s.err }

// Skipped implements Source: the job records that did not decode.
func (s *SacctSource) Skipped() int { return s.rd.badCount }

// Bad returns the reasons of the first MaxRejects records that did not
// decode, of the last reading.
func (s *SacctSource) Bad() []error { return s.rd.bad }

// Rewind implements Rewinder by seeking the underlying reader back to its
// start and reading the document anew.
func (s *SacctSource) Rewind() error {
	sk, ok := s.r.(io.Seeker)
	if !ok {
		return errors.New("sacct --json input cannot seek")
	}
	if _, err := sk.Seek(0, io.SeekStart); err != nil {
		return fmt.Errorf("rewind %s: %w", s.name, err)
	}
	s.rd, s.err = newSacctReader(s.name, s.r, MaxRejects), nil
	return nil
}

// drain reads the rest of the document, so that Err says what the whole
// of it holds.
func (s *SacctSource) drain() {
	for s.Next() {
	}
}
