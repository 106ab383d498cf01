package main

// This file parses systemd EnvironmentFile syntax, Fairway's one
// config-file format, so that the same file can be a unit's
// EnvironmentFile and a --config file.

import (
	"bufio"
	"bytes"
	"fmt"
	"regexp"
	"strings"
	"sync"
)

// envLine is one setting of a file: its key, its value unquoted, and its line
// number (from 1) for errors.
type envLine struct {
	Key, Value string
	Line       int
}

// envKeyPattern is what a setting's name must match (compiled on first use).
var envKeyPattern = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Z_][A-Z0-9_]*$`) })

// parseEnvFile reads KEY=value lines, # and ; comments and blank lines; a value
// in matching single or double quotes loses them. A line that is not a
// setting fails the whole file, naming its line number.
func parseEnvFile(b []byte) ([]envLine, error) {
	var out []envLine
	// A file saved by a Windows editor may start with a UTF-8 byte order
	// mark, which is not part of the first setting's name.
	b = bytes.TrimPrefix(b, []byte("\ufeff"))
	sc := bufio.NewScanner(bytes.NewReader(b))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' || line[0] == ';' {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		k = strings.TrimSpace(k)
		if !ok || !envKeyPattern().MatchString(k) {
			return nil, fmt.Errorf("line %d: want NAME=value", n)
		}
		v = strings.TrimSpace(v)
		if len(v) >= 2 && (v[0] == '"' || v[0] == '\'') && v[len(v)-1] == v[0] {
			v = v[1 : len(v)-1]
		}
		out = append(out, envLine{Key: k, Value: v, Line: n})
	}
	return out, sc.Err()
}
