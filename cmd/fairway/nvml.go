//go:build !fairway_nvmlmock

package main

import "github.com/NVIDIA/go-nvml/pkg/nvml"

// nvmlInterface is the NVML the hooks use: libnvidia-ml, loaded when a hook
// opens it, so the binary also runs on nodes without it.
func nvmlInterface() nvml.Interface { return nvml.New() }
