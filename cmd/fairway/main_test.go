package main

import (
	"os"
	"testing"
)

// TestMain runs the command's tests without the FAIRWAY_CLUSTER that
// `eval "$(contrib/lab/lab env)"` exports for people typing fairway
// commands: every test names its cluster itself (the lab's is
// FAIRWAY_LAB_CLUSTER), and tests of "no --cluster" and of config-file
// precedence need it unset.
func TestMain(m *testing.M) {
	os.Unsetenv("FAIRWAY_CLUSTER")
	os.Exit(m.Run())
}
