package gres

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"
)

// ProcessSample is one process's share of one device's activity over a
// sampling window, as a telemetry driver reports it (NVML's per-process
// utilisation). It lets an agent attribute a shared device's activity to
// the job whose cgroup holds the process. A reading the driver does not
// give is -1.
type ProcessSample struct {
	// PID is the process id in the driver's PID namespace (for NVML, the
	// host's: an agent in a container with its own PID namespace sees
	// other numbers).
	PID int
	// SMUtil is the percentage of the window the process had kernels
	// running on the device's compute units (NVML's smUtil), in [0, 100].
	SMUtil float64
	// MemUtil is the percentage of the window the process was reading or
	// writing device memory (NVML's memUtil: frame-buffer bandwidth, not
	// memory held), in [0, 100].
	MemUtil float64
	// Time is when the newest reading of the process in the window was
	// taken, on the host's clock; the zero Time when the driver gives none.
	Time time.Time
}

// DeviceProcesses is the per-process activity of one device over a
// sampling window.
type DeviceProcesses struct {
	Index int    // the device's Index in the last Discovery's inventory
	UUID  string // the device's UUID ("" if the inventory has none)
	// Known is false when the device cannot attribute its activity to
	// processes (the query is not supported, the device is a MIG slice
	// or has fallen off the bus): Processes is then empty and says
	// nothing about what ran. Known with no Processes means no process
	// was active on the device in the window.
	Known bool
	// Processes are the processes active in the window, one per PID, in
	// increasing PID order.
	Processes []ProcessSample
}

// Validate checks the readings: a non-negative index, positive PIDs in
// increasing order (one sample per process), utilisations in [0, 100] or
// exactly -1, and no processes on a device whose attribution is not
// Known. Errors wrap ErrInvalidRequest and name the device and process.
func (d DeviceProcesses) Validate() error {
	if d.Index < 0 {
		return fmt.Errorf("%w: processes of device %d: negative index", ErrInvalidRequest, d.Index)
	}
	if !d.Known && len(d.Processes) > 0 {
		return fmt.Errorf("%w: processes of device %d: %d processes on a device whose attribution is unknown", ErrInvalidRequest, d.Index, len(d.Processes))
	}
	pct := func(v float64) bool { return v == -1 || v >= 0 && v <= 100 }
	for k, p := range d.Processes {
		switch {
		case p.PID <= 0:
			return fmt.Errorf("%w: processes of device %d: pid %d not positive", ErrInvalidRequest, d.Index, p.PID)
		case k > 0 && p.PID <= d.Processes[k-1].PID:
			return fmt.Errorf("%w: processes of device %d: pid %d after pid %d (want one sample per pid, increasing)", ErrInvalidRequest, d.Index, p.PID, d.Processes[k-1].PID)
		case !pct(p.SMUtil):
			return fmt.Errorf("%w: processes of device %d: pid %d: SM utilization %v outside [0, 100] (or -1 for unknown)", ErrInvalidRequest, d.Index, p.PID, p.SMUtil)
		case !pct(p.MemUtil):
			return fmt.Errorf("%w: processes of device %d: pid %d: memory utilization %v outside [0, 100] (or -1 for unknown)", ErrInvalidRequest, d.Index, p.PID, p.MemUtil)
		}
	}
	return nil
}

// ProcessSampler reads which processes used a node's devices.
//
// SampleProcesses returns one DeviceProcesses per device of the last
// Discovery, in index order, each valid (DeviceProcesses.Validate),
// covering the readings taken after since (the zero Time: every reading
// the driver still holds). A caller sampling in a loop passes the time of
// its previous call, so that no reading is counted twice. It does its own
// I/O and returns ctx.Err() (possibly wrapped) when ctx is done first.
type ProcessSampler interface {
	SampleProcesses(ctx context.Context, since time.Time) ([]DeviceProcesses, error)
}

// DeviceShare is the activity of one job's processes on one device over a
// sampling window: the sum of their per-process readings.
type DeviceShare struct {
	Job   string // the job holding the processes, as jobOf named it
	Index int    // the device's Index
	UUID  string // the device's UUID ("" if the inventory has none)
	// SMUtil and MemUtil are the sums of the job's processes' readings,
	// capped at 100; -1 when none of its processes had that reading.
	SMUtil, MemUtil float64
	// Processes is the number of the job's processes seen on the device.
	Processes int
}

// AttributeProcesses sums per-process device activity per job: jobOf maps
// a PID to the job whose cgroup holds it (false for a process of no job:
// it is left out; a nil jobOf holds none). The result has one DeviceShare per job and device
// with at least one of the job's processes, ordered by device (as in
// devs) then job. Devices whose attribution is not Known contribute
// nothing: their activity is reported per device only (DeviceSample).
func AttributeProcesses(devs []DeviceProcesses, jobOf func(pid int) (job string, ok bool)) []DeviceShare {
	if jobOf == nil {
		return nil
	}
	var out []DeviceShare
	for _, d := range devs {
		if !d.Known {
			continue
		}
		first := len(out)
		at := map[string]int{} // job → position in out
		for _, p := range d.Processes {
			job, ok := jobOf(p.PID)
			if !ok {
				continue
			}
			k, seen := at[job]
			if !seen {
				k = len(out)
				at[job] = k
				out = append(out, DeviceShare{Job: job, Index: d.Index, UUID: d.UUID, SMUtil: -1, MemUtil: -1})
			}
			s := &out[k]
			s.SMUtil = addShare(s.SMUtil, p.SMUtil)
			s.MemUtil = addShare(s.MemUtil, p.MemUtil)
			s.Processes++
		}
		slices.SortFunc(out[first:], func(a, b DeviceShare) int { return strings.Compare(a.Job, b.Job) })
	}
	return out
}

// addShare adds reading v (-1: unknown) to the sum s (-1: no reading
// yet), capped at 100.
func addShare(s, v float64) float64 {
	switch {
	case v < 0 || v != v:
		return s
	case s < 0:
		return min(v, 100)
	}
	return min(s+v, 100)
}
