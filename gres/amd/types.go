package amd

import (
	"fmt"
	"strings"

	"github.com/sluicehq/sluice/gres"
)

// models maps AMD Instinct PCI device ids (vendor 0x1002) to GRES types,
// from the PCI ID repository's names of these devices. Virtual functions
// (SR-IOV) get the type of their physical function.
var models = map[uint16]string{
	0x738c: "mi100",
	0x738e: "mi100",
	0x7408: "mi250x",
	0x740c: "mi250x", // shared by MI250X and MI250: told apart by CUs, see TypeOf
	0x740f: "mi210",
	0x7410: "mi210", // MI210 virtual function
	0x74a0: "mi300a",
	0x74a1: "mi300x",
	0x74a2: "mi308x",
	0x74a5: "mi325x",
	0x74b5: "mi300x", // MI300X virtual function
	0x75a0: "mi350x",
	0x75a3: "mi355x",
}

// mi250CUs is the compute-unit count of one MI250 GCD (104; an MI250X
// GCD has 110). Both report device id 0x740c.
const mi250CUs = 104

// TypeOf returns the GRES type of an AMD GPU: from its PCI device id
// ("mi300x", "mi250x", "mi210" …; 0x740c is "mi250" when a GCD has 104
// compute units, else "mi250x"), else from its product name ("AMD
// Instinct MI300X OAM" → "mi300x": the word after "Instinct", or the
// whole name, lower case, with characters a GRES type cannot hold
// replaced by '_'), else "amd_<device id in hex>". known is false when
// the device id is not in the table.
func TypeOf(deviceID uint16, computeUnits int, productName string) (typ string, known bool) {
	if t, ok := models[deviceID]; ok {
		if deviceID == 0x740c && computeUnits == mi250CUs {
			t = "mi250"
		}
		return t, true
	}
	if t := typeFromName(productName); t != "" {
		return t, false
	}
	return fmt.Sprintf("amd_%04x", deviceID), false
}

// typeFromName derives a GRES type from a marketing name; "" when none.
func typeFromName(name string) string {
	f := strings.Fields(strings.ToLower(name))
	for i, w := range f {
		if w == "instinct" && i+1 < len(f) {
			f = f[i+1 : i+2]
			break
		}
	}
	s := strings.Join(f, "_")
	b := []byte(s)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.') {
			b[i] = '_'
		}
	}
	s = strings.Trim(string(b), "_")
	if len(s) > 48 {
		s = s[:48]
	}
	if s == "" || gres.ValidateName("gpu", s) != nil {
		return ""
	}
	return s
}

// partitionModes are the compute partition modes of MI300-class GPUs
// (current_compute_partition), by the number of partitions each makes of
// an MI300X; CPX makes one per XCD.
var partitionModes = map[string]bool{"SPX": true, "DPX": true, "TPX": true, "QPX": true, "CPX": true}

// partitionType is the GRES type of a compute partition of a GPU of type
// base in mode ("mi300x", "CPX" → "mi300x_cpx").
func partitionType(base, mode string) string {
	return base + "_" + strings.ToLower(mode)
}
