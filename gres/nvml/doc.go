// Package nvml discovers a node's NVIDIA GPUs and watches their health
// through NVIDIA's NVML library (github.com/NVIDIA/go-nvml). Its Driver
// implements gres.Discoverer and gres.HealthWatcher (and the telemetry
// seams, below): it turns NVML's view
// of the node — GPU names, UUIDs, memory, PCI bus ids, NUMA nodes and CPU
// affinity, NVLink lanes (direct or through NVSwitches), PCIe topology,
// MIG slices — into a gres.Inventory plus the device files an enforcer
// must allow, and turns XID/ECC events, lost GPUs and row-remap failures
// into gres.HealthEvent values the scheduler applies with gres.ApplyHealth
// (an unhealthy GPU is withheld; the node drains when none is left).
//
// # Telemetry
//
// The Driver is also a gres.TelemetrySampler and a gres.ProcessSampler,
// pull APIs an agent calls on its own schedule to feed the scheduler's
// telemetry events. Sample reads each GPU's utilisation averaged over
// the samples NVML buffered since the previous Sample (DeviceGetSamples;
// the instant DeviceGetUtilizationRates where there are none, which
// SampleWindows reports), memory in use, power and cumulative energy
// (DeviceGetTotalEnergyConsumption). SampleProcesses reads each GPU's
// per-process SM and memory utilisation (DeviceGetProcessUtilization) so
// that a shared GPU's activity can be attributed to the job whose cgroup
// holds each process. NVML samples neither per GPU nor per process on
// MIG-enabled GPUs: MIG slices report memory only.
//
// # Build and run requirements
//
// go-nvml uses cgo, so this package needs a C compiler at build time
// (gcc); with CGO_ENABLED=0 only the pure helpers (NormalizeType,
// MIGProfile, the host-file parsers) and the package's errors compile, and
// Driver is absent. No NVIDIA driver is needed to build: libnvidia-ml.so.1
// is loaded with dlopen by Init. Packages gres and scheduler never import
// this package, so they build without cgo.
//
// # Safety without the library
//
// After a failed nvmlInit any further NVML call ends the process with a
// symbol lookup error that recover cannot catch. The Driver therefore
// makes no NVML call until Init succeeds: Open and Init return
// ErrLibraryNotFound (wrapping ErrUnavailable) on a machine without the
// driver, and every other method then returns ErrNotInitialized. NVML
// functions newer than the oldest supported driver are looked up before
// use for the same reason.
//
// # Testing
//
// Package nvmltest builds go-nvml mocks (an 8-GPU DGX H100 or A100, or any
// gres.Inventory) with the NVLink, topology, P2P, NUMA, CPU affinity,
// remapped-row, event and activity (utilisation, sample buffer,
// per-process, power, energy) functions the stock DGX mocks leave out, so the
// whole driver runs in plain `go test`. TestHardware runs only where
// /dev/nvidia0 exists and NVML initialises, and logs what it saw.
package nvml
