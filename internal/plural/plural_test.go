package plural

import "testing"

func TestN(t *testing.T) {
	for _, tc := range []struct {
		n    int
		want string
	}{{0, "0 policies"}, {1, "1 policy"}, {2, "2 policies"}, {-1, "-1 policies"}} {
		if got := N(tc.n, "policy", "policies"); got != tc.want {
			t.Errorf("N(%d) = %q, want %q", tc.n, got, tc.want)
		}
	}
}
