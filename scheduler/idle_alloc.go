package scheduler

import (
	"strings"
	"time"
)

// Allocated but idle (IdleAllocated, Explain's IdleHolder): a running
// job whose GPU readings say it does nothing with what it holds. The
// job-level rule is jobTelemetry.idle (every node that reported is idle
// under Config.Telemetry.Rule); a node of the job counts its units as
// idle only when its own readings show it (a node without readings is
// unmeasured, not idle). Nothing here reads a clock.

// idleOn reports whether running job j is allocated but idle on the node
// at position pos of its allocation, and for how long (the job's
// shortest idle time over its nodes).
func (s *Scheduler) idleOn(j *job, pos int) (bool, time.Duration) {
	rule := s.telCfg.Rule
	if rule.IdleBelow <= 0 || j.tel == nil || j.State != JobRunning || pos < 0 || pos >= len(j.tel.nodes) {
		return false, 0
	}
	if !j.tel.nodes[pos].IsIdle(rule) {
		return false, 0
	}
	return j.tel.idle(rule)
}

// allocatedIdle counts the units of node i allocated to running jobs
// that are idle there (see IdleAllocated): GPUs and CPUs, each once, and
// how many of those GPUs are held only through shares (which the node's
// free gres/gpu still counts). With the rule off it does nothing.
func (s *Scheduler) allocatedIdle(i int) (gpus, cpus, shared int64) {
	if s.telCfg.Rule.IdleBelow <= 0 {
		return 0, 0, 0
	}
	n := &s.nodes[i]
	some := false
	for j, pos := range s.runningOn(n, i) {
		if ok, _ := s.idleOn(j, pos); ok {
			some = true
			break
		}
	}
	if !some {
		return 0, 0, 0 // the common case: no map is made
	}
	// Per device and CPU id: held by an idle job, by a busy one, whole.
	idleDev, busyDev, whole := map[int]bool{}, map[int]bool{}, map[int]bool{}
	idleCPU, busyCPU := map[int]bool{}, map[int]bool{}
	for j, pos := range s.runningOn(n, i) {
		na := &j.Alloc.Nodes[pos]
		dev, cpu := busyDev, busyCPU
		if ok, _ := s.idleOn(j, pos); ok {
			dev, cpu = idleDev, idleCPU
		}
		for _, d := range na.Devices {
			dev[d], whole[d] = true, true
		}
		for _, sh := range na.Shares {
			dev[sh.Device] = true
		}
		for _, c := range na.CPUs {
			cpu[c] = true
		}
	}
	for _, d := range n.cfg.Devices.Devices {
		if !strings.EqualFold(d.Name, "gpu") || !idleDev[d.Index] || busyDev[d.Index] {
			continue
		}
		gpus++
		if !whole[d.Index] {
			shared++
		}
	}
	for c := range idleCPU {
		if !busyCPU[c] {
			cpus++
		}
	}
	return gpus, cpus, shared
}
