package slurmctl

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

// TestDecodeList_EveryShape: the job, node and partition answers of every
// API shape (v0.0.38's flat partitions, v0.0.40+'s nested ones) go through
// one envelope decoder (decodeAnswer; jobs streamed record by record), so each treats a refusal, a missing list and a body that is not
// the answer alike: Slurm's errors come back in the envelope with no list
// and no error; the other two are ErrMalformed naming what is wrong.
func TestDecodeList_EveryShape(t *testing.T) {
	parsers := map[string]func([]byte) (int, *envelope, error){
		"jobs":  func(b []byte) (int, *envelope, error) { j, e, err := parseJobs(b); return len(j), e, err },
		"nodes": func(b []byte) (int, *envelope, error) { n, e, err := parseNodes(b); return len(n), e, err },
		"partitions v0.0.38": func(b []byte) (int, *envelope, error) {
			p, e, err := parsePartitions(b, V0038)
			return len(p), e, err
		},
		"partitions v0.0.41": func(b []byte) (int, *envelope, error) {
			p, e, err := parsePartitions(b, V0041)
			return len(p), e, err
		},
	}
	for name, parse := range parsers {
		what := strings.Fields(name)[0]
		t.Run(name, func(t *testing.T) {
			n, env, err := parse([]byte(`{"meta":{"slurm":{"release":"24.11.7"}},"errors":[{"error_number":1001,"error":"Unable to contact slurm controller"}]}`))
			if err != nil || n != 0 || env == nil || len(env.Errors) != 1 || env.Errors[0].ErrorNumber == nil || *env.Errors[0].ErrorNumber != 1001 || env.Meta.Slurm.Release != "24.11.7" {
				t.Errorf("refusal: %d items, envelope %+v, %v; want its error in the envelope and no error", n, env, err)
			}
			n, env, err = parse([]byte(`{"meta":{},"errors":[],"` + what + `":[]}`))
			if err != nil || n != 0 || env == nil {
				t.Errorf("empty list: %d items, envelope %+v, %v; want none and no error", n, env, err)
			}
			_, env, err = parse([]byte(`{"meta":{},"errors":[]}`))
			if !errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), `no "`+what+`" array`) || env == nil {
				t.Errorf("missing list: envelope %+v, %v; want ErrMalformed naming %q and the envelope", env, err, what)
			}
			_, env, err = parse([]byte(`[1,2]`))
			if !errors.Is(err, ErrMalformed) || !strings.HasPrefix(err.Error(), ErrMalformed.Error()+": "+what+": ") || env != nil {
				t.Errorf("not an answer: envelope %+v, %v; want ErrMalformed naming %q and no envelope", env, err, what)
			}
		})
	}
}

// TestDecodeAnswer_OneEnvelope: every REST answer, whatever its payload
// (a streamed list, a list, a payload handed on undecoded, an update's
// results, none), reads its envelope the same way: keys matched as
// encoding/json matches them, Slurm's errors and warnings kept, and a body
// that is not one JSON object refused.
func TestDecodeAnswer_OneEnvelope(t *testing.T) {
	env := `"Meta":{"slurm":{"release":"25.05.1"}},"ERRORS":[],"Warnings":[{"description":"w1"}]`
	readers := map[string]func(string) (*envelope, error){
		"jobs":   func(b string) (*envelope, error) { _, e, err := parseJobs([]byte(b)); return e, err },
		"nodes":  func(b string) (*envelope, error) { _, e, err := parseNodes([]byte(b)); return e, err },
		"shares": func(b string) (*envelope, error) { return payloadEnvelope([]byte(b), "shares") },
		"results": func(b string) (*envelope, error) {
			return decodeAnswer(strings.NewReader(b), "job update", func(key string, dec *json.Decoder) (bool, error) {
				if key != "results" {
					return false, nil
				}
				var rs []any
				return true, dec.Decode(&rs)
			})
		},
		"ping": func(b string) (*envelope, error) { return decodeAnswer(strings.NewReader(b), "ping", nil) },
	}
	for what, read := range readers {
		t.Run(what, func(t *testing.T) {
			e, err := read(`{` + env + `,"` + what + `":[],"other":{"x":[1]}}`)
			if err != nil || e == nil || e.Meta.Slurm.Release != "25.05.1" || len(e.Warnings) != 1 || e.Warnings[0].Description != "w1" {
				t.Errorf("envelope %+v, %v; want release 25.05.1 and warning w1", e, err)
			}
			if _, err := read(`{` + env + `,"` + what + `":[]} {"trailing":1}`); !errors.Is(err, ErrMalformed) {
				t.Errorf("trailing data: %v, want ErrMalformed", err)
			}
			if _, err := read(`{"errors":{"not":"a list"},"` + what + `":[]}`); !errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), what+": ") && what != "results" && what != "ping" {
				t.Errorf("bad errors field: %v, want ErrMalformed naming %s", err, what)
			}
		})
	}
}

// TestShares_V0038NamesTheWayOut: v0.0.38 has no /shares; the refusal is
// an ErrVersion whose way out a caller may word (cmd names its command).
func TestShares_V0038NamesTheWayOut(t *testing.T) {
	_, err := (&Client{version: V0038}).Shares(t.Context())
	var ns *NoSharesError
	if !errors.Is(err, ErrVersion) || !errors.As(err, &ns) || !strings.HasSuffix(err.Error(), "use the share tree from slurmdbd (sacctmgr) here") {
		t.Errorf("Shares on v0.0.38: %v, want a NoSharesError naming slurmdbd", err)
	}
}
