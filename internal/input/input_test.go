package input

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

func TestSticky_KeepsFirstError(t *testing.T) {
	cut := errors.New("connection reset")
	s := &Sticky{R: io.MultiReader(strings.NewReader("abc"), iotest.ErrReader(cut))}
	b, err := io.ReadAll(s)
	if string(b) != "abc" || !errors.Is(err, cut) || !errors.Is(s.Err, cut) {
		t.Errorf("read %q, %v; kept %v: want abc, then the reset kept", b, err, s.Err)
	}
	clean := &Sticky{R: strings.NewReader("abc")}
	if _, err := io.ReadAll(clean); err != nil || clean.Err != nil {
		t.Errorf("a clean read: %v, kept %v; want nothing kept (io.EOF is not a failure)", err, clean.Err)
	}
}

func TestGunzip(t *testing.T) {
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	if _, err := zw.Write([]byte("time,active,total\n")); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, in, want string
		gzip, fails    bool
	}{
		{"plain", "time,active,total\n", "time,active,total\n", false, false},
		{"gzip", gz.String(), "time,active,total\n", true, false},
		{"empty", "", "", false, false},
		{"gzip magic, bad header", "\x1f\x8bnot gzip", "", true, true},
	} {
		r, zr, err := Gunzip(bufio.NewReader(strings.NewReader(tc.in)))
		if (err != nil) != tc.fails {
			t.Errorf("%s: error %v, want one %v", tc.name, err, tc.fails)
			continue
		}
		if err != nil {
			continue
		}
		if (zr != nil) != tc.gzip {
			t.Errorf("%s: gzip reader %v, want one %v", tc.name, zr, tc.gzip)
		}
		if b, err := io.ReadAll(r); err != nil || string(b) != tc.want {
			t.Errorf("%s: read %q, %v; want %q", tc.name, b, err, tc.want)
		}
	}
}
