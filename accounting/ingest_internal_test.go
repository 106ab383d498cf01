package accounting

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestCleanText(t *testing.T) {
	for _, tc := range []struct {
		name, in, want string
		changed        bool
	}{
		{name: "plain", in: "train-7b", want: "train-7b"},
		{name: "control characters stay", in: "a\x01\x1b[31mb\n", want: "a\x01\x1b[31mb\n"},
		{name: "formula stays", in: "=cmd|' /C calc'!A0", want: "=cmd|' /C calc'!A0"},
		{name: "invalid run", in: "bad\xff\xfename", want: "bad\uFFFDname", changed: true},
		{name: "NUL", in: "a\x00b", want: "a\uFFFDb", changed: true},
		{name: "Slurm's limit exactly", in: strings.Repeat("a", maxText), want: strings.Repeat("a", maxText)},
		{name: "over the limit", in: strings.Repeat("a", maxText+1), want: strings.Repeat("a", maxText), changed: true},
		{name: "cut inside a character", in: "x" + strings.Repeat("é", maxText), want: "x" + strings.Repeat("é", maxText/2-1), changed: true},
		{name: "widened by U+FFFD", in: strings.Repeat("\xff\x00", maxText/2), want: strings.Repeat("\uFFFD", maxText/3), changed: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, changed := cleanText(tc.in)
			if got != tc.want || changed != tc.changed {
				t.Errorf("cleanText(%q...) = %q..., %v; want %q..., %v", trim(tc.in), trim(got), changed, trim(tc.want), tc.changed)
			}
			if !utf8.ValidString(got) || strings.IndexByte(got, 0) >= 0 || len(got) > maxText {
				t.Errorf("cleanText(%q...) = %d bytes, not storable text", trim(tc.in), len(got))
			}
		})
	}
}

func trim(s string) string { return s[:min(len(s), 16)] }
