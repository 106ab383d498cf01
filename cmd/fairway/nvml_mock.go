//go:build fairway_nvmlmock

package main

import (
	"os"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/fairway-hpc/fairway/prolog/nvmltest"
)

// nvmlInterface, in a binary built with -tags fairway_nvmlmock (only the
// hook benchmark builds one; release builds never contain the mock), is the
// 8-GPU mock DGX H100 of prolog/nvmltest when FAIRWAY_TEST_NVML=dgxh100,
// and libnvidia-ml otherwise.
func nvmlInterface() nvml.Interface {
	if os.Getenv("FAIRWAY_TEST_NVML") == "dgxh100" {
		return nvmltest.New(8)
	}
	return nvml.New()
}
