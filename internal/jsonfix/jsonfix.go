// Package jsonfix repairs the one way slurmrestd breaks JSON: Slurm
// 24.11.7's data_parser v0.0.40 and v0.0.41 print an infinite fair-share
// level as a bare Infinity ("level": Infinity in /slurm/<v>/shares,
// captured), which no JSON decoder accepts.
package jsonfix

import "bytes"

// NonFinite returns b with every bare Infinity, -Infinity and NaN outside
// strings replaced by null. b itself is returned when there is none, so
// the common case costs one scan and no copy.
func NonFinite(b []byte) []byte {
	if !bytes.Contains(b, []byte("Infinity")) && !bytes.Contains(b, []byte("NaN")) {
		return b
	}
	var out []byte
	last := 0
	in, esc := false, false
	for i := 0; i < len(b); i++ {
		c := b[i]
		if in {
			switch {
			case esc:
				esc = false
			case c == '\\':
				esc = true
			case c == '"':
				in = false
			}
			continue
		}
		if c == '"' {
			in = true
			continue
		}
		for _, word := range []string{"-Infinity", "Infinity", "NaN"} {
			if bytes.HasPrefix(b[i:], []byte(word)) {
				out = append(append(out, b[last:i]...), "null"...)
				i += len(word) - 1
				last = i + 1
				break
			}
		}
	}
	if out == nil {
		return b
	}
	return append(out, b[last:]...)
}
