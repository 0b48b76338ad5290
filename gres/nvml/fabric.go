//go:build cgo

package nvml

import (
	"fmt"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/sluicehq/sluice/gres"
)

// fabric reads each GPU's multi-node NVLink fabric membership (NVML's GPU
// fabric info: cluster UUID, clique ID, registration state) and sets the
// inventory's Fabric when every GPU that registered with the fabric
// manager agrees. GPUs without a multi-node fabric (NOT_SUPPORTED, or an
// all-zero cluster UUID) are not in a domain; GPUs whose registration has
// not completed, or that disagree, leave the node outside every domain,
// with a warning: a wrong domain would place a job across an NVLink
// partition it cannot use.
//
// It calls nvmlDeviceGetGpuFabricInfo (driver 525 and later) rather
// than the versioned nvmlDeviceGetGpuFabricInfoV: the fields it needs are
// the same, and go-nvml's versioned handle cannot be mocked.
func (d *Driver) fabric(snap *snapshot, warnf func(string, ...any)) {
	if !d.has["nvmlDeviceGetGpuFabricInfo"] {
		return
	}
	var node gres.NVLinkFabric
	conflict := false
	for i := range snap.gpus {
		g := &snap.gpus[i]
		info, ret := g.h.GetGpuFabricInfo() //nolint:staticcheck // see above
		switch {
		case ret == gonvml.ERROR_NOT_SUPPORTED || ret == gonvml.ERROR_FUNCTION_NOT_FOUND:
			continue
		case ret != gonvml.SUCCESS:
			warnf("gpu %d: GetGpuFabricInfo: %v; NVLink domain unknown", g.nvmlIndex, ret)
			conflict = true
			continue
		case info.State == gonvml.GPU_FABRIC_STATE_NOT_SUPPORTED:
			continue
		case info.State != gonvml.GPU_FABRIC_STATE_COMPLETED:
			warnf("gpu %d: NVLink fabric registration %s; node left outside every NVLink domain", g.nvmlIndex, fabricState(info.State))
			conflict = true
			continue
		case gonvml.Return(info.Status) != gonvml.SUCCESS:
			warnf("gpu %d: NVLink fabric registration failed: %v; node left outside every NVLink domain", g.nvmlIndex, gonvml.Return(info.Status))
			conflict = true
			continue
		case info.ClusterUuid == [16]uint8{}:
			continue
		}
		f := gres.NVLinkFabric{ClusterUUID: FormatFabricUUID(info.ClusterUuid), CliqueID: info.CliqueId}
		switch {
		case node.IsZero():
			node = f
		case node != f:
			warnf("gpu %d: in NVLink domain %s, another GPU in %s; node left outside every NVLink domain", g.nvmlIndex, f, node)
			conflict = true
		}
	}
	if !conflict {
		snap.disc.Inventory.Fabric = node
	}
}

// fabricState names an NVML GPU fabric state.
func fabricState(s uint8) string {
	switch s {
	case gonvml.GPU_FABRIC_STATE_NOT_STARTED:
		return "not started"
	case gonvml.GPU_FABRIC_STATE_IN_PROGRESS:
		return "in progress"
	case gonvml.GPU_FABRIC_STATE_COMPLETED:
		return "completed"
	}
	return fmt.Sprintf("state %d", s)
}
