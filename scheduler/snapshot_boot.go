package scheduler

import "slices"

// The nodes section's reboot extension (snapshot minor 3): after the
// nodes, the count of rebooting nodes, then per node its index, BootTime
// deadline, the job it reboots for and the features it boots into. An
// older snapshot ends the section before it: no node is rebooting.

func snapBoots(e *senc, s *Scheduler) {
	e.uvarint(uint64(s.boot.n))
	for i := s.boot.nodes.Next(0); s.boot.n > 0 && i >= 0; i = s.boot.nodes.Next(i + 1) {
		n := &s.nodes[i]
		e.uvarint(uint64(i))
		e.time(n.boot.until)
		e.uvarint(uint64(n.boot.job))
		e.uvarint(uint64(len(n.boot.features)))
		for _, f := range n.boot.features {
			e.str(f)
		}
	}
}

// loadBoots reads the reboot extension, when the section has one.
func (s *Scheduler) loadBoots(d *sdec) {
	if d.err != nil || d.off == len(d.b) {
		return
	}
	k := d.count()
	for range k {
		u := d.uvarint()
		i := int(min(u, uint64(len(s.nodes)))) // an index past the nodes (any int overflow) is refused below
		until := d.time()
		job := JobID(d.uvarint())
		nf := d.count()
		var fs []string
		for range nf {
			fs = append(fs, d.str())
		}
		switch {
		case d.err != nil:
			return
		case i >= len(s.nodes) || s.nodes[i].removed:
			d.fail("reboot of node index %d: no such node", u)
			return
		case s.nodes[i].booting():
			d.fail("node %s: rebooting twice", s.nodes[i].cfg.Name)
			return
		case until.IsZero():
			d.fail("node %s: reboot without a deadline", s.nodes[i].cfg.Name)
			return
		case len(s.nodes[i].jobs) > 0:
			d.fail("node %s: rebooting with jobs %v", s.nodes[i].cfg.Name, s.nodes[i].jobs)
			return
		}
		s.setBooting(i, nodeBoot{until: until, features: slices.Clip(fs), job: job})
	}
}
