package scheduler

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/sluicehq/sluice/gres"
)

// IdleHolder is a running job that a pending job's expected start waits
// for (Estimate.WaitsFor: it ends by then on the planned nodes) and that
// is allocated but idle there under Config.Telemetry.Rule — the GPUs the
// pending job waits for are held by a job whose readings say it does
// nothing with them (the class IdleAllocated of IdleCapacity, from the
// same evidence).
type IdleHolder struct {
	Job           JobID
	User, Account string
	// GPUs lists, per planned node of the waiting job on which the holder
	// is idle, the devices it holds there (whole or shared, in index
	// order); GPUCount counts them.
	GPUs     []NodeGPUs
	GPUCount int
	// MeanUtilization is the time-weighted mean GPU utilisation (percent)
	// of the holder's current run over all its nodes
	// (telemetry.Usage.MeanUtilization).
	MeanUtilization float64
	// IdleFor is how long its readings have stayed below IdleBelow without
	// a break, up to the latest (the shortest over its nodes); IdleBelow
	// is the rule's threshold in percent.
	IdleFor   time.Duration
	IdleBelow float64
	// End is when it ends at the latest (its time limit).
	End time.Time
}

// MarshalJSON encodes the holder with IdleFor in Slurm's time format.
func (h IdleHolder) MarshalJSON() ([]byte, error) {
	type plain IdleHolder
	return json.Marshal(struct {
		plain
		IdleFor dur
	}{plain(h), dur(h.IdleFor)})
}

// idleHolders returns the running jobs of ends (those the estimate waits
// for) that are allocated but idle on a node of nodes (the planned ones),
// in the order of ends (soonest end first), at most max of them, and how
// many there are. With the rule off it does nothing.
func (s *Scheduler) idleHolders(ends []RunningEnd, nodes []int, maxListed int) ([]IdleHolder, int) {
	if s.telCfg.Rule.IdleBelow <= 0 || len(ends) == 0 {
		return nil, 0
	}
	var out []IdleHolder
	total := 0
	for _, r := range ends {
		j := s.jobs[r.Job]
		if j == nil || j.tel == nil {
			continue
		}
		h := IdleHolder{Job: j.ID, User: j.Spec.User, Account: j.Spec.Account, IdleBelow: s.telCfg.Rule.IdleBelow, End: r.End}
		for pos := range j.Alloc.Nodes {
			na := &j.Alloc.Nodes[pos]
			if !slices.Contains(nodes, na.Node) {
				continue
			}
			ok, d := s.idleOn(j, pos)
			if !ok {
				continue
			}
			devs := slices.Sorted(heldDevs(na)) // whole or shared, each once
			if len(devs) == 0 {
				continue
			}
			h.IdleFor = d
			h.GPUs = append(h.GPUs, NodeGPUs{Node: na.Name, Indices: devs})
			h.GPUCount += len(devs)
		}
		if h.GPUCount == 0 {
			continue
		}
		total++
		if len(out) < maxListed {
			h.MeanUtilization = j.tel.runUsage().MeanUtilization()
			out = append(out, h)
		}
	}
	return out, total
}

// writeIdle writes the allocated-but-idle jobs the estimate waits for,
// one line each (their ends are on the waits-for line).
func (e *Estimate) writeIdle(b *strings.Builder) {
	for _, h := range e.WaitsForIdle {
		fmt.Fprintf(b, "    job %d", h.Job)
		if h.User != "" {
			fmt.Fprintf(b, " (%s)", h.User)
		}
		b.WriteString(" holds")
		for _, g := range h.GPUs {
			fmt.Fprintf(b, " %s[%s]", g.Node, gres.FormatIDList(g.Indices))
		}
		fmt.Fprintf(b, " allocated but idle: %.1f%% mean GPU utilisation, below %g%% for %s\n",
			h.MeanUtilization, h.IdleBelow, fmtDur(h.IdleFor))
	}
	if n := e.WaitsForIdleTotal - len(e.WaitsForIdle); n > 0 {
		fmt.Fprintf(b, "    … %d more allocated-but-idle job(s) it waits for\n", n)
	}
}
