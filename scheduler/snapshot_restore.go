package scheduler

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"maps"
	"reflect"
	"slices"
	"time"

	"github.com/sluicehq/sluice/backfill"
	"github.com/sluicehq/sluice/gres"
	"github.com/sluicehq/sluice/policy"
	"github.com/sluicehq/sluice/priority"
)

// RestoreOptions carries what a snapshot does not hold because it is not
// data: the hooks and sources of the configuration. Each one the
// snapshotted scheduler had must be given again (Restore fails naming the
// missing one); the others must be left nil.
type RestoreOptions struct {
	// FairShare is PriorityConfig.FairShare.
	FairShare FairShareSource
	// SiteFactor is PriorityConfig.Engine.Site, the site-factor hook.
	SiteFactor priority.SiteFactor
	// BackfillChooser is Config.Backfill.Chooser when the caller set one
	// (the topology chooser New supplies is rebuilt by itself).
	BackfillChooser backfill.NodeChooser
	// Registry is the TRES registry to index vectors by (Config.Registry);
	// nil means a new one. It must hold every TRES name of the snapshot,
	// in any order: vectors and limits are written by name.
	Registry *gres.Registry
	// EventLog, if set, is installed with SetEventLog.
	EventLog EventLog
}

// Restore reads a snapshot written by Snapshot and returns a scheduler
// holding the same state, which decides exactly as the snapshotted one
// would have: the same cycles, explanations and job records for the same
// events from there on. The stored configuration is validated as New
// validates a Config, then the dynamic state is loaded and checked for
// consistency (CPUs and devices held once, jobs on their nodes).
// A snapshot that is truncated, fails a checksum or does not describe a
// valid state is an error wrapping ErrCorruptSnapshot that names the
// section and the byte offset; one of a newer major version is
// ErrSnapshotVersion. On error no scheduler is returned.
func Restore(r io.Reader, opts RestoreOptions) (*Scheduler, error) {
	secs, err := readSections(r)
	if err != nil {
		return nil, err
	}
	reg, ids, err := restoreRegistry(secs[secRegistry], opts.Registry)
	if err != nil {
		return nil, err
	}
	dec := func(id byte) *sdec {
		sec := secs[id]
		return &sdec{b: sec.b, base: sec.off, sec: sectionNames[id], ids: ids, nreg: reg.Len()}
	}
	d := dec(secConfig)
	var c snapConfig
	d.decodeValue(reflect.ValueOf(&c).Elem())
	if err := d.done(); err != nil {
		return nil, err
	}
	cfg, err := c.config(reg, opts)
	if err != nil {
		return nil, err
	}
	s, err := New(cfg)
	if err != nil {
		return nil, fmt.Errorf("%w: section config at byte %d: %w", ErrCorruptSnapshot, secs[secConfig].off, err)
	}
	for _, i := range c.Removed {
		if err := s.tombstone(i, c.Nodes[i].Name, time.Time{}); err != nil {
			return nil, fmt.Errorf("%w: section config at byte %d: %w", ErrCorruptSnapshot, secs[secConfig].off, err)
		}
	}
	if s.reg.Len() != reg.Len() {
		return nil, fmt.Errorf("%w: section registry at byte %d: the configuration registers TRES the registry section lacks",
			ErrCorruptSnapshot, secs[secRegistry].off)
	}
	var bad [][]int // per node, the unhealthy devices: marked once the jobs hold theirs
	for _, step := range []struct {
		id   byte
		load func(*sdec) error
	}{
		{secNodes, func(d *sdec) (err error) { bad, err = s.loadNodes(d); return err }},
		{secJobs, func(d *sdec) error {
			if err := s.loadJobs(d); err != nil {
				return err
			}
			if err := s.markUnhealthy(d, bad); err != nil {
				return err
			}
			return s.checkFree(d)
		}},
		{secState, s.loadState},
		{secProfile, s.loadProfile},
	} {
		d := dec(step.id)
		if err := step.load(d); err != nil {
			return nil, err
		}
		if err := d.done(); err != nil {
			return nil, err
		}
	}
	s.noteCapacity() // the first backfill pass builds its profile afresh
	s.recountUses()
	s.SetEventLog(opts.EventLog)
	return s, nil
}

// section is one section's payload and the stream offset of its header.
type section struct {
	b   []byte
	off int64
}

// readSections reads the header and every section, checking lengths and
// checksums, and returns the payloads by section ID.
func readSections(r io.Reader) (map[byte]section, error) {
	var hdr [len(snapshotMagic) + 4]byte
	if n, err := io.ReadFull(r, hdr[:]); err != nil {
		return nil, fmt.Errorf("%w: header at byte %d: %w", ErrCorruptSnapshot, n, readErr(err))
	}
	if string(hdr[:len(snapshotMagic)]) != snapshotMagic {
		return nil, fmt.Errorf("%w: header at byte 0: not a Sluice snapshot", ErrCorruptSnapshot)
	}
	major := binary.LittleEndian.Uint16(hdr[len(snapshotMagic):])
	minor := binary.LittleEndian.Uint16(hdr[len(snapshotMagic)+2:])
	if major != snapshotMajor {
		return nil, fmt.Errorf("%w: snapshot format %d.%d, this version reads %d.x (up to %d.%d)",
			ErrSnapshotVersion, major, minor, snapshotMajor, snapshotMajor, snapshotMinor)
	}
	secs := map[byte]section{}
	off := int64(len(hdr))
	last := -1
	for {
		var fh [sectionHeader]byte
		if n, err := io.ReadFull(r, fh[:]); err != nil {
			return nil, fmt.Errorf("%w: section header at byte %d: %w", ErrCorruptSnapshot, off+int64(n), readErr(err))
		}
		id := fh[0]
		length := binary.LittleEndian.Uint64(fh[1:])
		sum := binary.LittleEndian.Uint32(fh[9:])
		if int(id) >= len(sectionNames) {
			return nil, fmt.Errorf("%w: section at byte %d: unknown section %d (a snapshot of a newer version?)", ErrCorruptSnapshot, off, id)
		}
		name := sectionNames[id]
		if id != secEnd && int(id) <= last {
			return nil, fmt.Errorf("%w: section %s at byte %d: out of order", ErrCorruptSnapshot, name, off)
		}
		if length > 1<<40 {
			return nil, fmt.Errorf("%w: section %s at byte %d: length %d", ErrCorruptSnapshot, name, off, length)
		}
		b, n, err := readPayload(r, length)
		if err != nil {
			return nil, fmt.Errorf("%w: section %s at byte %d: payload of %d bytes truncated at byte %d: %w",
				ErrCorruptSnapshot, name, off, length, off+sectionHeader+n, readErr(err))
		}
		if crc32.Checksum(b, crcTable) != sum {
			return nil, fmt.Errorf("%w: section %s at byte %d: checksum mismatch", ErrCorruptSnapshot, name, off)
		}
		if id == secEnd {
			if length != 0 {
				return nil, fmt.Errorf("%w: section end at byte %d: non-empty", ErrCorruptSnapshot, off)
			}
			break
		}
		secs[id] = section{b: b, off: off + sectionHeader}
		last = int(id)
		off += sectionHeader + int64(length)
	}
	for id := byte(secRegistry); id <= secProfile; id++ {
		if _, ok := secs[id]; !ok {
			return nil, fmt.Errorf("%w: section %s missing (end at byte %d)", ErrCorruptSnapshot, sectionNames[id], off)
		}
	}
	return secs, nil
}

// readPayload reads a section's length bytes: at once when the length
// is plausible, else in growing steps, so that a corrupt length costs no
// more memory than the stream holds.
func readPayload(r io.Reader, length uint64) ([]byte, int64, error) {
	if length <= 1<<28 {
		b := make([]byte, length)
		n, err := io.ReadFull(r, b)
		return b, int64(n), err
	}
	var buf bytes.Buffer
	n, err := io.CopyN(&buf, r, int64(length))
	return buf.Bytes(), n, err
}

// readErr names a short read as truncation.
func readErr(err error) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return errors.New("truncated")
	}
	return err
}

// restoreRegistry builds the registry of the snapshot's names (or checks
// that reg holds them) and maps the snapshot's name indices to its IDs.
func restoreRegistry(sec section, reg *gres.Registry) (*gres.Registry, []gres.ID, error) {
	d := &sdec{b: sec.b, base: sec.off, sec: "registry"}
	n := d.count()
	names := make([]string, 0, n)
	for range n {
		names = append(names, d.str())
	}
	if err := d.done(); err != nil {
		return nil, nil, err
	}
	if reg == nil {
		var err error
		if reg, err = gres.NewRegistry(); err != nil {
			return nil, nil, err
		}
		for _, name := range names {
			if _, err := reg.Register(name); err != nil {
				return nil, nil, fmt.Errorf("%w: section registry at byte %d: %w", ErrCorruptSnapshot, sec.off, err)
			}
		}
	}
	ids := make([]gres.ID, len(names))
	for i, name := range names {
		id, ok := reg.Lookup(name)
		if !ok {
			return nil, nil, fmt.Errorf("scheduler: restore: RestoreOptions.Registry lacks TRES %q of the snapshot: %w", name, gres.ErrUnknownTRES)
		}
		ids[i] = id
	}
	return reg, ids, nil
}

// config rebuilds the Config the scheduler ran with, with the hooks of
// opts.
func (c *snapConfig) config(reg *gres.Registry, opts RestoreOptions) (Config, error) {
	cfg := Config{
		Nodes: c.Nodes, Partitions: c.Partitions, Topology: c.Topology, EstimateInterval: c.EstimateInterval,
		MaxArraySize: c.MaxArraySize, FirstJobID: c.FirstJobID, MinJobAge: c.MinJobAge, JobRequeue: c.JobRequeue,
		Registry: reg, Policy: c.Policy, BillingMode: c.BillingMode, GPUOrder: c.GPUOrder,
		RequeueDelay: c.RequeueDelay, Power: c.Power, Licenses: c.Licenses, SelectTypeParameters: c.SelectTypeParameters, BootTime: c.BootTime,
		Telemetry: c.Telemetry,
	}
	// A tombstone is built as a placeholder node, then made a tombstone
	// again (Restore): New needs every node to be a valid one.
	if len(c.Removed) > 0 {
		cfg.Nodes = slices.Clone(c.Nodes)
		taken := make(map[string]bool, len(c.Nodes))
		for _, n := range c.Nodes {
			taken[n.Name] = true
		}
		for _, i := range c.Removed {
			if i < 0 || i >= len(cfg.Nodes) {
				return Config{}, fmt.Errorf("removed node index %d out of range [0, %d)", i, len(cfg.Nodes))
			}
			name := fmt.Sprintf("sluice-tombstone-%d", i)
			for taken[name] {
				name += "x"
			}
			taken[name] = true
			cfg.Nodes[i] = NodeConfig{Name: name, CPUs: 1}
		}
	}
	need := func(what string, had, given bool) error {
		switch {
		case had && !given:
			return fmt.Errorf("scheduler: restore: the snapshotted scheduler had %s; give it in RestoreOptions", what)
		case !had && given:
			return fmt.Errorf("scheduler: restore: RestoreOptions gives %s, which the snapshotted scheduler did not have", what)
		}
		return nil
	}
	hadFS, hadSite := c.Priority != nil && c.Priority.FairShare, c.Priority != nil && c.Priority.Site
	if err := errors.Join(need("a FairShareSource (FairShare)", hadFS, opts.FairShare != nil),
		need("a site-factor hook (SiteFactor)", hadSite, opts.SiteFactor != nil),
		need("a backfill chooser (BackfillChooser)", c.CustomChooser, opts.BackfillChooser != nil)); err != nil {
		return Config{}, err
	}
	if p := c.Priority; p != nil {
		cfg.Priority = &PriorityConfig{Engine: p.Engine, CalcPeriod: p.CalcPeriod, CalcEpoch: p.CalcEpoch, FairShare: opts.FairShare,
			DampeningFactor: p.DampeningFactor, QOSPriority: p.QOSPriority}
		cfg.Priority.Engine.Site = opts.SiteFactor
	}
	if c.Backfill != nil {
		bc := *c.Backfill
		bc.Chooser = opts.BackfillChooser
		cfg.Backfill = &bc
	}
	return cfg, nil
}

func (s *Scheduler) loadNodes(d *sdec) ([][]int, error) {
	if n := d.count(); d.err == nil && n != len(s.nodes) {
		d.fail("%d nodes, the configuration has %d", n, len(s.nodes))
	}
	bad := make([][]int, len(s.nodes))
	for i := range s.nodes {
		if d.err != nil {
			break
		}
		n := &s.nodes[i]
		a := d.byte()
		if d.err == nil && a > byte(adminFail) {
			d.fail("node %s: bad admin state %d", n.cfg.Name, a)
		}
		n.admin = adminState(a)
		n.autoDrained = d.bool()
		n.reason = d.str()
		n.since = d.time()
		k := d.count()
		n.jobs = make([]JobID, 0, k)
		for range k {
			n.jobs = append(n.jobs, JobID(d.uvarint()))
		}
		free := d.vec()
		if d.err == nil {
			if len(free) != len(n.capacity) || !free.Fits(n.capacity) || !isNonNegative(free) {
				d.fail("node %s: free %v not within capacity %v", n.cfg.Name, free, n.capacity)
			}
			n.free = free
		}
		bad[i] = d.ints()
		if d.err == nil && len(bad[i]) > 0 && n.devs == nil {
			d.fail("node %s: unhealthy devices %v on a node without devices", n.cfg.Name, bad[i])
		}
		ps := d.byte()
		n.pw.at, n.pw.idleSince = d.time(), d.time()
		switch {
		case d.err != nil:
		case ps > byte(PowerPoweringUp):
			d.fail("node %s: bad power state %d", n.cfg.Name, ps)
		case ps != byte(PowerOn) && (s.power == nil || n.removed):
			d.fail("node %s: power state %d without power saving", n.cfg.Name, ps)
		}
		n.pw.state = PowerState(ps)
		if n.pw.state != PowerOn && s.power != nil {
			s.power.dormant.Add(i)
		}
		if n.admin != adminUp || n.pw.state != PowerOn || n.removed {
			s.usable.Remove(i)
		}
	}
	s.loadBoots(d)
	s.loadNodeTelemetry(d)
	return bad, d.err
}

// markUnhealthy marks the devices of bad unhealthy, after the jobs took
// theirs (a device may fail under the job holding it).
func (s *Scheduler) markUnhealthy(d *sdec, bad [][]int) error {
	for i, idx := range bad {
		n := &s.nodes[i]
		for _, x := range idx {
			if err := n.devs.SetHealthy(x, false); err != nil {
				d.fail("node %s: %v", n.cfg.Name, err)
				return d.err
			}
		}
	}
	return nil
}

// checkFree checks every node's stored free TRES against what its jobs
// hold: capacity = free + the allocations of its running and suspended
// jobs + the unhealthy devices no job holds (they count neither held nor
// free), TRES by TRES (the node count aside).
func (s *Scheduler) checkFree(d *sdec) error {
	want := make([]gres.Vector, len(s.nodes))
	for i := range s.nodes {
		n := &s.nodes[i]
		want[i] = n.capacity.Clone()
		if bad := n.allUnhealthy(); len(bad) > 0 {
			var unheld []int
			for _, x := range bad {
				if !n.devs.InUse(x) {
					unheld = append(unheld, x)
				}
			}
			_ = want[i].SubInPlace(n.deviceVector(want[i], unheld)) // devices of the node: counted in its capacity
		}
	}
	for _, id := range slices.Sorted(maps.Keys(s.jobs)) {
		j := s.jobs[id]
		if j.State != JobRunning && j.State != JobSuspended {
			continue
		}
		for _, na := range j.Alloc.Nodes {
			if j.State == JobRunning && int64(len(na.CPUs)) != na.TRES[gres.CPU] {
				d.fail("job %d: node %s: %d CPU ids for a CPU count of %d", j.ID, na.Name, len(na.CPUs), na.TRES[gres.CPU])
				return d.err
			}
			w := want[na.Node]
			for k, x := range na.TRES {
				if gres.ID(k) != gres.Node {
					w[k] -= x
				}
			}
			// A shared CPU is counted once: by the CPU masks below.
			w[gres.CPU] += int64(len(na.CPUs))
		}
	}
	if err := s.checkSharing(); err != nil {
		d.fail("%v", err)
		return d.err
	}
	for i := range s.nodes {
		n := &s.nodes[i]
		want[i][gres.CPU] -= popCPUs(n.cpuUsed)
		want[i][gres.Node] = n.free[gres.Node]
		if !slices.Equal(want[i], n.free) {
			d.fail("node %s: free %s, but its capacity less what its jobs hold is %s", n.cfg.Name, s.reg.FormatTRES(n.free), s.reg.FormatTRES(want[i]))
			return d.err
		}
	}
	return nil
}

func isNonNegative(v gres.Vector) bool {
	for _, x := range v {
		if x < 0 {
			return false
		}
	}
	return true
}

func (s *Scheduler) loadJobs(d *sdec) error {
	n := d.count()
	var prev JobID
	for range n {
		j := d.job(s)
		if d.err != nil {
			return d.err
		}
		if j.ID <= prev || j.ID == 0 {
			d.fail("job %d after job %d: not in ID order", j.ID, prev)
			return d.err
		}
		prev = j.ID
		if err := s.attachJob(j); err != nil {
			d.fail("job %d: %v", j.ID, err)
			return d.err
		}
	}
	// Every node's running jobs are running there.
	for i := range s.nodes {
		for _, id := range s.nodes[i].jobs {
			j := s.jobs[id]
			if j == nil || (j.State != JobRunning && j.State != JobSuspended) || !slicesContainsNode(j.Alloc.Nodes, i) {
				d.fail("node %s lists job %d, which does not run there", s.nodes[i].cfg.Name, id)
				return d.err
			}
		}
	}
	return nil
}

func slicesContainsNode(nas []NodeAlloc, i int) bool {
	for _, na := range nas {
		if na.Node == i {
			return true
		}
	}
	return false
}

// attachJob derives what job j's record does not hold and enters it in
// the scheduler: the queues, the nodes' CPUs and devices, the policy
// usage.
func (s *Scheduler) attachJob(j *job) error {
	if _, dup := s.jobs[j.ID]; dup {
		return errors.New("duplicate ID")
	}
	if len(j.perNode) != s.reg.Len() || len(j.bfPer) != s.reg.Len() {
		return errors.New("request vectors of the wrong length")
	}
	if err := s.restoreWhere(j); err != nil {
		return err
	}
	if j.part >= 0 {
		j.shape = s.shapeOf(j.part, j.perNode, j.Spec.Exclusive, j.excluded, j.cons)
	}
	if j.Spec.Dependency != "" {
		dep, err := policy.ParseDependency(j.Spec.Dependency)
		if err != nil {
			return fmt.Errorf("dependency: %w", err)
		}
		j.dep = dep
	}
	active := j.State == JobPending || j.State == JobRunning || j.State == JobSuspended
	if s.pol != nil && j.part >= 0 {
		// The resolved QOS gives the plan the submitted one gave.
		subj, err := s.pol.p.Resolve(j.policyRef())
		switch {
		case err == nil:
			j.subject, j.preemptRank = subj, subj.PreemptRank()
		case active:
			return err
		}
	}
	holds := j.State == JobRunning || j.State == JobSuspended
	if holds {
		if len(j.Alloc.Nodes) == 0 {
			return fmt.Errorf("%s without an allocation", j.State)
		}
		if j.State == JobSuspended && !j.AdminSuspended && len(j.suspendedCPUs) != len(j.Alloc.Nodes) {
			return errors.New("suspended without its CPU counts")
		}
		for _, na := range j.Alloc.Nodes {
			n := &s.nodes[na.Node]
			if len(na.TRES) != s.reg.Len() {
				return fmt.Errorf("node %s: allocation vector of the wrong length", n.cfg.Name)
			}
			var seen []uint64 // a sharer's own CPUs: none listed twice
			if j.Alloc.OverSubscribe != 0 {
				seen = make([]uint64, len(n.cpuUsed))
			}
			for _, c := range na.CPUs {
				// A CPU held twice is a shared one (OverSubscribe), which
				// checkSharing verifies once every job holds its CPUs.
				if c < 0 || c >= n.cfg.CPUs || (j.Alloc.OverSubscribe == 0 && n.cpuUsed[c>>6]&(1<<uint(c&63)) != 0) {
					return fmt.Errorf("node %s: CPU %d out of range or held twice", n.cfg.Name, c)
				}
				if seen != nil {
					if seen[c>>6]&(1<<uint(c&63)) != 0 {
						return fmt.Errorf("node %s: CPU %d listed twice in the allocation", n.cfg.Name, c)
					}
					seen[c>>6] |= 1 << uint(c&63)
				}
				n.cpuUsed[c>>6] |= 1 << uint(c&63)
			}
			if len(na.Devices) > 0 {
				if n.devs == nil {
					return fmt.Errorf("node %s: devices %v on a node without devices", n.cfg.Name, na.Devices)
				}
				if err := n.devs.Allocate(na.Devices); err != nil {
					return fmt.Errorf("node %s: %w", n.cfg.Name, err)
				}
			}
			if len(na.Shares) > 0 {
				if n.devs == nil {
					return fmt.Errorf("node %s: shares %v on a node without devices", n.cfg.Name, na.Shares)
				}
				if err := n.devs.AllocateShares(na.Shares); err != nil {
					return fmt.Errorf("node %s: %w", n.cfg.Name, err)
				}
			}
		}
	}
	switch j.State {
	case JobPending:
		s.pending.ReplaceOrInsert(j)
	case JobRunning:
		s.running.ReplaceOrInsert(j)
	}
	s.jobs[j.ID] = j
	if err := s.attachHet(j); err != nil {
		return err
	}
	if s.pol != nil && active {
		if err := s.pol.usage.AddJob(policy.JobID(j.ID), j.subject); err != nil {
			return err
		}
		if holds {
			s.pol.singletons[[2]string{j.Spec.User, j.Spec.Name}]++
			if err := s.pol.usage.StartJob(policy.JobID(j.ID), j.usageTotal, len(j.Alloc.Nodes), j.usageEnd); err != nil {
				return err
			}
		}
	}
	return nil
}

func (s *Scheduler) loadState(d *sdec) error {
	s.nextID = JobID(d.uvarint())
	if d.err == nil && s.nextID < s.firstID {
		d.fail("next job ID %d before the first %d", s.nextID, s.firstID)
	}
	for id := range s.jobs {
		if d.err == nil && id >= s.nextID {
			d.fail("job %d at or after the next ID %d", id, s.nextID)
		}
	}
	s.last = d.time()
	s.cycleNo = d.uvarint()
	n := d.count()
	s.done = make([]*job, 0, n)
	for range n {
		id := JobID(d.uvarint())
		j := s.jobs[id]
		if d.err == nil && (j == nil || !j.State.Finished()) {
			d.fail("finished list names job %d, which is not a finished job", id)
		}
		s.done = append(s.done, j)
	}
	s.doneHead = 0
	k := d.count()
	if d.err == nil {
		s.purged = append([]uint8(nil), d.b[d.off:d.off+k]...)
		d.off += k
	}
	n = d.count()
	for range n {
		id := JobID(d.uvarint())
		j := s.jobs[id]
		if d.err == nil && (j == nil || j.State != JobSuspended) {
			d.fail("suspended list names job %d, which is not suspended", id)
		}
		s.suspended = append(s.suspended, j)
	}
	n = d.count()
	for range n {
		id := JobID(d.uvarint())
		a := &array{throttle: d.int(), running: d.int(), indices: d.ints()}
		s.arrays[id] = a
	}
	d.decodeValue(reflect.ValueOf(&s.eventDecisions).Elem())
	hasPrio := d.bool()
	if d.err == nil && hasPrio != (s.prio != nil) {
		d.fail("priority state and configuration disagree")
	}
	if hasPrio && d.err == nil {
		p := s.prio
		p.lastCalc = d.time()
		hasTree := d.bool()
		d.decodeValue(reflect.ValueOf(&p.assocs).Elem())
		if hasTree && d.err == nil {
			tree, err := p.newTree(p.assocs)
			if err != nil {
				d.fail("fair-share tree: %v", err)
			}
			p.tree = tree
		}
	}
	hasPower := d.bool()
	if d.err == nil && hasPower != (s.power != nil) {
		d.fail("power-saving state and configuration disagree")
	}
	if p := s.power; hasPower && p != nil {
		p.upWindow, p.downWindow = d.time(), d.time()
		p.ups, p.downs = d.int(), d.int()
	}
	var resv []policy.Reservation
	d.decodeValue(reflect.ValueOf(&resv).Elem())
	if d.err == nil && len(resv) > 0 && s.pol == nil {
		d.fail("reservations without a policy")
	}
	if d.err == nil && len(resv) > 0 {
		if err := s.pol.resv.RestoreSpecs(resv); err != nil {
			d.fail("reservations: %v", err)
		}
	}
	return d.err
}

// durationOf converts a stored count of nanoseconds.
func durationOf(x int64) time.Duration { return time.Duration(x) }
