package scheduler

import (
	"time"

	"github.com/sluicehq/sluice/gres"
	"github.com/sluicehq/sluice/telemetry"
)

// telemetry draws a telemetry event into op (or, one time in eight, a
// change of the telemetry configuration): samples of a node's devices
// (indices sometimes past the node's, readings sometimes out of range or
// unknown, counters mostly rising), readings of recently started jobs
// (sometimes of a step, sometimes twice, sometimes of an unknown job).
func (g *fzGen) telemetry(op *fzOp) {
	s := g.src
	if s.chance(8) {
		op.Kind = fkSetTelemetry
		op.TelCfg = TelemetryConfig{
			Rule: telemetry.Rule{IdleBelow: fzPick[float64](s, 0, 5, 50, 50, 100, 100, -1, 101), IdleAfter: fzPick(s, 0, time.Second, time.Minute, time.Hour, -time.Second),
				MaxGap: fzPick(s, 0, 0, time.Minute, -1)},
			Action: fzPick(s, IdleNotify, IdleRequeue, IdleCancel, IdleRequeue, IdleCancel, IdleAction(7)),
			Grace:  fzPick(s, 0, time.Second, 10*time.Minute, -time.Minute),
		}
		return
	}
	g.reads++
	op.Kind = fkTelemetry
	k := s.intn(len(g.c.Nodes))
	if len(g.startedOn) > 0 && !s.chance(4) {
		k = g.startedOn[len(g.startedOn)-1-s.intn(min(len(g.startedOn), 6))]
	}
	if k >= len(g.c.Nodes) {
		k = 0 // a node added since (its GPU count unknown here)
	}
	ev := TelemetryEvent{Node: fzNodeName(k)}
	ng := g.c.Nodes[k].Sockets * g.c.Nodes[k].GPUsPerSocket
	if s.chance(15) {
		ev.Node, ng = g.node(), g.gpus
	}
	n := ng
	if s.chance(3) {
		n = s.intn(ng + 1)
	}
	if s.chance(30) {
		n = ng + 1 // a device past the node's
	}
	// Mostly one utilisation for the whole node (an idle or a busy
	// phase), so that idle runs of jobs happen.
	util := fzPick[float64](s, 0, 1, 3, 80, -2)
	for i := range n {
		u := util
		if u == -2 {
			u = fzPick(s, 0, 1, 3, 50, 99.5, 100, -1)
		}
		d := gres.DeviceSample{Index: i, Utilization: u, MemoryUsedMiB: fzPick[int64](s, -1, 0, 1024, 80000),
			PowerWatts: fzPick(s, -1, 0, 350.5), EnergyJoules: fzPick(s, -1, float64(100*g.reads+i), float64(100*g.reads+i), 5)}
		switch s.intn(120) {
		case 0:
			d.Index = fzPick(s, -1, ng, 1<<20, i-1)
		case 1:
			d.Utilization = fzPick(s, 100.5, -2)
		case 2:
			d.UUID = "GPU-wrong"
		}
		ev.Devices = append(ev.Devices, d)
	}
	for range s.intn(4) {
		id := g.id()
		if len(g.started) > 0 && !s.chance(3) {
			id = g.started[len(g.started)-1-s.intn(min(len(g.started), 6))]
		}
		r := JobReading{Job: id, CPUSeconds: fzPick(s, -1, float64(g.reads), float64(3*g.reads), 0.5), MemoryPeakBytes: fzPick[int64](s, -1, 0, 1<<30)}
		if s.chance(30) {
			r.CPUSeconds, r.MemoryPeakBytes = fzPick(s, -3, r.CPUSeconds), fzPick[int64](s, r.MemoryPeakBytes, -2)
		}
		if s.chance(4) {
			r.Step = fzPick(s, "batch", "0", "1", "extern", "")
		}
		if s.chance(3) {
			r.GPUs = []JobGPUReading{{Index: s.intn(max(ng, 1)), Utilization: fzPick[float64](s, 0, 2, 70, 100)}}
			if s.chance(20) {
				r.GPUs[0].Index, r.GPUs[0].Utilization = ng, 101
			}
		}
		ev.Jobs = append(ev.Jobs, r)
	}
	op.Tel = ev
}
