package slurmctl

import (
	"errors"
	"strings"
	"testing"
)

// TestDecodeList_EveryShape: the node and partition answers of every API
// shape (v0.0.38's flat partitions, v0.0.40+'s nested ones) go through one
// decoder, so each treats a refusal, a missing list and a body that is not
// the answer alike: Slurm's errors come back in the envelope with no list
// and no error; the other two are ErrMalformed naming what is wrong.
func TestDecodeList_EveryShape(t *testing.T) {
	parsers := map[string]func([]byte) (int, *envelope, error){
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
