package nvml

import (
	"fmt"
	"strings"

	"github.com/sluicehq/sluice/gres"
)

// brandWords are vendor and product-line words NormalizeType drops.
var brandWords = map[string]bool{
	"nvidia": true, "tesla": true, "geforce": true, "quadro": true, "mock": true,
}

// isDescriptor reports whether w describes a variant of a model (memory
// size, form factor, memory kind) rather than the model itself: "80gb",
// "sxm4", "pcie", "hbm3", "hbm3e", "nvl", "generation".
func isDescriptor(w string) bool {
	switch {
	case w == "pcie" || w == "nvl" || w == "generation" || w == "edition" || w == "server":
		return true
	case strings.HasPrefix(w, "sxm") && allDigits(w[3:]):
		return true
	case strings.HasPrefix(w, "hbm") && allDigits(strings.TrimSuffix(w[3:], "e")):
		return true
	case strings.HasSuffix(w, "gb") && len(w) > 2 && allDigits(w[:len(w)-2]):
		return true
	}
	return false
}

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// NormalizeType turns an NVML product name into a Slurm-style GRES type:
// lower case, vendor and product-line words dropped, and the variant
// suffixes (memory size, SXM/PCIe form factor, HBM kind, NVL) cut off, so
// that every flavour of a model shares one type:
//
//	"NVIDIA H100 80GB HBM3"     → "h100"
//	"NVIDIA A100-SXM4-40GB"     → "a100"
//	"NVIDIA GeForce RTX 4090"   → "rtx_4090"
//	"NVIDIA RTX 6000 Ada Generation" → "rtx_6000_ada"
//
// Remaining words are joined with "_"; characters outside [a-z0-9_.-] are
// dropped. It returns "" when nothing is left (the device is then
// untyped). Sites that want another naming set Options.TypeOf.
func NormalizeType(name string) string {
	fields := strings.FieldsFunc(strings.ToLower(name), func(r rune) bool {
		return r == ' ' || r == '-' || r == '_' || r == '\t' || r == '/' || r == ','
	})
	var words []string
	for _, w := range fields {
		w = strings.Map(func(r rune) rune {
			if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '.' {
				return r
			}
			return -1
		}, w)
		if w == "" || brandWords[w] {
			continue
		}
		if isDescriptor(w) {
			if len(words) > 0 {
				break
			}
			continue
		}
		words = append(words, w)
	}
	t := strings.Join(words, "_")
	if len(t) > 64 {
		t = strings.TrimRight(t[:64], "_")
	}
	if strings.Trim(t, ".") == "" {
		return ""
	}
	return t
}

// MIGProfile names a MIG slice the way nvidia-smi does: "<g>g.<m>gb" for
// a GPU instance of g slices with m GB of memory (MiB rounded up to whole
// GiB), or "<c>c.<g>g.<m>gb" when its compute instance uses only c of the
// g slices. It returns "" when the slice counts or memory are zero.
func MIGProfile(giSlices, ciSlices uint32, memoryMiB uint64) string {
	if giSlices == 0 || memoryMiB == 0 {
		return ""
	}
	gb := (memoryMiB + 1023) / 1024
	if ciSlices != 0 && ciSlices != giSlices {
		return fmt.Sprintf("%dc.%dg.%dgb", ciSlices, giSlices, gb)
	}
	return fmt.Sprintf("%dg.%dgb", giSlices, gb)
}

// MIGType is the GRES type of a MIG slice: the parent's type, "_", and
// the profile ("a100_3g.20gb"); just the profile when the parent is
// untyped.
func MIGType(parentType, profile string) string {
	if parentType == "" {
		return profile
	}
	return parentType + "_" + profile
}

// validType reports whether s is a valid GRES type: 1-64 characters
// from [A-Za-z0-9_.-], as gres.Request.Validate requires.
func validType(s string) bool {
	return s != "" && gres.Request{Name: "gpu", Type: s}.Validate() == nil
}
