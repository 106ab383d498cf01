package policy

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

// FileVersion is the policy file format this Fairway writes. It reads
// that one and every earlier one (fileFeatures); a later one is refused:
// a file's meaning may change with it.
//
// Version 2 added the learned family's effective feature. A version 1
// file, which predates it, lists the other six and runs with the
// effective exponent 0, as it was fitted.
const FileVersion = 2

// fileFeatures are the learned family's features a file of format
// version v lists, in the family's order: every feature but those added
// after v.
func fileFeatures(v int) []string {
	names := learnedNames()
	if v < 2 {
		names = slices.DeleteFunc(names, func(n string) bool { return n == "effective" })
	}
	return names
}

// ErrPolicyFile is the error of a policy file that cannot be used; the
// message names the problem.
var ErrPolicyFile = errors.New("bad policy file")

// File is a policy file: a point of a registered family, with what it
// was fitted on and how it did. `fairway tune` writes it; serve,
// simulate, explain and queue load it. JSON, one object.
type File struct {
	// Version is FileVersion.
	Version int `json:"format_version"`
	// Family is the registered family the parameters are a point of
	// ("learned").
	Family string `json:"family"`
	// Features lists the family's features the file was fitted with, in
	// the family's order; every one the family has must be there.
	Features []string `json:"features"`
	// Parameters holds each feature's exponent, by feature name. Kept as
	// written so that a value no float64 holds is named, not rounded.
	Parameters map[string]json.Number `json:"parameters"`
	// TrainedOn says which history the parameters were fitted on.
	TrainedOn TrainedOn `json:"trained_on"`
	// Objective is what the fit minimised, e.g. "bsld subject to avg
	// wait ≤ fairshare, Jain ≥ fairshare − 0.01, max ρ ≤ fairshare".
	Objective string `json:"objective"`
	// Validation is how every compared policy did on the held-out part
	// of the history.
	Validation []ValidationRow `json:"validation,omitempty"`
	// Tuning says how the search ran, so that it can be repeated.
	Tuning *Tuning `json:"tuning,omitempty"`
}

// Tuning is how `fairway tune` searched: the same trace, windows, seed,
// population and generations give the same parameters (a wall-time
// budget that stops the search earlier may not).
type Tuning struct {
	Method      string `json:"method"`
	Seed        uint64 `json:"seed"`
	Population  int    `json:"population"`
	Generations int    `json:"generations"`
	Evaluations int    `json:"evaluations"`
	// Stopped says why the search ended: budget, generations or converged.
	Stopped string `json:"stopped"`
	// Windows describes the training and validation windows.
	Windows string `json:"windows"`
	// KeptStart is set when no point beat the start (fair-sjf's) on the
	// validation window, and the start was kept.
	KeptStart bool `json:"kept_start"`
	// Start holds the start's exponents, by feature name.
	Start map[string]float64 `json:"start,omitempty"`
	// SearchFrom names the point the search started from: "start" or
	// one of the family's heuristics (an anchor).
	SearchFrom string `json:"search_from,omitempty"`
	// SearchedEffective is set when the search moved the effective
	// feature's exponent too (tune --effective); otherwise it stayed 0.
	SearchedEffective bool `json:"searched_effective,omitempty"`
}

// TrainedOn is the history a policy file was fitted on.
type TrainedOn struct {
	Cluster string    `json:"cluster"`
	From    time.Time `json:"from"` // earliest submit time of the training jobs
	To      time.Time `json:"to"`   // latest submit time of the training jobs
	Jobs    int       `json:"jobs"`
	Source  string    `json:"source,omitempty"` // trace file or "accounting database"
}

// String says in one line what t describes, for logs and explain:
// "cluster C, jobs submitted 2026-01-01 to 2026-03-31, 12000 jobs (source)",
// leaving out what the file does not say.
func (t TrainedOn) String() string {
	var parts []string
	if t.Cluster != "" {
		parts = append(parts, "cluster "+t.Cluster)
	}
	if !t.From.IsZero() || !t.To.IsZero() {
		parts = append(parts, fmt.Sprintf("jobs submitted %s to %s", t.From.UTC().Format(time.DateOnly), t.To.UTC().Format(time.DateOnly)))
	}
	if t.Jobs > 0 {
		parts = append(parts, fmt.Sprintf("%d jobs", t.Jobs))
	}
	if t.Source != "" {
		parts = append(parts, "from "+t.Source)
	}
	if len(parts) == 0 {
		return "unknown history (the file does not say)"
	}
	return strings.Join(parts, ", ")
}

// ValidationRow is one policy's metrics on the validation jobs.
type ValidationRow struct {
	Policy  string             `json:"policy"`
	Metrics map[string]float64 `json:"metrics"`
	// Meets lists the objective's constraints the policy met.
	Meets []string `json:"meets,omitempty"`
}

// NewLearnedFile returns a policy file holding p, a point of the learned
// family.
func NewLearnedFile(p LearnedParams) *File {
	f := &File{Version: FileVersion, Family: "learned", Parameters: map[string]json.Number{}}
	for i, v := range p.Vector() {
		name := LearnedFeatures[i].Name
		f.Features = append(f.Features, name)
		f.Parameters[name] = json.Number(strconv.FormatFloat(v, 'g', -1, 64))
	}
	return f
}

// Encode writes f as indented JSON.
func (f *File) Encode() ([]byte, error) {
	b, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encode policy file: %w", err)
	}
	return append(b, '\n'), nil
}

// ParseFile reads a policy file from b and checks it can be run: the
// format version, the family, every feature of the family listed and
// given a finite parameter, no feature the family lacks, and parameters
// the family's Validate accepts. Every error wraps ErrPolicyFile and
// names the problem.
func ParseFile(b []byte) (*File, error) {
	bad := func(format string, a ...any) error {
		return fmt.Errorf("%w: %s", ErrPolicyFile, fmt.Sprintf(format, a...))
	}
	// A byte order mark (Notepad, PowerShell) is not part of the text:
	// RFC 8259 §8.1 lets a reader ignore it, and the trace readers do.
	b = bytes.TrimPrefix(b, []byte("\ufeff"))
	if len(bytes.TrimSpace(b)) == 0 {
		return nil, bad("empty: no JSON object")
	}
	// The version first, alone: a file of another version may have
	// another shape, and saying so beats a confusing field error.
	var v struct {
		Version *int `json:"format_version"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		// A version of the wrong type is a JSON object still: say which
		// value is wrong, not that the text is not one.
		var raw struct {
			Version json.RawMessage `json:"format_version"`
		}
		if te := (*json.UnmarshalTypeError)(nil); errors.As(err, &te) && te.Field == "format_version" && json.Unmarshal(b, &raw) == nil {
			return nil, bad("format_version %s: want a whole number, 1 to %d", raw.Version, FileVersion)
		}
		return nil, bad("not a JSON object: %v", err)
	}
	switch {
	case v.Version == nil:
		return nil, bad("no format_version: want %d", FileVersion)
	case *v.Version < 1 || *v.Version > FileVersion:
		return nil, bad("format_version %d: this Fairway reads versions 1 to %d", *v.Version, FileVersion)
	}
	if err := checkKeysOnce(b); err != nil {
		return nil, bad("%v", err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	dec.UseNumber()
	var f File
	if err := dec.Decode(&f); err != nil {
		return nil, bad("%v", err)
	}
	// json.Number also takes a number written as a string ("run": "1"):
	// a file tune did not write, refused as any other wrong type is.
	var raw struct {
		Parameters map[string]json.RawMessage `json:"parameters"`
	}
	if err := json.Unmarshal(b, &raw); err == nil {
		for name, v := range raw.Parameters {
			if t := bytes.TrimSpace(v); len(t) > 0 && t[0] == '"' {
				return nil, bad("parameter %q = %s: want a number, not a string", name, t)
			}
		}
	}
	if f.Family != "learned" {
		return nil, bad("family %q: want learned (the one registered family)", f.Family)
	}
	want := fileFeatures(f.Version)
	// unknown names a feature or parameter the file's version lacks.
	unknown := func(what, name string) error {
		if slices.Contains(learnedNames(), name) {
			return bad("%s %q: format_version %d has no such feature (it has %s); a file with it is format_version %d",
				what, name, f.Version, strings.Join(want, ", "), FileVersion)
		}
		return bad("%s %q: the learned family has no such feature (it has %s)", what, name, strings.Join(want, ", "))
	}
	for i, name := range f.Features {
		if !slices.Contains(want, name) {
			return nil, unknown("feature", name)
		}
		// A name twice is a file edited by hand or by another tool, not one
		// tune wrote: say so rather than guess which line was meant.
		if slices.Contains(f.Features[:i], name) {
			return nil, bad("feature %q listed twice in features", name)
		}
	}
	for name := range f.Parameters {
		if !slices.Contains(want, name) {
			return nil, unknown("parameter", name)
		}
	}
	vec := make([]float64, len(LearnedFeatures))
	for i, feat := range LearnedFeatures {
		name := feat.Name
		if !slices.Contains(want, name) {
			continue // added after the file's version: 0, as it was fitted
		}
		if !slices.Contains(f.Features, name) {
			return nil, bad("feature %q missing from features: a file must list every feature of the family (%s)", name, strings.Join(want, ", "))
		}
		num, ok := f.Parameters[name]
		if !ok {
			return nil, bad("parameter %q missing: every feature needs one", name)
		}
		if num == "" { // null, which json.Number takes as nothing
			return nil, bad("parameter %q = null: want a finite number", name)
		}
		x, err := strconv.ParseFloat(num.String(), 64)
		if err != nil || math.IsNaN(x) || math.IsInf(x, 0) {
			return nil, bad("parameter %q = %s: want a finite number", name, num)
		}
		vec[i] = x
	}
	p, err := LearnedParamsOf(vec)
	if err == nil {
		err = p.Validate()
	}
	if err != nil {
		return nil, bad("%v", err)
	}
	return &f, nil
}

// LearnedParams returns the parameters of a file ParseFile accepted.
func (f *File) LearnedParams() (LearnedParams, error) {
	vec := make([]float64, len(LearnedFeatures))
	have := fileFeatures(f.Version)
	for i, feat := range LearnedFeatures {
		if !slices.Contains(have, feat.Name) {
			continue
		}
		x, err := f.Parameters[feat.Name].Float64()
		if err != nil {
			return LearnedParams{}, fmt.Errorf("%w: parameter %q: %v", ErrPolicyFile, feat.Name, err)
		}
		vec[i] = x
	}
	p, err := LearnedParamsOf(vec)
	if err != nil {
		return p, err
	}
	return p, p.Validate()
}

// Policy builds the policy a file ParseFile accepted describes.
func (f *File) Policy() (Policy, error) {
	p, err := f.LearnedParams()
	if err != nil {
		return nil, err
	}
	return New(f.Family, p)
}

// checkKeysOnce refuses a JSON text in which an object names a key twice:
// encoding/json would keep the last without a word, and a hand-edited
// policy file would run with a parameter other than the one read first.
func checkKeysOnce(b []byte) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber() // numbers are judged later, with the parameter's name
	type obj struct {
		keys    map[string]bool
		wantKey bool
	}
	var stack []*obj
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		var top *obj
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		switch t := tok.(type) {
		case json.Delim:
			switch t {
			case '{':
				stack = append(stack, &obj{keys: map[string]bool{}, wantKey: true})
				continue
			case '[':
				stack = append(stack, nil)
				continue
			default:
				stack = stack[:len(stack)-1]
				if len(stack) > 0 && stack[len(stack)-1] != nil {
					stack[len(stack)-1].wantKey = true
				}
				continue
			}
		case string:
			if top != nil && top.wantKey {
				if top.keys[t] {
					return fmt.Errorf("key %q given twice in one object", t)
				}
				top.keys[t] = true
				top.wantKey = false
				continue
			}
		}
		if top != nil {
			top.wantKey = true // a value ends; the next token is a key
		}
	}
}
