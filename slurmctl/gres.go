package slurmctl

import (
	"fmt"
	"strconv"
	"strings"
)

// GRES is one generic-resource term: a request such as "gres:gpu:h100:2"
// (22.05 tres_per_node), "gres/gpu:h100:2" (23.x and later), "gres/gpu=4"
// (a TRES string), or an allocation such as "gpu:h100:2(IDX:0-1)" from
// gres_detail or a node's gres_used.
type GRES struct {
	Name  string // "gpu", "shard", "mps", ...
	Type  string // "h100"; empty when untyped
	Count int64
	Index []int // device indices from "(IDX:...)"; nil when absent or N/A
}

// ParseGRES parses a comma-separated list of GRES terms. It follows
// Slurm's reading of "name[:type][:count]": a last field that is a number is
// the count (so a purely numeric type must be written with its count), and
// a missing count means 1. Terms for other TRES (cpu=4, mem=1G, license/x)
// are skipped, so tres_req_str can be passed as is.
func ParseGRES(s string) ([]GRES, error) {
	if s == "" {
		return nil, nil
	}
	var out []GRES
	for _, term := range splitTop(s) {
		term = strings.TrimSpace(term)
		if term == "" || term == "N/A" || term == "(null)" {
			continue
		}
		g, ok, err := parseGRESTerm(term)
		if err != nil {
			return nil, fmt.Errorf("gres %q: %w", s, err)
		}
		if ok {
			out = append(out, g)
		}
	}
	return out, nil
}

// splitTop splits on commas outside parentheses: "gpu:2(IDX:0,2),shard:1".
func splitTop(s string) []string {
	parts := make([]string, 0, strings.Count(s, ",")+1)
	depth, start := 0, 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '(':
			depth++
		case ')':
			if depth > 0 {
				depth--
			}
		case ',':
			if depth == 0 {
				parts = append(parts, s[start:i])
				start = i + 1
			}
		}
	}
	return append(parts, s[start:])
}

func parseGRESTerm(term string) (GRES, bool, error) {
	var g GRES
	detail := ""
	if i := strings.IndexByte(term, '('); i >= 0 {
		if !strings.HasSuffix(term, ")") {
			return g, false, fmt.Errorf("unbalanced parenthesis in %q", term)
		}
		detail = term[i+1 : len(term)-1]
		term = term[:i]
	}
	switch {
	case strings.HasPrefix(term, "gres:"):
		term = term[len("gres:"):]
	case strings.HasPrefix(term, "gres/"):
		term = term[len("gres/"):]
	case strings.ContainsAny(term, "=/"):
		return g, false, nil // cpu=2, mem=4G, license/x=1, node=1, billing=2
	}
	count := ""
	if i := strings.IndexByte(term, '='); i >= 0 {
		term, count = term[:i], term[i+1:]
	}
	fields := strings.Split(term, ":")
	if count == "" && len(fields) > 1 && isCount(fields[len(fields)-1]) {
		count = fields[len(fields)-1]
		fields = fields[:len(fields)-1]
	}
	g.Name = fields[0]
	if g.Name == "" {
		return g, false, fmt.Errorf("empty name in %q", term)
	}
	if len(fields) > 1 {
		g.Type = strings.Join(fields[1:], ":")
	}
	g.Count = 1
	if count != "" {
		n, err := parseCount(count)
		if err != nil {
			return g, false, fmt.Errorf("count of %q: %w", term, err)
		}
		g.Count = n
	}
	if idx, ok := strings.CutPrefix(detail, "IDX:"); ok && idx != "N/A" {
		ix, err := parseRanges(idx)
		if err != nil {
			return g, false, fmt.Errorf("indices of %q: %w", term, err)
		}
		g.Index = ix
	}
	return g, true, nil
}

// isCount reports whether s is spelled as a count (digits, then at most one
// k/m/g/t), whether or not its value is in range: "gpu:99999999999999999999"
// is a count to reject, not a type.
func isCount(s string) bool {
	s = strings.TrimRight(s, "kKmMgGtT")
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// parseCount reads a GRES count, with Slurm's k/m/g/t suffixes (x1024).
func parseCount(s string) (int64, error) {
	mult := int64(1)
	if s != "" {
		switch s[len(s)-1] {
		case 'k', 'K':
			mult = 1 << 10
		case 'm', 'M':
			mult = 1 << 20
		case 'g', 'G':
			mult = 1 << 30
		case 't', 'T':
			mult = 1 << 40
		}
		if mult != 1 {
			s = s[:len(s)-1]
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("not a count: %q", s)
	}
	if n > maxCount/mult {
		return 0, fmt.Errorf("count %q: more than %d", s, int64(maxCount))
	}
	return n * mult, nil
}

// maxCount bounds a GRES count and the totals built from it, far above any
// real one (a million nodes of a million shards) and far enough below
// 2^63 that no sum or product of two of them overflows into a negative.
const maxCount = 1 << 40

// mulCount multiplies a count by a node or task count, or fails when the
// product is beyond maxCount.
func mulCount(n, mult int64) (int64, error) {
	if n < 0 || mult < 0 || (mult > 0 && n > maxCount/mult) {
		return 0, fmt.Errorf("%d × %d: more than %d", n, mult, int64(maxCount))
	}
	return n * mult, nil
}

// parseRanges expands "0-1,3" into [0 1 3]. A "N-M:S" step is honoured, as
// in array task expressions.
func parseRanges(s string) ([]int, error) {
	var out []int
	for _, part := range strings.Split(s, ",") {
		if part == "" {
			continue
		}
		step := 1
		if i := strings.IndexByte(part, ':'); i >= 0 {
			st, err := strconv.Atoi(part[i+1:])
			if err != nil || st < 1 {
				return nil, fmt.Errorf("bad step in %q", part)
			}
			step, part = st, part[:i]
		}
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.Atoi(lo)
		if err != nil || a < 0 {
			return nil, fmt.Errorf("bad index %q", part)
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(hi); err != nil || b < a {
				return nil, fmt.Errorf("bad range %q", part)
			}
		}
		if (b-a)/step > maxRange {
			return nil, fmt.Errorf("range %q too large", part)
		}
		// counting k, not i, so that a range ending near MaxInt cannot
		// overflow i into a loop that never ends
		for k := 0; k <= (b-a)/step; k++ {
			out = append(out, a+k*step)
		}
	}
	return out, nil
}

// maxRange bounds the indices of one range expression (a GRES index list
// or an array's task ids; Slurm's MaxArraySize is at most 4,000,001).
const maxRange = 1 << 22

// countRanges is parseRanges' length without building the list.
func countRanges(s string) (int, error) {
	n := 0
	for _, part := range strings.Split(s, ",") {
		if part == "" {
			continue
		}
		step := 1
		if i := strings.IndexByte(part, ':'); i >= 0 {
			st, err := strconv.Atoi(part[i+1:])
			if err != nil || st < 1 {
				return 0, fmt.Errorf("bad step in %q", part)
			}
			step, part = st, part[:i]
		}
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.Atoi(lo)
		if err != nil || a < 0 {
			return 0, fmt.Errorf("bad index %q", part)
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(hi); err != nil || b < a {
				return 0, fmt.Errorf("bad range %q", part)
			}
		}
		if (b-a)/step > maxRange {
			return 0, fmt.Errorf("range %q too large", part)
		}
		if n += (b-a)/step + 1; n > maxRange {
			return 0, fmt.Errorf("ranges %q: more than %d indices", s, maxRange)
		}
	}
	return n, nil
}

// gresTotals sums GPU and shard counts over terms, each multiplied by mult,
// and returns the first GPU type seen.
func gresTotals(terms []GRES, mult int64) (gpus, shards int64, typ string, err error) {
	for _, g := range terms {
		var dst *int64
		switch g.Name {
		case "gpu":
			dst = &gpus
			if typ == "" {
				typ = g.Type
			}
		case "shard":
			dst = &shards
		default:
			continue
		}
		n, err := mulCount(g.Count, mult)
		if err != nil {
			return 0, 0, "", fmt.Errorf("%s count: %w", g.Name, err)
		}
		if *dst += n; *dst > maxCount {
			return 0, 0, "", fmt.Errorf("%s total more than %d", g.Name, int64(maxCount))
		}
	}
	return gpus, shards, typ, nil
}

// tresTotals reads gres/gpu and gres/shard out of a TRES string such as
// "cpu=2,mem=4G,node=2,billing=2,gres/gpu=4". An untyped total wins over
// typed ones ("gres/gpu:h100=4"), which Slurm lists in addition when
// AccountingStorageTRES names the type.
func tresTotals(tres string) (gpus, shards int64, typ string, err error) {
	terms, err := ParseGRES(tres)
	if err != nil {
		return 0, 0, "", err
	}
	var typedGPU, typedShard int64
	var untypedGPU, untypedShard bool
	for _, g := range terms {
		switch {
		case g.Name == "gpu" && g.Type == "":
			gpus, untypedGPU = g.Count, true
		case g.Name == "gpu":
			typedGPU += g.Count
			if typ == "" {
				typ = g.Type
			}
		case g.Name == "shard" && g.Type == "":
			shards, untypedShard = g.Count, true
		case g.Name == "shard":
			typedShard += g.Count
		}
		// checked per term: each count is at most maxCount, so a sum
		// stops here long before it could overflow
		if typedGPU > maxCount || typedShard > maxCount {
			return 0, 0, "", fmt.Errorf("tres %q: total more than %d", tres, int64(maxCount))
		}
	}
	if !untypedGPU {
		gpus = typedGPU
	}
	if !untypedShard {
		shards = typedShard
	}
	return gpus, shards, typ, nil
}

// tresMemoryMB reads mem= out of a TRES string ("mem=4G", "mem=2000M").
func tresMemoryMB(tres string) (int64, bool) {
	for _, term := range strings.Split(tres, ",") {
		v, ok := strings.CutPrefix(term, "mem=")
		if !ok || v == "" {
			continue
		}
		f, ok := megabytes(v)
		if !ok {
			return 0, false
		}
		return int64(f), true
	}
	return 0, false
}

// megabytes reads a memory size as Slurm prints one in a TRES string: a
// number of MB, or of KB, MB, GB or TB with the unit's letter.
func megabytes(v string) (float64, bool) {
	if v == "" {
		return 0, false
	}
	mult := 1.0
	switch v[len(v)-1] {
	case 'K':
		mult, v = 1.0/1024, v[:len(v)-1]
	case 'M':
		v = v[:len(v)-1]
	case 'G':
		mult, v = 1024, v[:len(v)-1]
	case 'T':
		mult, v = 1024*1024, v[:len(v)-1]
	}
	f, err := strconv.ParseFloat(v, 64)
	f *= mult
	if err != nil || !(f >= 0 && f <= maxCount) { // NaN fails both
		return 0, false
	}
	return f, true
}

// ParseTRESTotals reads a TRES string as `scontrol show partition` prints
// a partition's totals ("cpu=16,mem=32000M,node=2,billing=16,gres/gpu=8"):
// counts by TRES name in lower case, memory in MB.
func ParseTRESTotals(tres string) (map[string]float64, error) {
	got := map[string]float64{}
	for _, term := range strings.Split(tres, ",") {
		term = strings.TrimSpace(term)
		if term == "" || term == "(null)" {
			continue
		}
		name, v, ok := strings.Cut(term, "=")
		name = strings.ToLower(strings.TrimSpace(name))
		if !ok || name == "" {
			return nil, fmt.Errorf("TRES %q: want name=count", term)
		}
		var f float64
		var err error
		if name == "mem" {
			if f, ok = megabytes(v); !ok {
				err = fmt.Errorf("want a size such as 32000M")
			}
		} else if f, err = strconv.ParseFloat(v, 64); err == nil && !(f >= 0 && f <= maxCount) {
			err = fmt.Errorf("want 0 to %d", int64(maxCount))
		}
		if err != nil {
			return nil, fmt.Errorf("TRES %s=%q: %v", name, v, err)
		}
		got[name] = f
	}
	return got, nil
}
