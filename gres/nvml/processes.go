//go:build cgo

package nvml

import (
	"cmp"
	"context"
	"fmt"
	"runtime"
	"slices"
	"time"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/sluicehq/sluice/gres"
)

var _ gres.ProcessSampler = (*Driver)(nil)

// processRetries bounds the calls of DeviceGetProcessUtilization when
// processes start between its size query and its read
// (ERROR_INSUFFICIENT_SIZE).
const processRetries = 3

// SampleProcesses reads which processes used each device of the last
// Discover (discovering first when there has been none) after since, and
// returns one gres.DeviceProcesses per device, in index order, from
// DeviceGetProcessUtilization(lastSeen = since in microseconds; the zero
// since reads every sample the driver's buffer holds):
//
//   - a whole GPU: one ProcessSample per process NVML saw active in the
//     window (NVML lists only processes with some activity), with
//     SMUtil and MemUtil in percent and Time the sample's CPU
//     timestamp; when NVML lists a process more than once its readings
//     are averaged and Time is the newest. No sample in the window
//     (ERROR_NOT_FOUND) is a Known device with no processes.
//   - a device whose attribution NVML cannot give is not Known: a MIG
//     slice (NVML does not sample processes on MIG-enabled GPUs), a GPU
//     answering ERROR_NOT_SUPPORTED, or one that has fallen off the bus
//     (ERROR_GPU_IS_LOST: the HealthWatcher reports that).
//
// Any other NVML failure fails the call with an error naming the device
// and wrapping the go-nvml Return. PIDs are the host's: an agent maps
// them to jobs through the cgroup that holds them (/proc/PID/cgroup, or
// the job's cgroup.procs). Unlike Sample, SampleProcesses keeps no state:
// the caller passes the time of its previous call as since.
func (d *Driver) SampleProcesses(ctx context.Context, since time.Time) ([]gres.DeviceProcesses, error) {
	if err := d.begin(ctx); err != nil {
		return nil, err
	}
	defer d.mu.RUnlock()
	snap, err := d.snap.Load(ctx, d.discover)
	if err != nil {
		return nil, err
	}
	var seen uint64
	if us := since.UnixMicro(); us > 0 {
		seen = uint64(us)
	}
	devs := snap.disc.Inventory.Devices
	out := make([]gres.DeviceProcesses, len(devs))
	for i, dv := range devs {
		out[i] = gres.DeviceProcesses{Index: dv.Index, UUID: dv.UUID}
	}
	for i := range snap.gpus {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		g := &snap.gpus[i]
		if g.pos < 0 {
			continue // MIG mode: its slices stay not Known
		}
		procs, known, err := processes(g.h, seen)
		if err != nil {
			return nil, fmt.Errorf("nvml: process sample of gpu %d (%s): %w", g.nvmlIndex, g.uuid, err)
		}
		out[g.pos].Known = known
		out[g.pos].Processes = procs
	}
	return out, nil
}

// processes reads one GPU's per-process utilisation after seen: the
// processes by PID, and whether the GPU attributes its activity at all.
func processes(h gonvml.Device, seen uint64) ([]gres.ProcessSample, bool, error) {
	var raw []gonvml.ProcessUtilizationSample
	ret := gonvml.ERROR_INSUFFICIENT_SIZE
	for try := 0; try < processRetries && ret == gonvml.ERROR_INSUFFICIENT_SIZE; try++ {
		raw, ret = getProcessUtilization(h, seen)
		if ret == gonvml.ERROR_INSUFFICIENT_SIZE && raw != nil && len(raw) == 0 {
			// go-nvml's answer when NVML's size query counts no
			// process: nothing to read.
			return nil, true, nil
		}
	}
	if ret == gonvml.ERROR_NOT_FOUND {
		return nil, true, nil
	}
	if ret != gonvml.SUCCESS {
		return nil, false, reading(ret, "GetProcessUtilization")
	}
	// NVML answers only the samples after lastSeen; drop any other, as
	// Sample does, so that no reading is counted twice.
	raw = slices.DeleteFunc(slices.Clone(raw), func(p gonvml.ProcessUtilizationSample) bool {
		return seen > 0 && p.TimeStamp <= seen
	})
	slices.SortFunc(raw, func(a, b gonvml.ProcessUtilizationSample) int { return cmp.Compare(a.Pid, b.Pid) })
	var out []gres.ProcessSample
	for k := 0; k < len(raw); {
		pid := raw[k].Pid
		var sm, mem float64
		var newest uint64
		n := 0
		for ; k < len(raw) && raw[k].Pid == pid; k++ {
			sm += float64(min(raw[k].SmUtil, 100))
			mem += float64(min(raw[k].MemUtil, 100))
			newest = max(newest, raw[k].TimeStamp)
			n++
		}
		if pid == 0 {
			continue // not a process: NVML's unused entries
		}
		p := gres.ProcessSample{PID: int(pid), SMUtil: sm / float64(n), MemUtil: mem / float64(n)}
		if newest > 0 {
			p.Time = micros(newest)
		}
		out = append(out, p)
	}
	return out, true, nil
}

// getProcessUtilization is h.GetProcessUtilization(seen), answering
// ERROR_INSUFFICIENT_SIZE where go-nvml panics: when processes start
// between its size query and its read, NVML's second call reports the
// larger count it needs and go-nvml (v0.13.4-1) slices its buffer to that
// count, past the buffer's capacity.
func getProcessUtilization(h gonvml.Device, seen uint64) (raw []gonvml.ProcessUtilizationSample, ret gonvml.Return) {
	defer func() {
		if r := recover(); r != nil {
			if _, ok := r.(runtime.Error); !ok {
				panic(r)
			}
			raw, ret = nil, gonvml.ERROR_INSUFFICIENT_SIZE
		}
	}()
	return h.GetProcessUtilization(seen)
}
