// Package sluice is an embeddable scheduling library: the decisions a Slurm
// controller makes — which job gets which nodes, CPUs, memory and GPUs,
// when, and why — as pure Go packages that a caller composes into its own
// control plane (a custom orchestrator, a GPU marketplace, a research
// simulator).
//
// This root package holds only documentation; the work is done by:
//
//   - gres: the resource vocabulary. A Registry of trackable resources
//     (cpu, mem, node, billing, gres/gpu, gres/gpu:h100, license/…), dense
//     Vectors with overflow-checked arithmetic, Slurm's TRES and GRES
//     strings, billing weights, per-node device inventories (GPU index,
//     type, NUMA, CPU affinity, NVLink/PCIe links), the per-node state of
//     which device indices are in use, best-connected GPU selection, and
//     the driver interfaces (gres/nvml, gres/cgroup, gres/gresdriver).
//   - topology: NodeSet, a bitset over node indices with allocation-free set
//     algebra, and the cluster graph (switch trees, blocks, NVLink domains)
//     used to choose which nodes a multi-node job gets.
//   - priority: Slurm's multifactor priority with a per-factor breakdown,
//     and fair-share (Fair Tree, classic, depth-oblivious, a dominant-share
//     mode) over the association tree.
//   - policy: QOS, association and partition limits in Slurm's hierarchy
//     with Slurm's reason codes and the evidence behind them, advance
//     reservations, preemption that counts the work it destroys,
//     dependencies and job arrays.
//   - backfill: the time-resource profile (per-node partial resources over
//     time) and the EASY and conservative planners.
//   - accounting: the ledger — associations, decayed usage, job and
//     decision records, rollups and reports — in memory or on buntdb.
//   - scheduler: the cluster model (nodes, partitions, jobs and their state
//     machine) and the scheduling cycle that composes the packages above;
//     scheduler/ledger records its cycles in a ledger, scheduler/sim
//     drives it on a virtual clock.
//
// # Driving the scheduler
//
// The caller owns the loop and the clock, like etcd's raft: it feeds events
// in with the current time and applies the decisions that come out.
//
//	s, err := scheduler.New(cfg)                 // nodes, partitions: validated
//	id, err := s.Submit(now, scheduler.JobSpec{…}) // errors name the bad field
//	cyc, err := s.Schedule(now)                  // starts, ends, pending reasons
//	for _, st := range cyc.Starts {
//		launch(st.Job, st.Alloc) // nodes, CPU ids, GPU indices
//	}
//	err = s.Finish(later, id, exitCode)
//
// No package calls time.Now, starts goroutines or does I/O in the core, and
// the same events at the same times always give the same decisions.
// Invalid events return an error and change nothing.
package sluice
