package jsonfix

import (
	"encoding/json"
	"testing"
)

func TestNonFinite(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`{"level": Infinity}`, `{"level": null}`},
		{`[-Infinity, NaN, 1]`, `[null, null, 1]`},
		{`{"name": "Infinity \" NaN", "x": Infinity}`, `{"name": "Infinity \" NaN", "x": null}`},
		{`{"plain": 1}`, `{"plain": 1}`},
	} {
		got := string(NonFinite([]byte(tc.in)))
		if got != tc.want {
			t.Errorf("NonFinite(%s) = %s, want %s", tc.in, got, tc.want)
		}
		if !json.Valid([]byte(got)) {
			t.Errorf("NonFinite(%s) = %s: not JSON", tc.in, got)
		}
	}
}
