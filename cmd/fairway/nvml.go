//go:build !fairway_nvmlmock

package main

import (
	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/urfave/cli/v2"
)

// nvmlInterface is the NVML the hooks use: libnvidia-ml, loaded when a hook
// opens it, so the binary also runs on nodes without it.
func nvmlInterface(func(string) string) (nvml.Interface, error) { return nvml.New(), nil }

// testNVMLFlags are the settings of the test-only mock NVML; release builds
// have none.
func testNVMLFlags() []cli.Flag { return nil }
