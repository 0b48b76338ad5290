package scheduler

import (
	"math"
	"reflect"

	"github.com/sluicehq/sluice/telemetry"
)

// Telemetry in a snapshot (minor 4). A job with telemetry (flag
// jfTelemetry) ends its record with: the usage of its past runs, merged
// (telemetry.Usage by field name, as the value codec writes structs), the
// idle-noted flag, then per node of its current allocation (as many as
// Alloc.Nodes, or none before its first reading in this run) the node's
// usage and its last CPU counter, then the steps read (per step and node:
// its name, the node's position in the allocation, its usage and last
// CPU counter). The nodes section ends, after the
// reboot extension, with the device energy counters: the count of nodes
// that have them, then per node its index and one counter per device
// (-1: none read yet). An older snapshot has neither: the jobs restore
// with no telemetry (Job.Usage nil) and the next reading of a device
// starts its counter.

func (e *senc) jobTelemetry(t *jobTelemetry) error {
	if err := e.encodeValue(reflect.ValueOf(&t.past).Elem()); err != nil {
		return err
	}
	e.bool(t.idleNoted)
	e.uvarint(uint64(len(t.nodes)))
	for i := range t.nodes {
		if err := e.encodeValue(reflect.ValueOf(&t.nodes[i].Usage).Elem()); err != nil {
			return err
		}
		e.f64(t.nodes[i].cpuLast)
	}
	e.uvarint(uint64(len(t.steps)))
	for i := range t.steps {
		u := &t.steps[i]
		e.str(u.step)
		e.int(u.pos)
		if err := e.encodeValue(reflect.ValueOf(&u.Usage).Elem()); err != nil {
			return err
		}
		e.f64(u.cpuLast)
	}
	return nil
}

func (d *sdec) jobTelemetry() *jobTelemetry {
	t := &jobTelemetry{}
	d.decodeValue(reflect.ValueOf(&t.past).Elem())
	t.idleNoted = d.bool()
	if n := d.count(); n > 0 && d.err == nil {
		t.nodes = make([]nodeUsage, n)
		for i := range t.nodes {
			d.decodeValue(reflect.ValueOf(&t.nodes[i].Usage).Elem())
			t.nodes[i].cpuLast = d.f64()
			if c := t.nodes[i].cpuLast; d.err == nil && !counterOK(c) {
				d.fail("telemetry: CPU counter %v", c)
			}
		}
	}
	if n := d.count(); n > 0 && d.err == nil {
		t.steps = make([]stepUsage, n)
		for i := range t.steps {
			u := &t.steps[i]
			u.step = d.str()
			u.pos = d.intIn(0, MaxNodesPerJob-1, "step node")
			d.decodeValue(reflect.ValueOf(&u.Usage).Elem())
			u.cpuLast = d.f64()
			switch {
			case d.err != nil:
			case badStepName(u.step) != "":
				d.fail("telemetry: %s", badStepName(u.step))
			case !counterOK(u.cpuLast):
				d.fail("telemetry: step %s: CPU counter %v", u.step, u.cpuLast)
			case validUsage(&u.Usage) != "":
				d.fail("telemetry: step %s: %s", u.step, validUsage(&u.Usage))
			}
		}
		if d.err == nil && t.stepCount() > MaxSteps {
			d.fail("telemetry: %d steps (at most %d)", t.stepCount(), MaxSteps)
		}
	}
	if d.err == nil {
		if err := validUsage(&t.past); err != "" {
			d.fail("telemetry: past usage: %s", err)
		}
		for i := range t.nodes {
			if err := validUsage(&t.nodes[i].Usage); err != "" {
				d.fail("telemetry: node %d usage: %s", i, err)
			}
		}
	}
	return t
}

// counterOK reports whether x is a restorable last counter (a CPU or
// energy counter): finite and non-negative, or -1 (none read yet).
func counterOK(x float64) bool { return x == -1 || (x >= 0 && !math.IsInf(x, 1)) }

// validUsage says what is wrong with a restored usage ("" if nothing):
// negative or non-finite sums and maxima, which no fold of valid readings
// gives.
func validUsage(u *telemetry.Usage) string {
	for _, x := range [...]float64{u.GPUSeconds, u.BusyGPUSeconds, u.UtilizationMax, u.MemoryMiBSeconds, u.CoveredSeconds,
		u.EnergyJoules, u.IdleSeconds, u.CPUSeconds, u.PowerMaxWatts} {
		if !(x >= 0 && !math.IsInf(x, 1)) {
			return "a sum out of range"
		}
	}
	if u.Samples < 0 || u.HostSamples < 0 || u.MemoryMaxMiB < 0 || u.MemoryPeakBytes < 0 {
		return "a negative count"
	}
	return ""
}

// snapNodeTelemetry writes the energy counters of the nodes whose
// counters match their devices: counters left from before a change of
// the node's devices (UpdateNode) are not written, since the next
// reading would start them again anyway (telemetry).
func snapNodeTelemetry(e *senc, s *Scheduler) {
	c := 0
	for i := range s.nodes {
		if s.nodes[i].keepsEnergy() {
			c++
		}
	}
	e.uvarint(uint64(c))
	for i := range s.nodes {
		if s.nodes[i].keepsEnergy() {
			en := s.nodes[i].tel.energy
			e.uvarint(uint64(i))
			e.uvarint(uint64(len(en)))
			for _, x := range en {
				e.f64(x)
			}
		}
	}
}

// keepsEnergy reports whether node n's energy counters are current:
// some, one per device of its inventory.
func (n *node) keepsEnergy() bool {
	return len(n.tel.energy) > 0 && !n.removed && n.devs != nil && len(n.tel.energy) == len(n.devs.Inventory().Devices)
}

// loadNodeTelemetry reads the energy counters, when the section has them.
func (s *Scheduler) loadNodeTelemetry(d *sdec) {
	if d.err != nil || d.off == len(d.b) {
		return
	}
	k := d.count()
	for range k {
		u := d.uvarint()
		nd := d.count()
		if d.err != nil {
			return
		}
		if u >= uint64(len(s.nodes)) || s.nodes[u].devs == nil || nd != len(s.nodes[u].devs.Inventory().Devices) {
			d.fail("telemetry: energy counters of node index %d: no such node, or not %d devices", u, nd)
			return
		}
		n := &s.nodes[u]
		if len(n.tel.energy) > 0 {
			d.fail("node %s: energy counters twice", n.cfg.Name)
			return
		}
		en := make([]float64, nd)
		for i := range en {
			en[i] = d.f64()
			if x := en[i]; d.err == nil && !counterOK(x) {
				d.fail("node %s: energy counter %v", n.cfg.Name, x)
			}
		}
		n.tel.energy = en
	}
}
