package trace

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/fairway-hpc/fairway/internal/input"
)

// Detect tells a trace's format from its first line (gzip-transparent):
// an SWF header line (";"), a record of 18 fields, or a record of more whose
// first 18 are numbers (extended SWF) is SWF; a CSV header
// naming job_id, user, num_gpu and duration is Philly-MIX, one naming
// job_id, user, gpu_num and submit_time is Helios (Fairway's own synthetic
// traces, `fairway trace synth`, are Helios). name is used in the error.
func Detect(r io.Reader, name string) (Format, error) {
	br := bufio.NewReader(r)
	src, zr, err := input.Gunzip(br)
	if err != nil {
		return "", fmt.Errorf("gunzip %s: %w", name, err)
	}
	if zr != nil {
		defer zr.Close()
		br = bufio.NewReader(src)
	}
	sc := bufio.NewScanner(br)
	sc.Buffer(make([]byte, 64<<10), maxLine)
	for n := 1; sc.Scan(); n++ {
		line := string(trimLine(sc.Bytes(), n == 1))
		if line == "" {
			continue
		}
		if f, ok := detectLine(line); ok {
			return f, nil
		}
		return "", fmt.Errorf("cannot tell the format of %s from its first line %.60q: want an SWF header (\"; ...\") or 18 numeric fields, "+
			"or a CSV header with job_id,user,gpu_num,submit_time (Helios) or job_id,user,num_gpu,...,duration (Philly-MIX); give --format", name, line)
	}
	if err := sc.Err(); err != nil {
		return "", fmt.Errorf("read %s: %w", name, err)
	}
	return "", fmt.Errorf("cannot tell the format of %s: it is empty", name)
}

func detectLine(line string) (Format, bool) {
	if line[0] == ';' {
		return SWF, true
	}
	if fs := strings.Fields(line); len(fs) == swfFields && !strings.Contains(line, ",") || len(fs) > swfFields && numeric(fs[:swfFields]) {
		return SWF, true
	}
	cols := map[string]bool{}
	for _, c := range strings.Split(line, ",") {
		cols[strings.Trim(strings.TrimSpace(c), `"`)] = true
	}
	has := func(names ...string) bool {
		for _, n := range names {
			if !cols[n] {
				return false
			}
		}
		return true
	}
	switch {
	case has(phillyRequired...):
		return PhillyMIX, true
	case has(heliosRequired...):
		return Helios, true
	}
	return "", false
}

// DetectFile is Detect on a file.
func DetectFile(path string) (Format, error) {
	f, err := os.Open(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return "", fmt.Errorf("trace %s: no such file", path)
		}
		return "", err
	}
	defer f.Close()
	st, err := f.Stat()
	switch {
	case err != nil:
		return "", err
	case st.IsDir():
		return "", fmt.Errorf("trace %s: is a directory", path)
	case !st.Mode().IsRegular():
		// The reader opens the file again: a pipe's first lines, read
		// here, would be gone, and the trace read from mid-file.
		return "", fmt.Errorf("trace %s is not a regular file (a pipe?): its format cannot be told without reading it twice; give --format", path)
	}
	return Detect(f, path)
}

// FileFormat is the format of the trace at path: the one named (--format),
// or else the one its first line tells (DetectFile). Its errors name the
// flag at fault.
func FileFormat(path, named string) (Format, error) {
	if named != "" {
		f, err := ParseFormat(named)
		if err != nil {
			return "", fmt.Errorf("--format: %w", err)
		}
		return f, nil
	}
	f, err := DetectFile(path)
	if err != nil {
		return "", fmt.Errorf("--trace: %w", err)
	}
	return f, nil
}

// numeric reports whether every field is a number, as SWF's 18 are.
func numeric(fs []string) bool {
	for _, f := range fs {
		if _, err := strconv.ParseFloat(f, 64); err != nil {
			return false
		}
	}
	return true
}
