// Package gpuserver describes the GPU topology of well-known servers as
// gres.Inventory values: the NVIDIA DGX H100 and DGX A100 with their
// NVSwitch fabric, an 8 × A100 PCIe server with NVLink bridge pairs, a
// GB200 NVL72 compute tray and the whole 72-GPU NVL72 domain, an L40S PCIe
// server without NVLink, two 4-GPU HGX boards, and the 16-GPU DGX-2.
// Random draws a random valid inventory for tests, benchmarks and fuzzing.
//
// Use them to configure nodes of a known model without discovering them
// (scheduler.NodeConfig.Devices), to try GPU placement (gres.NodeDevices),
// or as fixtures. A real node's inventory comes from discovery (package
// gres/nvml), which reads the same links from the driver.
//
// Every function is deterministic and returns a fresh, valid inventory
// that the caller may modify. Conventions shared by all of them (a
// standard node of 2 sockets × 64 cores):
//
//   - socket s has NUMA node s and logical CPUs 64·s … 64·s+63 (NPS1, no
//     SMT siblings modelled); a GPU's Cores are the CPUs of its socket
//     (SocketCores);
//   - GRES name "gpu", type the lower-case model ("h100", "a100" …);
//   - UUIDs are synthetic but stable ("GPU-<model>-<index>-…"), PCI bus ids
//     follow the real machine where documented, else "0000:<index>:00.0";
//   - links follow `nvidia-smi topo -m` of the real machine, simplified where
//     noted. NVSwitch pairs carry the GPU's full NVLink lane count.
package gpuserver
