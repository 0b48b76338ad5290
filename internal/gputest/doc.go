// Package gputest provides device inventories of well-known GPU servers
// (and a seeded random generator) for tests and benchmarks of GPU
// selection.
//
// Every fixture is deterministic and returns a fresh, valid gres.Inventory
// that the caller may modify. Conventions shared by all fixtures, chosen to
// match the standard-scale node of DESIGN.md (2 sockets × 64 cores):
//
//   - socket s has NUMA node s and logical CPUs 64·s … 64·s+63 (NPS1, no
//     SMT siblings modelled); a GPU's Cores are the CPUs of its socket;
//   - GRES name "gpu", type the lower-case model ("h100", "a100" …);
//   - UUIDs are synthetic but stable ("GPU-<model>-<index>-…"), PCI bus ids
//     follow the real machine where documented, else "0000:<index>:00.0";
//   - links follow `nvidia-smi topo -m` of the real machine, simplified where
//     noted. NVSwitch pairs carry the GPU's full NVLink lane count.
package gputest
