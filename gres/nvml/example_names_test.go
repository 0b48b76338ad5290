package nvml_test

import (
	"fmt"

	"github.com/sluicehq/sluice/gres/nvml"
)

func ExampleNormalizeType() {
	for _, name := range []string{"NVIDIA H100 80GB HBM3", "NVIDIA A100-SXM4-40GB", "Tesla V100-SXM2-16GB", "NVIDIA GeForce RTX 4090"} {
		fmt.Printf("%-26q → %s\n", name, nvml.NormalizeType(name))
	}
	// Output:
	// "NVIDIA H100 80GB HBM3"    → h100
	// "NVIDIA A100-SXM4-40GB"    → a100
	// "Tesla V100-SXM2-16GB"     → v100
	// "NVIDIA GeForce RTX 4090"  → rtx_4090
}

func ExampleMIGProfile() {
	// A MIG slice of 3 GPU slices and 19968 MiB on an A100 40GB.
	fmt.Println(nvml.MIGType("a100", nvml.MIGProfile(3, 3, 19968)))
	// Output: a100_3g.20gb
}
