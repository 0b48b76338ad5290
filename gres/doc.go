// Package gres is Sluice's resource vocabulary: trackable resources (TRES),
// generic resources (GRES) and the devices of one node.
//
// # TRES and vectors
//
// A Registry maps TRES names (cpu, mem, energy, node, billing, gres/gpu,
// gres/gpu:h100, license/matlab …) to dense IDs, and a Vector holds one
// count per ID, with checked arithmetic (Add, Sub, Fits, Scale). mem is in
// MiB. Registry.ParseTRES and Registry.FormatTRES read and write Slurm's
// TRES strings ("cpu=4,mem=16G,gres/gpu:h100=2"); the format is canonical
// and round-trips.
//
// # GRES requests and billing
//
// ParseGRES reads --gres style lists ("gpu:h100:2,shard:4") into Requests,
// and Registry.RequestVector turns them into TRES the way Slurm accounts
// them: a typed request counts in both gres/gpu:h100 and gres/gpu, an
// untyped one only in gres/gpu. Registry.ParseBillingWeights reads a
// partition's TRESBillingWeights and BillingWeights.Billable computes a
// job's billable TRES in Slurm's sum, MAX_TRES or MAX_TRES_GRES mode.
//
// # Devices of a node
//
// An Inventory lists a node's devices (index, type, UUID, memory, PCI bus,
// NUMA node, socket, close CPU cores) and the links between them (NVLink
// lanes, NVSwitch fabric, the PCIe levels PIX/PXB/PHB/NODE/SYS of
// nvidia-smi topo -m). NodeDevices tracks which device indices are
// allocated and which are unhealthy, answers free counts without
// allocating, and Choose picks the best-connected free devices for a
// request: most NVLink lanes first, then CPU affinity (and, with
// EnforceBinding, only devices close to the job's cores, and with a CPU
// count only sets of them that bind that many CPUs), then PCIe/NUMA
// closeness, then what is left behind — so a one-GPU job takes an orphan
// instead of breaking an NVLink pair. Ranking NVLink above CPU affinity
// deviates from Slurm, which takes devices on the job's socket first;
// DeviceRequest.Order AffinityFirst gives Slurm's order (NVLinkFirst is
// the default). The search is exact when small (all
// 8-GPU requests take well under 2 µs) and greedy with local improvement
// beyond, so 16- and 72-GPU domains stay in the microseconds; see Choose.
//
// Everything here is deterministic and free of I/O, goroutines and clocks.
// Types are not safe for concurrent mutation; see each type's comment.
// Device discovery and enforcement drivers live in sub-packages.
//
// The plain-data types have text forms (encoding.TextMarshaler, so JSON
// too): BillingMode, DeviceOrder and PCIeLevel by name, a CoreSet as a
// Linux CPU list, a Request as "gpu:h100:2", and a Vector without a
// registry as "cpu=4,mem=16G,tres5=2" (TRESName; Vector.FormatNamed and
// Registry.FormatTRES name GRES with a registry).
package gres
