// Package policy holds Sluice's scheduling policy vocabulary: the pending
// reasons a job can carry (with Slurm's spelling, so squeue users read the
// same words), and — as later work lands — partitions, QOS, limits,
// reservations and preemption rules.
//
// Every decision the scheduler makes carries one of these reasons, so an
// explanation is data the scheduler kept, not a guess made afterwards.
package policy
