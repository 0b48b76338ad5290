// Package nvmltest builds go-nvml mocks of GPU servers for tests of NVML
// drivers, without a GPU.
//
// go-nvml's DGX mocks (pkg/nvml/mock/dgxa100, dgxh100 …) answer identity,
// memory and MIG calls but panic on NVLink, topology, P2P, NUMA, CPU
// affinity, remapped rows and events, draw random UUIDs and leave PCI bus
// ids empty. A Server here starts from the same go-nvml mock server and
// fills all of those in from a gres.Inventory: UUIDs and bus ids come
// from the inventory, NVLink lanes are laid out so a driver can recover
// the inventory's link matrix (direct lanes point at the peer GPU's bus
// id; NVSwitch lanes are spread round-robin over the fabric's switches),
// and events are a queue the test fills (InjectXID, InjectEvent) and the
// driver drains through the usual EventSet.Wait. Wait never sleeps: an
// empty queue answers ERROR_TIMEOUT at once, so tests stay fast.
//
// WriteSysfs and WriteProcfs lay out the matching sysfs (CPU sockets,
// NUMA nodes, PCI devices) and procfs (device majors, MIG capability
// minors) below a test directory.
//
// This package needs cgo (go-nvml does).
package nvmltest
