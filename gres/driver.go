package gres

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"
)

// This file holds the driver seams: small interfaces that node-side
// drivers implement (device discovery, health, enforcement) and the plain
// data they exchange with the scheduler. Drivers live in leaf packages
// (gres/nvml needs cgo, gres/cgroup is Linux-only); package gres itself
// never imports them and does no I/O. gres/gresdriver holds a conformance
// suite that any driver can run against itself.

// Sentinel errors of the driver seams.
var (
	// ErrInvalidDeviceFile reports a malformed DeviceFile.
	ErrInvalidDeviceFile = errors.New("invalid device file")
	// ErrInvalidAllocation reports a malformed Allocation, or a job or step
	// name an Enforcer cannot use.
	ErrInvalidAllocation = errors.New("invalid allocation")
	// ErrJobNotApplied reports a step applied before its job, or an
	// operation on a job an Enforcer does not hold.
	ErrJobNotApplied = errors.New("job not applied")
)

// DeviceKind is the kind of a device special file: CharDevice or
// BlockDevice.
type DeviceKind byte

const (
	// CharDevice is a character device ("c" in cgroup device rules).
	CharDevice DeviceKind = 'c'
	// BlockDevice is a block device ("b").
	BlockDevice DeviceKind = 'b'
)

// AnyMinor as DeviceFile.Minor matches every minor number of the major
// (e.g. /dev/pts/*, char 136:*).
const AnyMinor = -1

// MaxDeviceNumber is the largest major or minor number a DeviceFile may
// hold (Linux uses 12-bit majors and 20-bit minors; this leaves room).
const MaxDeviceNumber = 1<<32 - 1

// DeviceFile is a device special file a job needs to open, such as
// /dev/nvidia3 (char 195:3) or /dev/nvidia-caps/nvidia-cap21. Enforcers
// grant or deny access by (Kind, Major, Minor); Path is informative (for
// messages, container bind mounts and logs).
type DeviceFile struct {
	Path  string     // absolute path, e.g. "/dev/nvidia3"
	Kind  DeviceKind // CharDevice or BlockDevice
	Major int64      // major number, in [0, MaxDeviceNumber]
	Minor int64      // minor number in [0, MaxDeviceNumber], or AnyMinor
}

// Validate checks the file: an absolute, clean path without NUL bytes,
// a known kind and device numbers in range. Errors wrap
// ErrInvalidDeviceFile.
func (f DeviceFile) Validate() error {
	switch {
	case f.Path == "" || f.Path[0] != '/' || path.Clean(f.Path) != f.Path || strings.ContainsRune(f.Path, 0):
		return fmt.Errorf("%w: path %q: want an absolute clean path", ErrInvalidDeviceFile, f.Path)
	case f.Kind != CharDevice && f.Kind != BlockDevice:
		return fmt.Errorf("%w: %s: kind %q: want 'c' or 'b'", ErrInvalidDeviceFile, f.Path, rune(f.Kind))
	case f.Major < 0 || f.Major > MaxDeviceNumber:
		return fmt.Errorf("%w: %s: major %d outside [0, %d]", ErrInvalidDeviceFile, f.Path, f.Major, int64(MaxDeviceNumber))
	case f.Minor < AnyMinor || f.Minor > MaxDeviceNumber:
		return fmt.Errorf("%w: %s: minor %d outside [0, %d] (or %d for any)", ErrInvalidDeviceFile, f.Path, f.Minor, int64(MaxDeviceNumber), AnyMinor)
	}
	return nil
}

// String formats the file like a cgroup v1 device rule plus its path:
// "c 195:3 /dev/nvidia3" ("*" for AnyMinor).
func (f DeviceFile) String() string {
	minor := "*"
	if f.Minor != AnyMinor {
		minor = strconv.FormatInt(f.Minor, 10)
	}
	return fmt.Sprintf("%c %d:%s %s", f.Kind, f.Major, minor, f.Path)
}

// SameDevice reports whether f and o name the same device numbers (kind,
// major, minor), whatever their paths.
func (f DeviceFile) SameDevice(o DeviceFile) bool {
	return f.Kind == o.Kind && f.Major == o.Major && f.Minor == o.Minor
}

// compareDeviceFiles orders by kind, major, minor, then path.
func compareDeviceFiles(a, b DeviceFile) int {
	return cmp.Or(cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.Major, b.Major),
		cmp.Compare(a.Minor, b.Minor), cmp.Compare(a.Path, b.Path))
}

// SortDeviceFiles sorts files by (kind, major, minor, path) and removes
// exact duplicates, in place, returning the shortened slice.
func SortDeviceFiles(files []DeviceFile) []DeviceFile {
	slices.SortFunc(files, compareDeviceFiles)
	return slices.Compact(files)
}

// Discovery is what a Discoverer found on a node: the device inventory
// the scheduler works with, plus the device files an Enforcer needs to
// grant access to each device.
type Discovery struct {
	// Inventory is the node's devices and their links.
	Inventory Inventory
	// Files is nil (the driver does not know device files) or has one
	// entry per device, in Inventory.Devices order: the files a job must
	// be allowed to open to use that device (a whole GPU: /dev/nvidiaN; a
	// MIG slice: its parent's /dev/nvidiaN and its nvidia-caps files).
	Files [][]DeviceFile
	// CommonFiles are needed by every job that uses at least one device
	// (/dev/nvidiactl, /dev/nvidia-uvm …) and belong to no single device.
	CommonFiles []DeviceFile
	// Driver names the driver and its versions, e.g. "nvml 550.54.15".
	Driver string
	// Warnings lists what the driver could not determine and how it
	// degraded (e.g. "gpu 3: NUMA node unknown"); informative.
	Warnings []string
}

// Validate checks the inventory (see Inventory.Validate) and the files:
// one Files entry per device when Files is set, and every file valid.
// Errors wrap ErrInvalidInventory or ErrInvalidDeviceFile.
func (d *Discovery) Validate() error {
	if err := d.Inventory.Validate(); err != nil {
		return err
	}
	if d.Files != nil && len(d.Files) != len(d.Inventory.Devices) {
		return fmt.Errorf("%w: %d device file lists for %d devices", ErrInvalidInventory, len(d.Files), len(d.Inventory.Devices))
	}
	for i, fs := range d.Files {
		for _, f := range fs {
			if err := f.Validate(); err != nil {
				return fmt.Errorf("device %d: %w", d.Inventory.Devices[i].Index, err)
			}
		}
	}
	for _, f := range d.CommonFiles {
		if err := f.Validate(); err != nil {
			return fmt.Errorf("common files: %w", err)
		}
	}
	return nil
}

// Clone returns a deep copy of the discovery (inventory, files and
// warnings), for drivers that hand out a copy of what they keep.
func (d *Discovery) Clone() Discovery {
	out := Discovery{
		Inventory:   d.Inventory.Clone(),
		CommonFiles: slices.Clone(d.CommonFiles),
		Driver:      d.Driver,
		Warnings:    slices.Clone(d.Warnings),
	}
	if d.Files != nil {
		out.Files = make([][]DeviceFile, len(d.Files))
		for i, f := range d.Files {
			out.Files[i] = slices.Clone(f)
		}
	}
	return out
}

// FilesFor returns the files a job holding the given device indices must
// be allowed to open: the union of their Files plus CommonFiles (when at
// least one index is given), sorted and without duplicates. It fails with
// ErrUnknownDevice on an index not in the inventory, and returns nil for
// no indices.
func (d *Discovery) FilesFor(indices []int) ([]DeviceFile, error) {
	if len(indices) == 0 {
		return nil, nil
	}
	var out []DeviceFile
	for _, idx := range indices {
		p, ok := slices.BinarySearchFunc(d.Inventory.Devices, idx, func(dev Device, i int) int { return cmp.Compare(dev.Index, i) })
		if !ok {
			return nil, fmt.Errorf("device files for device %d: %w", idx, ErrUnknownDevice)
		}
		if p < len(d.Files) {
			out = append(out, d.Files[p]...)
		}
	}
	out = append(out, d.CommonFiles...)
	return SortDeviceFiles(out), nil
}

// DeviceFiles returns the union of every device's Files (not
// CommonFiles), sorted and without duplicates: the files an Enforcer must
// deny to jobs that were not allocated the devices.
func (d *Discovery) DeviceFiles() []DeviceFile {
	var out []DeviceFile
	for _, fs := range d.Files {
		out = append(out, fs...)
	}
	return SortDeviceFiles(out)
}

// Discoverer discovers the devices of the node it runs on.
//
// Discover returns a valid Discovery (Discovery.Validate passes). Calling
// it twice on an unchanged node returns the same inventory. It returns
// ctx.Err() (possibly wrapped) when ctx is done before it finishes.
// Implementations do their own I/O and may block; they must be safe for
// concurrent use with their HealthWatcher, if any.
type Discoverer interface {
	Discover(ctx context.Context) (Discovery, error)
}

// HealthEvent is a change in one device's health.
type HealthEvent struct {
	Index   int    // the device's Index in the last Discovery's inventory
	UUID    string // the device's UUID ("" if the inventory has none)
	Healthy bool   // the new state
	// Reason says why a device became unhealthy ("XID 79", "double-bit
	// ECC error", "GPU is lost") or recovered; never empty when Healthy is
	// false.
	Reason string
}

// HealthWatcher reports device health changes. It is a pull API: the
// caller decides where the watch loop runs (its own goroutine, or
// WatchHealth), so no goroutine is started behind its back.
//
// PollHealth waits up to timeout for health changes and returns them,
// sorted by device index; it returns early when changes arrive and
// returns an empty result (not an error) when the timeout expires
// quietly. Every event names a device of the last Discovery. Devices start
// healthy: a watcher reports unhealthy devices, and later recoveries, as
// changes. When ctx is done PollHealth returns promptly with ctx.Err()
// (possibly wrapped); changes it had seen are kept for the next call.
// PollHealth is not safe for concurrent use with itself.
type HealthWatcher interface {
	PollHealth(ctx context.Context, timeout time.Duration) ([]HealthEvent, error)
}

// WatchHealth calls w.PollHealth(ctx, timeout) in a loop, in the caller's
// goroutine, passing every non-empty batch of events to fn, until ctx is
// done (it then returns ctx.Err()) or PollHealth fails (it returns that
// error). A typical agent runs it as `go gres.WatchHealth(ctx, w, time.Second, report)`
// and cancels ctx to stop it. A non-positive timeout is replaced by one
// second.
func WatchHealth(ctx context.Context, w HealthWatcher, timeout time.Duration, fn func([]HealthEvent)) error {
	if timeout <= 0 {
		timeout = time.Second
	}
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		evs, err := w.PollHealth(ctx, timeout)
		if err != nil {
			return err
		}
		if len(evs) > 0 {
			fn(evs)
		}
	}
}

// DeviceSample is one reading of one device's activity, as a telemetry
// driver reports it. A field the hardware does not report is -1.
type DeviceSample struct {
	Index int    // the device's Index in the last Discovery's inventory
	UUID  string // the device's UUID ("" if the inventory has none)
	// Utilization is the percentage of the sample period the device was
	// busy, in [0, 100]: NVML's GPU utilisation, AMD's gpu_busy_percent,
	// Intel's engine busy time.
	Utilization float64
	// MemoryUsedMiB is the device memory in use.
	MemoryUsedMiB int64
	// PowerWatts is the current (or last averaged) board power.
	PowerWatts float64
	// EnergyJoules is the energy used since the driver started counting
	// (monotonic between resets of the device).
	EnergyJoules float64
}

// Validate checks the sample: a non-negative index, utilisation in
// [0, 100] and every other reading non-negative and finite, each unknown
// reading exactly -1. Errors wrap ErrInvalidRequest and name the field.
func (s DeviceSample) Validate() error {
	bad := func(field string, v any) error {
		return fmt.Errorf("%w: sample of device %d: %s %v (want >= 0, or -1 for unknown)", ErrInvalidRequest, s.Index, field, v)
	}
	switch {
	case s.Index < 0:
		return fmt.Errorf("%w: sample of device %d: negative index", ErrInvalidRequest, s.Index)
	case s.Utilization != -1 && !(s.Utilization >= 0 && s.Utilization <= 100):
		return fmt.Errorf("%w: sample of device %d: utilization %v outside [0, 100] (or -1 for unknown)", ErrInvalidRequest, s.Index, s.Utilization)
	case s.MemoryUsedMiB < -1:
		return bad("memory used", s.MemoryUsedMiB)
	case s.PowerWatts != -1 && !(s.PowerWatts >= 0 && s.PowerWatts <= math.MaxFloat64):
		return bad("power", s.PowerWatts)
	case s.EnergyJoules != -1 && !(s.EnergyJoules >= 0 && s.EnergyJoules <= math.MaxFloat64):
		return bad("energy", s.EnergyJoules)
	}
	return nil
}

// TelemetrySampler reads the current activity of a node's devices.
//
// Sample returns one DeviceSample per device of the last Discovery, in
// index order, each valid (DeviceSample.Validate). It does its own I/O
// and returns ctx.Err() (possibly wrapped) when ctx is done first. Like
// HealthWatcher it is a pull API: the caller decides how often to sample.
type TelemetrySampler interface {
	Sample(ctx context.Context) ([]DeviceSample, error)
}

// HealthSummary is the state of a node's devices after ApplyHealth.
type HealthSummary struct {
	Total, Healthy int
	// Drain is true when the node has devices and none is healthy: the
	// scheduler should drain the node with Reason. A node with some
	// healthy devices stays usable; only its unhealthy devices are
	// withheld.
	Drain bool
	// Reason describes the unhealthy devices, e.g. "gpu 3: XID 79"
	// ("" when every device is healthy).
	Reason string
}

// ApplyHealth applies health events to a node's device state (an
// unhealthy device is never chosen or allocated again until it recovers)
// and summarises the result. Events are applied in order, so the last
// event for a device wins. It fails, changing nothing, when an event names
// a device the inventory does not hold (ErrUnknownDevice) or an unhealthy
// event has no reason (ErrInvalidRequest). reasons, when non-nil, maps
// device index to the reason it is unhealthy and is updated in place; the
// summary's Reason lists them in index order.
func ApplyHealth(s *NodeDevices, reasons map[int]string, evs []HealthEvent) (HealthSummary, error) {
	for _, ev := range evs {
		if _, ok := s.t.position(ev.Index); !ok {
			return HealthSummary{}, fmt.Errorf("health event for device %d: %w", ev.Index, ErrUnknownDevice)
		}
		if !ev.Healthy && ev.Reason == "" {
			return HealthSummary{}, fmt.Errorf("health event for device %d: unhealthy without a reason: %w", ev.Index, ErrInvalidRequest)
		}
	}
	for _, ev := range evs {
		_ = s.SetHealthy(ev.Index, ev.Healthy) // cannot fail: index checked above
		if reasons != nil {
			if ev.Healthy {
				delete(reasons, ev.Index)
			} else {
				reasons[ev.Index] = ev.Reason
			}
		}
	}
	sum := HealthSummary{Total: s.t.n}
	var parts []string
	for p, d := range s.t.inv.Devices {
		if !s.bad.has(p) {
			sum.Healthy++
			continue
		}
		r := "unhealthy"
		if reasons != nil && reasons[d.Index] != "" {
			r = reasons[d.Index]
		}
		parts = append(parts, fmt.Sprintf("%s %d: %s", d.Name, d.Index, r))
	}
	sum.Drain = sum.Total > 0 && sum.Healthy == 0
	sum.Reason = strings.Join(parts, "; ")
	return sum, nil
}

// Allocation is what an Enforcer applies on a node for one job, or one
// step of a job: the CPUs, NUMA memory nodes, memory and device files the
// job (step) may use.
type Allocation struct {
	// Job is the job's id ("1234", "1234_7" for an array task, "1234+1"
	// for a heterogeneous component): 1-64 characters from [A-Za-z0-9_.+-],
	// not all dots.
	Job string
	// Step is "" for the job itself, or a step name of the same form
	// ("0", "batch", "extern"). A step is confined inside its job.
	Step string
	// CPUs are the logical CPUs (cpuset.cpus). Empty means no CPU
	// constraint (the cgroup inherits its parent's CPUs).
	CPUs CoreSet
	// Mems are the NUMA nodes whose memory may be used (cpuset.mems).
	// Empty means no constraint. Duplicates are ignored.
	Mems []int
	// MemoryBytes is the memory limit (memory.max); 0 means unlimited.
	MemoryBytes int64
	// Devices are the device files the job may open, typically
	// Discovery.FilesFor(allocated indices). What happens to other
	// devices is the Enforcer's policy (see its documentation).
	Devices []DeviceFile
}

// MaxNUMANode is the largest NUMA node id an Allocation may name.
const MaxNUMANode = 4095

// ValidName reports whether s is usable as an Allocation's Job or Step:
// 1-64 characters from [A-Za-z0-9_.+-], not all dots (so it is always a
// safe single path element).
func ValidName(s string) bool {
	if s == "" || len(s) > 64 || strings.Trim(s, ".") == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '.' || c == '+' || c == '-') {
			return false
		}
	}
	return true
}

// Validate checks the allocation: job and step names (see ValidName),
// NUMA nodes in [0, MaxNUMANode], a non-negative memory limit and valid
// device files. Errors wrap ErrInvalidAllocation and name the field.
func (a *Allocation) Validate() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: job %q step %q: "+format, append([]any{ErrInvalidAllocation, a.Job, a.Step}, args...)...)
	}
	switch {
	case !ValidName(a.Job):
		return bad("Job: want 1-64 characters from [A-Za-z0-9_.+-], not all dots")
	case a.Step != "" && !ValidName(a.Step):
		return bad("Step: want \"\" or 1-64 characters from [A-Za-z0-9_.+-], not all dots")
	case a.MemoryBytes < 0:
		return bad("MemoryBytes %d is negative (0 means unlimited)", a.MemoryBytes)
	}
	for _, m := range a.Mems {
		if m < 0 || m > MaxNUMANode {
			return bad("Mems: NUMA node %d outside [0, %d]", m, MaxNUMANode)
		}
	}
	for _, f := range a.Devices {
		if err := f.Validate(); err != nil {
			return bad("Devices: %v", err)
		}
	}
	return nil
}

// MemsString formats Mems as a Linux list ("0-1,3"; "" when empty), the
// format of cpuset.mems.
func (a *Allocation) MemsString() string {
	ids := slices.Clone(a.Mems)
	slices.Sort(ids)
	return string(appendIDList(nil, slices.Compact(ids)))
}

// Enforcer confines jobs on a node (cgroups, containers …).
//
// Apply creates the confinement of a.Job (a.Step == "") or of one step
// inside its job, or updates it when it exists; applying the same
// Allocation twice is the same as applying it once. A step's job must
// have been applied first (ErrJobNotApplied). Invalid allocations fail
// with ErrInvalidAllocation and change nothing.
//
// Release removes the confinement of a step, or of a job with all its
// steps when step is "", ending whatever still runs inside; releasing
// something that does not exist is not an error, so Release is
// idempotent. Invalid names fail with ErrInvalidAllocation.
//
// Both return ctx.Err() (possibly wrapped) when ctx is done before they
// start. Implementations must be safe for concurrent use.
type Enforcer interface {
	Apply(ctx context.Context, a Allocation) error
	Release(ctx context.Context, job, step string) error
}
