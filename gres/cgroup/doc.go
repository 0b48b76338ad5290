// Package cgroup enforces allocations on a Linux node with cgroup v2: a
// cgroup per job (Root/job_<id>) and per step (…/step_<name>) with the
// job's CPUs (cpuset.cpus), NUMA memory nodes (cpuset.mems), memory limit
// (memory.max), swap limit (memory.swap.max) and device access limited to
// its GPUs. Its Enforcer implements gres.Enforcer; Config.Plan shows what
// Apply writes without touching the system.
//
// # Memory and swap
//
// A job or step with a memory limit may by default use no swap beyond
// it (memory.swap.max 0), so a job over its limit is OOM-killed rather
// than escaping the limit by swapping; Config.AllowedSwapPercent allows a
// percentage of the limit (Slurm's AllowedSwapSpace under
// ConstrainSwapSpace=yes) and Config.UnconstrainedSwap leaves swap
// unlimited (Slurm's default, ConstrainSwapSpace=no). A kernel that does
// not account swap (no memory.swap.max) fails Apply with
// ErrControllerUnavailable unless swap is unconstrained.
//
// # Steps
//
// A step is confined inside its job: its CPUs, NUMA nodes and devices
// must be a subset of the job's (Apply rejects a step outside, and a job
// update that would leave a step outside, naming what lies outside). The
// Enforcer remembers the allocations it applied for this check; one
// restarted after a crash applies a job again before its steps.
//
// # Devices
//
// cgroup v2 has no devices.allow file: access is decided by an eBPF
// program of type BPF_PROG_TYPE_CGROUP_DEVICE attached to the cgroup. The
// default policy (DenyUnallocated) is Slurm's ConstrainDevices: every
// device stays usable except the node's GRES device files
// (Config.ManagedDevices, e.g. /dev/nvidia0-7, MIG capability files) that
// the job was not allocated; AllowListed instead allows only a base set
// (/dev/null, /dev/zero, ptys …) plus the allocation's files (for NVIDIA,
// gres.Discovery.FilesFor adds /dev/nvidiactl and /dev/nvidia-uvm).
// Every program starts with an explicit default rule and uses "rwm"
// exceptions, so a program that fails to load is an error, never
// silently skipped.
//
// # Usage
//
// Enforcer.Usage reads what a job's or step's cgroup has used, for the
// scheduler's telemetry: CPU time from cpu.stat (usage_usec, user_usec,
// system_usec), memory in use from memory.current and the peak from
// memory.peak (Linux 5.19 and later; -1 before). The counters are
// cumulative over every process that ran in the cgroup and below it, as
// the kernel keeps them; the caller takes differences. Enforcer.PIDs
// lists the processes in a job's or step's cgroups, so an agent can map
// the PIDs a device driver reports per process (gres.ProcessSampler) to
// jobs. Both read through opencontainers' confined open and parse
// defensively: a file holding what the kernel does not write fails with
// ErrMalformedFile, naming the file and the line.
//
// # Why github.com/opencontainers/cgroups
//
// The program is built and attached by github.com/opencontainers/cgroups
// (runc's cgroup code), whose devices package this package imports to
// enable it. On an update it replaces the program it attached before
// (BPF_F_REPLACE, or detach and attach), so a job's device access can be
// changed in both directions. containerd's cgroups v3 attaches a new
// program with BPF_F_ALLOW_MULTI on every update and drops the old
// link, so programs stack and — since every attached program must allow
// an access — an update can only narrow access, and stale programs stay
// until the cgroup is removed. cilium/ebpf alone would mean writing the
// device-program compiler ourselves. opencontainers/cgroups also brings a
// device-rule emulator that normalises the rules exactly as cgroup v1
// would, and the cgroupfs file helpers (openat2-confined writes).
//
// # Requirements
//
// Root must lie on a cgroup2 mount (New checks with statfs); creating
// cgroups, enabling cpuset and attaching device programs need root (or
// CAP_SYS_ADMIN/CAP_BPF over a delegated subtree). On a hybrid v1/v2
// host, cpuset and memory are bound to v1 and unavailable to v2: Apply
// fails with ErrControllerUnavailable naming the controller. The package
// builds only on Linux; it needs no cgo.
//
// # Testing
//
// Unit tests run the Enforcer on a fake cgroup filesystem (a temporary
// directory, with opencontainers' cgroups.TestMode, whose
// cgroup.subtree_control behaves as the kernel's) and check the files
// written and the device rules; the gresdriver conformance suite runs on
// it too. The real-kernel tests (TestRealCgroup2,
// TestRealJobOverMemoryLimitIsOOMKilled, which checks memory.events
// oom_kill, and TestRealUsage) run as root on a cgroup2 mount offering cpuset and memory —
// a pure cgroup v2 host — and skip elsewhere, saying why; with
// SLUICE_CGROUP_REAL=require they fail instead. .ci/cgroup-vm runs the
// package's tests, those included, in a qemu VM booting a Debian kernel
// with the static test binary as its initramfs, so CI checks them on any
// x86_64 Linux host, hybrid ones too.
package cgroup
