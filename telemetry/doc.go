// Package telemetry folds what jobs did with what they were given into
// bounded aggregates: per-device GPU readings (SM activity, device
// memory, power, energy) from a GPU driver such as gres/nvml, and host
// readings (CPU time, memory peak) from the cgroup driver or any
// caller's agent, each folded into one fixed-size Usage per job as it
// arrives and never kept one by one.
//
// A reading stands for the interval since the job's previous reading
// (capped at Rule.MaxGap), so a Usage integrates time: GPUSeconds is the
// device time covered, BusyGPUSeconds the part of it a kernel ran — the
// job's useful GPU-seconds, from which goodput (useful over allocated
// GPU-hours) is computed by the ledger's reports. A Rule also marks a job
// allocated-but-idle when its readings stay below a utilisation for a
// time, evidence the scheduler reports and may act on.
//
// The package is plain data and arithmetic: no I/O, no clock.
package telemetry
