package main

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/sluicehq/sluice/backfill"
	"github.com/sluicehq/sluice/gres"
	"github.com/sluicehq/sluice/gres/gpuserver"
	"github.com/sluicehq/sluice/scheduler"
	"github.com/sluicehq/sluice/telemetry"
)

// idleRule is the quickstart's telemetry rule (Config.Telemetry.Rule): a
// job whose GPUs stay below 5 % utilisation for 30 minutes is allocated
// but idle.
var idleRule = telemetry.Rule{IdleBelow: 5, IdleAfter: 30 * time.Minute}

// allocatedIdle is a scene of its own on two h100 servers: ann's and
// bob's 8-GPU jobs hold both. A node agent (here: made-up gres.DeviceSample
// values, as gres/nvml's Sample returns them) reports every minute; bob's
// GPUs work at 85 %, ann's sit at 1 % (the job waits on its data). After
// 45 minutes IdleCapacity counts ann's GPUs as "allocated-idle", and
// Explain of cy's job, waiting for 8 GPUs, says that the job whose end it
// waits for is idle.
func allocatedIdle(w io.Writer) error {
	const gib = 1024
	nodes := []scheduler.NodeConfig{{Name: "h100-01", CPUs: 128, MemoryMiB: 2048 * gib, Devices: gpuserver.DGXH100()},
		{Name: "h100-02", CPUs: 128, MemoryMiB: 2048 * gib, Devices: gpuserver.DGXH100()}}
	s, err := scheduler.New(scheduler.Config{
		Nodes:      nodes,
		Partitions: []scheduler.PartitionConfig{{Name: "gpu", Default: true, MaxTime: 24 * time.Hour}},
		Backfill:   &backfill.Config{Mode: backfill.EASY},
		Telemetry:  scheduler.TelemetryConfig{Rule: idleRule},
	})
	if err != nil {
		return err
	}
	now := time.Date(2026, 1, 5, 9, 0, 0, 0, time.UTC)
	submit := func(user string, limit time.Duration) (scheduler.JobID, error) {
		return s.Submit(now, scheduler.JobSpec{User: user, Account: "lab", GRESPerNode: []gres.Request{{Name: "gpu", Count: 8}},
			CPUsPerTask: 8, TimeLimit: limit})
	}
	ann, err := submit("ann", 4*time.Hour)
	if err != nil {
		return err
	}
	bob, err := submit("bob", 6*time.Hour)
	if err != nil {
		return err
	}
	if _, err := s.Schedule(now); err != nil {
		return err
	}
	util := map[scheduler.JobID]float64{ann: 1, bob: 85}
	for range 45 {
		now = now.Add(time.Minute)
		for _, id := range []scheduler.JobID{ann, bob} {
			j, _ := s.Job(id)
			na := j.Alloc.Nodes[0]
			samples := make([]gres.DeviceSample, 0, len(na.Devices))
			for _, d := range na.Devices {
				watts := 70 + 6*util[id] // idle boards still draw power
				samples = append(samples, gres.DeviceSample{Index: d, Utilization: util[id], MemoryUsedMiB: 30 * gib,
					PowerWatts: watts, EnergyJoules: watts * now.Sub(j.StartTime).Seconds()})
			}
			if _, err := s.ReportTelemetry(now, scheduler.TelemetryEvent{Node: na.Name, Devices: samples}); err != nil {
				return err
			}
		}
	}
	cy, err := submit("cy", 2*time.Hour)
	if err != nil {
		return err
	}
	if _, err := s.Schedule(now); err != nil {
		return err
	}
	fmt.Fprintf(w, "== allocated but idle (telemetry rule: GPUs below %g%% for %.0f minutes)\n", idleRule.IdleBelow, idleRule.IdleAfter.Minutes())
	for _, id := range []scheduler.JobID{ann, bob} {
		j, _ := s.Job(id)
		u := j.Usage
		state := "working"
		if d := u.IdleFor(); d > 0 {
			state = fmt.Sprintf("idle for %.0f minutes", d.Minutes())
		}
		fmt.Fprintf(w, "job %d (%s) on %s: %.1f%% mean GPU utilisation, %.1f of %.1f GPU-hours busy, %.1f kWh, %s\n",
			id, j.Spec.User, j.Alloc.Nodes[0].Name, u.MeanUtilization(), u.BusyGPUSeconds/3600, u.GPUSeconds/3600,
			u.EnergyJoules/3.6e6, state)
	}
	fmt.Fprintf(w, "\n%s\n\n", strings.TrimRight(s.IdleCapacity(now).String(), "\n"))
	ex, err := s.Explain(now, cy, scheduler.ExplainOptions{})
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "%s\n", strings.TrimRight(ex.String(), "\n"))
	return nil
}
