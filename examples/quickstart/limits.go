package main

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/sluicehq/sluice/backfill"
	"github.com/sluicehq/sluice/gres"
	"github.com/sluicehq/sluice/gres/gpuserver"
	"github.com/sluicehq/sluice/policy"
	"github.com/sluicehq/sluice/scheduler"
)

// limitHeld is a small, self-contained scene of its own: on two h100
// server under a per-user limit of 8 GPUs, ann's 8-GPU job runs until
// 11:00, so her next job is held by the limit (Slurm's QOSMaxGRESPerUser)
// although GPUs are free. The backfill plan carries the limit over time:
// Explain gives the held job an expected start — when ann's running job
// ends — and bob's long job, which would take the GPUs it needs then, is
// not started in front of it.
func limitHeld(w io.Writer) error {
	const gib = 1024
	nodes := []scheduler.NodeConfig{{Name: "h100-01", CPUs: 128, MemoryMiB: 2048 * gib, Devices: gpuserver.DGXH100()},
		{Name: "h100-02", CPUs: 128, MemoryMiB: 2048 * gib, Devices: gpuserver.DGXH100()}}
	reg, err := scheduler.NewRegistry(nodes)
	if err != nil {
		return err
	}
	perUser, err := policy.ParseTRESLimits(reg, "gres/gpu=8")
	if err != nil {
		return err
	}
	s, err := scheduler.New(scheduler.Config{
		Nodes: nodes, Registry: reg,
		Partitions: []scheduler.PartitionConfig{{Name: "gpu", Default: true, MaxTime: 24 * time.Hour}},
		Backfill:   &backfill.Config{Mode: backfill.EASY},
		Policy:     &policy.Config{QOS: []policy.QOS{{Name: "normal", Limits: policy.QOSLimits{MaxTRESPerUser: perUser}}}},
	})
	if err != nil {
		return err
	}
	now := time.Date(2026, 1, 5, 9, 0, 0, 0, time.UTC)
	gpus := func(n int64) []gres.Request { return []gres.Request{{Name: "gpu", Count: n}} }
	submit := func(user string, n int64, limit time.Duration) (scheduler.JobID, error) {
		return s.Submit(now, scheduler.JobSpec{User: user, Account: "lab", GRESPerNode: gpus(n), CPUsPerTask: 8, TimeLimit: limit})
	}
	if _, err := submit("ann", 8, 2*time.Hour); err != nil {
		return err
	}
	if _, err := submit("bob", 4, 4*time.Hour); err != nil {
		return err
	}
	if _, err := s.Schedule(now); err != nil {
		return err
	}
	now = now.Add(10 * time.Minute)
	held, err := submit("ann", 4, time.Hour)
	if err != nil {
		return err
	}
	if _, err := s.Schedule(now); err != nil {
		return err
	}
	ex, err := s.Explain(now, held, scheduler.ExplainOptions{})
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "== a job held by a limit gets an expected start (limit-aware planning)\n%s\n", strings.TrimRight(ex.String(), "\n"))
	return nil
}
