// Package amd discovers a node's AMD Instinct GPUs from sysfs and watches
// their health and activity there. It is pure Go (no cgo, no ROCm
// libraries), so it builds everywhere; its Driver implements
// gres.Discoverer, gres.HealthWatcher and gres.TelemetrySampler.
//
// # What Discover reads
//
// Below Options.Root (the host's "/" by default):
//
//   - the KFD topology, /sys/class/kfd/kfd/topology/nodes/<n>/: each
//     node's properties ("key value" lines, see ParseProperties); nodes
//     with simd_count 0 are CPUs. A GPU node gives the PCI address
//     (domain, location_id = bus<<8 | device<<3 | function), the PCI
//     device id, drm_render_minor, unique_id (the UUID "GPU-<16 hex>", as
//     ROCm prints it), the compute units (simd_count / simd_per_cu) and
//     its frame-buffer memory banks (mem_banks/*, heap types 1 and 2);
//     its io_links/*/properties give the xGMI links to other GPUs (type
//     11), with the number of parallel links as max_bandwidth /
//     min_bandwidth (0 for peers of the hive reached only through other
//     GPUs);
//   - the GPU's PCI device, /sys/bus/pci/devices/<address>/ (or the render
//     node's device link): vendor (0x1002), device, numa_node,
//     local_cpulist, mem_info_vram_total, product_name,
//     current_compute_partition and current_memory_partition; the socket
//     is the physical_package_id of the first local CPU;
//   - /sys/class/drm/renderD<minor>/dev and /sys/class/kfd/kfd/dev for
//     the device numbers of /dev/dri/renderD<minor> and /dev/kfd.
//
// Every GPU KFD node is a device, indexed 0, 1, … in KFD node order (the
// order of ROCm's agents and of ROCR_VISIBLE_DEVICES), named Options.Name
// ("gpu") and typed from its PCI device id by TypeOf ("mi300x",
// "mi250x"…; an unknown id is typed from its product name or as
// "amd_<id>", with a warning). An MI250X is two devices, one per GCD.
// Files: the device's render node; CommonFiles: /dev/kfd.
//
// # Links
//
// Links between GPUs count xGMI links ({NVLinks: n, Fabric:
// gres.FabricXGMI}); the chooser of package gres ranks them as it ranks
// NVLink lanes, so a 2-GPU job on an MI250X node gets the two GCDs of one
// package (four links) and one on an MI300X hive gets two GPUs of one
// NUMA node. The host-side level is SYS across NUMA nodes, NODE on one,
// and PHB, PXB or PIX when the GPUs' PCI paths meet below a host bridge.
//
// # Compute partitions
//
// An MI300-class GPU in a partitioned compute mode (DPX, QPX, CPX …)
// shows one KFD node and render node per partition. Each partition is a
// device of its own, typed "<gpu type>_<mode>" ("mi300x_cpx"), with its
// own render node as its file and its share of the memory; its parent GPU
// is in Driver.Devices (DeviceInfo.PCIBusID, Partition, Partitions) and
// in a Discovery warning. Partitions of one GPU are linked on one board
// with PartitionLanes xGMI lanes (more than any two GPUs have), so a
// multi-partition job stays on one GPU when it can.
//
// # Health and telemetry
//
// PollHealth rereads the RAS error counters (ras/<block>_err_count): an
// increase of an uncorrectable count makes the GPU's devices unhealthy,
// a reset that clears it makes them healthy again; a GPU or render node
// gone from sysfs is "device lost". Sample reads gpu_busy_percent,
// mem_info_vram_used and the hwmon power and energy files.
//
// Package amdtest writes sysfs trees of whole machines (8× MI300X, 4×
// MI250X, MI300X in CPX mode) for tests.
package amd
