// Command mixedvendor schedules one cluster of NVIDIA, AMD and Intel GPU
// nodes, each described by what its vendor's driver discovers, and shows
// that GRES types route jobs to the right hardware, plain GPU requests
// use any of it, device choice follows each vendor's fabric (NVLink,
// XGMI, Xe Link) the same way, and a health event from a driver withholds
// the device on any vendor.
//
//	go run ./examples/mixedvendor
//
// The nodes (scheduler/vendortest): an NVIDIA DGX H100 discovered by the
// NVML driver over its mock (8 × h100 on NVSwitch; without cgo, the
// inventory that driver reports), an 8 × MI300X node with one xGMI hive
// and an 8 × Intel Max 1550 node, both discovered by their sysfs drivers
// (gres/amd, gres/intel) from fixture trees, the Intel one listed as 16
// tiles with Xe Link. A real cluster builds the same NodeConfigs from
// each node agent's Discover (nvml.Open, amd.Open, intel.Open).
package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/sluicehq/sluice/gres"
	"github.com/sluicehq/sluice/scheduler"
	"github.com/sluicehq/sluice/scheduler/vendortest"
)

func main() {
	if err := run(os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "mixedvendor:", err)
		os.Exit(1)
	}
}

// job is one job of the demo workload.
type job struct {
	name string
	gres string // --gres per node, e.g. "gpu:h100:4"
}

// workload is submitted in this order at t0.
var workload = []job{
	{"llm-pretrain", "gpu:h100:4"},
	{"md-sim", "gpu:mi300x:4"},
	{"inference", "gpu:max_1550_tile:2"},
	{"finetune", "gpu:max_1550_tile:4"},
	{"any-8", "gpu:8"},
	{"any-4", "gpu:4"},
}

var t0 = time.Date(2026, 3, 1, 8, 0, 0, 0, time.UTC)

func run(w io.Writer) error {
	dir, err := os.MkdirTemp("", "mixedvendor")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	nodes, err := vendortest.All(dir)
	if err != nil {
		return err
	}
	cfg := scheduler.Config{Partitions: []scheduler.PartitionConfig{{Name: "gpu", Default: true, MaxTime: 24 * time.Hour}}}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NODE\tVENDOR\tGPUS\tTYPE\tFABRIC\tMEM/GPU")
	for _, n := range nodes {
		cfg.Nodes = append(cfg.Nodes, n.Config)
		inv := n.Config.Devices
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%v\t%d GiB\n", n.Config.Name, n.Vendor, len(inv.Devices), n.Type, inv.Link(0, 1).Fabric, inv.Devices[0].MemoryMiB/1024)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	s, err := scheduler.New(cfg)
	if err != nil {
		return err
	}
	ids := map[scheduler.JobID]job{}
	for _, j := range workload {
		reqs, err := gres.ParseGRES(j.gres)
		if err != nil {
			return err
		}
		id, err := s.Submit(t0, scheduler.JobSpec{Name: j.name, GRESPerNode: reqs, TimeLimit: 2 * time.Hour})
		if err != nil {
			return fmt.Errorf("submit %s: %w", j.name, err)
		}
		ids[id] = j
	}
	if _, err := s.Schedule(t0); err != nil {
		return err
	}
	fmt.Fprintln(w)
	if err := squeue(w, s, ids); err != nil {
		return err
	}

	// The Intel jobs end. Then a fatal error on one Intel tile: the
	// driver reports it, the scheduler withholds the tile, and a job
	// wanting all sixteen tiles waits while fifteen are free.
	t1 := t0.Add(time.Hour)
	for id, j := range ids {
		if j.name == "inference" || j.name == "finetune" || j.name == "any-8" {
			if err := s.Finish(t1, id, 0); err != nil {
				return err
			}
		}
	}
	in := nodes[slices.IndexFunc(nodes, func(n vendortest.Node) bool { return n.Vendor == "intel" })]
	ev, err := in.Fault(15)
	if err != nil {
		return err
	}
	if err := s.SetDeviceHealth(t1, in.Config.Name, ev.Index, ev.Healthy, ev.Reason); err != nil {
		return err
	}
	info, ok := s.Node(in.Config.Name)
	if !ok {
		return errors.New("intel node missing")
	}
	fmt.Fprintf(w, "\nintel driver: device %d unhealthy: %s\n", ev.Index, ev.Reason)
	fmt.Fprintf(w, "%s: state %v, unhealthy devices %v, %d devices free\n", info.Name, info.State, info.UnhealthyDevices, len(info.FreeDevices))
	reqs, _ := gres.ParseGRES("gpu:max_1550_tile:16")
	id, err := s.Submit(t1, scheduler.JobSpec{Name: "all-tiles", GRESPerNode: reqs, TimeLimit: time.Hour})
	if err != nil {
		return err
	}
	ids[id] = job{"all-tiles", "gpu:max_1550_tile:16"}
	if _, err := s.Schedule(t1); err != nil {
		return err
	}
	fmt.Fprintln(w)
	return squeue(w, s, ids)
}

// squeue prints the jobs: state, reason, node and devices.
func squeue(w io.Writer, s *scheduler.Scheduler, ids map[scheduler.JobID]job) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "JOBID\tNAME\tGRES\tSTATE\tNODE(REASON)\tDEVICES")
	keys := make([]scheduler.JobID, 0, len(ids))
	for id := range ids {
		keys = append(keys, id)
	}
	slices.Sort(keys)
	for _, id := range keys {
		j, ok := s.Job(id)
		if !ok {
			return fmt.Errorf("job %v missing", id)
		}
		where, devs := "("+j.Reason.String()+")", ""
		if len(j.Alloc.Nodes) > 0 {
			na := j.Alloc.Nodes[0]
			where = na.Name
			devs = strings.Trim(fmt.Sprint(na.Devices), "[]")
		}
		fmt.Fprintf(tw, "%v\t%s\t%s\t%v\t%s\t%s\n", id, ids[id].name, ids[id].gres, j.State, where, devs)
	}
	return tw.Flush()
}
