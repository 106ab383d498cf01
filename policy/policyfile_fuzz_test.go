package policy

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// FuzzParseFile: whatever the bytes, ParseFile returns a file or an error
// wrapping ErrPolicyFile, never panics; a file it accepts gives a policy,
// and encodes to a file it accepts again with the same parameters. Run:
//
//	go test -run '^$' -fuzz '^FuzzParseFile$' -fuzztime 5m -parallel 1 ./policy
func FuzzParseFile(f *testing.F) {
	paths, _ := filepath.Glob(filepath.Join("defaults", "*.json"))
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	if b, err := NewLearnedFile(LearnedParams{Run: 1, Usage: 2, Age: 1}).Encode(); err == nil {
		f.Add(b)
	}
	f.Add([]byte(`{"format_version": 1, "family": "learned", "parameters": {"run": 1, "run": 2}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		pf, err := ParseFile(b)
		if err != nil {
			if !errors.Is(err, ErrPolicyFile) {
				t.Fatalf("error %v does not wrap ErrPolicyFile", err)
			}
			return
		}
		if _, err := pf.Policy(); err != nil {
			t.Fatalf("accepted file gives no policy: %v", err)
		}
		want, err := pf.LearnedParams()
		if err != nil {
			t.Fatal(err)
		}
		enc, err := pf.Encode()
		if err != nil {
			t.Fatal(err)
		}
		again, err := ParseFile(enc)
		if err != nil {
			t.Fatalf("its own encoding is refused: %v\n%s", err, enc)
		}
		if got, _ := again.LearnedParams(); got != want {
			t.Fatalf("parameters %+v after encoding, want %+v", got, want)
		}
	})
}
