package policy

import "testing"

func TestParseState(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want State
	}{
		{"COMPLETED", StateCompleted},
		{"OUT_OF_MEMORY", StateOOM},
		{"OOM", StateOOM},
		{"NODE_FAIL", StateNodeFail},
		{"CANCELLED", StateCancelled},
		{"CANCELLED by 0", StateCancelled}, // sacct --parsable
		{"CANCELLED by 1234", StateCancelled},
		{"CANCELLED+", StateCancelled}, // sacct's truncated column
		{"REVOKED", StateCancelled},
		{"SPECIAL_EXIT", StateFailed},
		{"BOOT_FAIL", StateFailed},
		{"REQUEUE_HOLD", StatePending},
		{"RESV_DEL_HOLD", StatePending},
		{"STAGE_OUT", StateRunning},
		{"SUSPENDED", StateRunning},
		{"completed", StateUnknown}, // Slurm's names are upper case; a trace reader folds case itself
		{"", StateUnknown},
		{"CANCEL", StateUnknown},
	} {
		if got := ParseState(tc.in); got != tc.want {
			t.Errorf("ParseState(%q) = %v, want %v", tc.in, got, tc.want)
		}
	}
}
