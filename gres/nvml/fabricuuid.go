package nvml

import "fmt"

// FormatFabricUUID writes a GPU fabric cluster UUID (NVML's 16 bytes) in
// the 8-4-4-4-12 hexadecimal form nvidia-smi -q shows.
func FormatFabricUUID(b [16]uint8) string {
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}
