package scheduler

import (
	"fmt"
	"slices"
	"strings"

	"github.com/sluicehq/sluice/gres"
)

// CRUnit is the consumable-resource unit of slurm.conf
// SelectTypeParameters with select/cons_tres: what a job's CPUs are
// allocated in on each node. A job's CPU count on a node is its request
// rounded up to whole units (on a node of two threads per core, a task
// asking one CPU under CR_Core gets a whole core: both threads, a CPU
// count of 2), and that count is what the node, the accounting (AllocTRES
// cpu) and the backfill plan charge. --hint=nomultithread takes one
// thread of each core for the job's tasks; under CR_Core and CR_Socket
// the other threads of those cores are allocated to the job too.
//
// The zero value is CR_CPU, Sluice's default, which hands out hardware
// threads as CPUs (the behaviour before CRUnit existed). Slurm's
// slurm.conf gives CR_Core_Memory as the default in its recent releases
// (the reference cluster runs CR_Core_Memory): set CRCore for Slurm's
// behaviour. On nodes of one thread per core CR_CPU and CR_Core allocate
// alike; on nodes whose layout is only a CPU count (each CPU a socket of
// its own) all three do.
type CRUnit uint8

// Allocation units, with Slurm's names.
const (
	// CRCPU ("CR_CPU"): each CPU (hardware thread) is a unit.
	CRCPU CRUnit = iota
	// CRCore ("CR_Core"): whole cores; a core's threads go to one job.
	CRCore
	// CRSocket ("CR_Socket"): whole sockets.
	CRSocket
)

var crUnitNames = [...]string{CRCPU: "CR_CPU", CRCore: "CR_Core", CRSocket: "CR_Socket"}

// String returns Slurm's name with its memory suffix ("CR_Core_Memory"):
// Sluice always tracks memory as a consumable resource.
func (u CRUnit) String() string {
	if int(u) < len(crUnitNames) {
		return crUnitNames[u] + "_Memory"
	}
	return fmt.Sprintf("CRUnit(%d)", uint8(u))
}

// ParseSelectTypeParameters parses slurm.conf's SelectTypeParameters for
// select/cons_tres: "CR_CPU", "CR_Core" or "CR_Socket", each optionally
// with "_Memory" (case-insensitive; "" is Sluice's default, CR_CPU).
// Sluice always tracks memory as a consumable resource, so the forms
// with and without _Memory give the same unit and String writes the
// _Memory form. Other values (CR_Board, CR_LLN, CR_Pack_Nodes and the
// rest) are not supported: the error says so and wraps ErrInvalidConfig.
func ParseSelectTypeParameters(s string) (CRUnit, error) {
	t := strings.TrimSpace(s)
	if t == "" {
		return CRCPU, nil
	}
	base := t
	if len(t) > len("_Memory") && strings.EqualFold(t[len(t)-len("_Memory"):], "_Memory") {
		base = t[:len(t)-len("_Memory")]
	}
	for i, n := range crUnitNames {
		if strings.EqualFold(base, n) {
			return CRUnit(i), nil
		}
	}
	return 0, fmt.Errorf("%w: SelectTypeParameters %q: want CR_CPU, CR_Core or CR_Socket (each optionally _Memory)", ErrInvalidConfig, s)
}

// MarshalText writes String's form; an unknown unit is an error.
func (u CRUnit) MarshalText() ([]byte, error) {
	if int(u) >= len(crUnitNames) {
		return nil, fmt.Errorf("scheduler: %w: CRUnit(%d) has no name", ErrUnknownName, uint8(u))
	}
	return []byte(u.String()), nil
}

// UnmarshalText reads what ParseSelectTypeParameters reads.
func (u *CRUnit) UnmarshalText(b []byte) error {
	v, err := ParseSelectTypeParameters(string(b))
	if err != nil {
		return err
	}
	*u = v
	return nil
}

// validate checks a CRUnit set by hand.
func (u CRUnit) validate() error {
	if int(u) >= len(crUnitNames) {
		return fmt.Errorf("%w: SelectTypeParameters CRUnit(%d) unknown", ErrInvalidConfig, uint8(u))
	}
	return nil
}

// unitSize is how many CPU ids one allocation unit of the layout holds.
func (l cpuLayout) unitSize(u CRUnit) int {
	switch u {
	case CRCore:
		return l.threads
	case CRSocket:
		return l.cores * l.threads
	}
	return 1
}

// unitsFor is how many allocation units a request of count CPUs takes
// on a node of layout l (one thread per core: count cores, or the
// sockets holding count cores).
func (l cpuLayout) unitsFor(u CRUnit, count int, oneThread bool) int {
	size := l.unitSize(u)
	if oneThread && l.threads > 1 {
		switch u {
		case CRCore:
			return count
		case CRSocket:
			return (count + l.cores - 1) / l.cores
		}
	}
	return (count + size - 1) / size
}

// unitCPUs returns how many CPUs request r takes on node n under unit u:
// the CPU count after rounding up to whole units.
func (n *node) unitCPUs(u CRUnit, r cpuRequest) int {
	if n.lay.unitSize(u) == 1 {
		return r.count
	}
	return n.lay.unitsFor(u, r.count, r.oneThread) * n.lay.unitSize(u)
}

// selectUnits appends to out (emptied first) up to units whole free
// allocation units of node n under unit u, each as all its CPU ids, in
// increasing order. Under CR_CPU (or a unit of one CPU) it is
// selectCPUs. Cores are chosen as selectCPUs chooses one thread per core
// (the distribution over sockets, the CPUs in r.prefer first), among
// cores with every thread free; sockets are taken lowest first, those
// holding CPUs of r.prefer before the others (only those with r.only).
func (n *node) selectUnits(out []int, u CRUnit, r cpuRequest, units int) []int {
	size := n.lay.unitSize(u)
	if size == 1 {
		r.count = units
		return n.selectCPUs(out, r)
	}
	out = out[:0]
	if units <= 0 {
		return out
	}
	l := n.lay
	if u == CRCore {
		r.count, r.oneThread, r.whole = units, true, true
		one := n.selectCPUs(nil, r)
		for _, c := range one {
			core := l.coreOf(c)
			for t := range l.threads {
				out = append(out, core*l.threads+t)
			}
		}
		slices.Sort(out)
		return out
	}
	free := func(s int) bool {
		for c := s * size; c < (s+1)*size; c++ {
			if n.cpuUsed[c>>6]&(1<<uint(c&63)) != 0 {
				return false
			}
		}
		return true
	}
	near := func(s int) bool {
		for c := s * size; c < (s+1)*size; c++ {
			if r.prefer.Has(c) {
				return true
			}
		}
		return false
	}
	taken := 0
	for pass := 0; pass < 2 && taken < units; pass++ {
		if pass == 1 && (r.only || r.prefer.IsEmpty()) {
			break
		}
		for s := 0; s < l.sockets && taken < units; s++ {
			if r.prefer.IsEmpty() || near(s) == (pass == 0) {
				if free(s) {
					for c := s * size; c < (s+1)*size; c++ {
						out = append(out, c)
					}
					taken++
				}
			}
		}
	}
	slices.Sort(out)
	return out
}

// chooseCPUs is the CPU choice of job j's share of node n: k CPUs asked,
// near preferred (only near, with only), rounded up to the cluster's
// allocation unit, free CPUs first and then, for a job that may share
// (OverSubscribe), CPUs other jobs hold that it may share. It returns the
// CPU ids, in increasing order, and how many it wants: fewer ids than
// that means the node cannot host the share. buf gives the slice.
func (s *Scheduler) chooseCPUs(j *job, n *node, buf *allocBuf, k int, near gres.CoreSet, only bool) ([]int, int) {
	r := cpuRequestOf(j, k, near, only)
	per := n.lay.unitSize(s.crUnit)
	units := n.lay.unitsFor(s.crUnit, k, r.oneThread)
	want := units * per // unitCPUs, from the units already counted
	out := n.selectUnits(buf.cpuIDs(want), s.crUnit, r, units)
	if len(out) >= want {
		return out, want
	}
	limit := s.shareLimit(j)
	if limit <= 1 || n.sharing == 0 {
		return out, want
	}
	// Share what is still missing, the CPUs with the fewest holders
	// first; the CPUs taken so far count as held.
	cells := s.shareCells(n, 0)
	held := 0 // the most holders of a CPU: no pass beyond (limit may be 32768)
	for _, cl := range cells {
		held = max(held, cl.count)
	}
	tmp := *n
	for h := 1; h < min(limit, held+1) && len(out) < want; h++ {
		var mask []uint64
		for c, cl := range cells {
			if cl.count == h && shareable(j, limit, cl) {
				if mask == nil {
					mask = slices.Clone(n.cpuUsed)
				}
				mask[c>>6] &^= 1 << uint(c&63)
			}
		}
		if mask == nil {
			continue
		}
		tmp.cpuUsed = mask
		tmp.markCPUs(out)
		out = append(out, tmp.selectUnits(nil, s.crUnit, r, units-len(out)/per)...)
	}
	slices.Sort(out)
	return out, want
}

// roundPlanCPUs rounds the backfill plan's per-node CPU count of job j
// (bfPer, and bfMin when it is its own) up to the allocation unit, as the
// nodes will charge it: to the smallest count among the nodes able to
// hold the job (all alike on a cluster of one layout). On a cluster
// mixing layouts the plan may then count fewer CPUs than a node of
// larger units charges: the start itself is decided by the node's CPU
// choice, which never over-allocates.
func (s *Scheduler) roundPlanCPUs(j *job) {
	if s.crUnit == CRCPU || j.Spec.Exclusive || j.perNode[gres.CPU] == 0 {
		return
	}
	r := cpuRequest{count: int(j.perNode[gres.CPU]), oneThread: j.Spec.Hint.oneThreadPerCore()}
	// The count depends on the node's layout alone, and most nodes share
	// one: it is computed once per run of nodes of one layout, and no node
	// gives less than the request (then the least is found).
	best, at := -1, -1
	var last cpuLayout
	for i := j.shape.capable.Next(0); i >= 0 && best != r.count; i = j.shape.capable.Next(i + 1) {
		n := &s.nodes[i]
		if best >= 0 && n.lay == last {
			continue
		}
		last = n.lay
		if c := n.unitCPUs(s.crUnit, r); best < 0 || c < best {
			best, at = c, i
		}
	}
	if best <= r.count {
		return
	}
	// Memory per CPU follows the rounded count (unitMem); on overflow the
	// request's memory stays (the node's choice refuses the share).
	mem, ok := j.unitMem(&s.nodes[at], j.perNode, best)
	if !ok {
		mem = j.perNode[gres.Mem]
	}
	minIsPer := len(j.bfMin) > 0 && len(j.bfPer) > 0 && &j.bfMin[0] == &j.bfPer[0]
	j.bfPer[gres.CPU] = max(j.bfPer[gres.CPU], int64(best))
	j.bfPer[gres.Mem] = max(j.bfPer[gres.Mem], mem)
	if !minIsPer && len(j.bfMin) > int(gres.Mem) {
		j.bfMin[gres.CPU] = max(j.bfMin[gres.CPU], int64(best))
		j.bfMin[gres.Mem] = max(j.bfMin[gres.Mem], mem)
	}
}

// memPerCPU returns the memory per CPU behind the per-node request
// perNode of job j: --mem-per-cpu, or the partition's DefMemPerCPU where
// the job's memory came from it; 0 when its memory is per node or per GPU.
func (j *job) memPerCPU(perNode gres.Vector) int64 {
	if mc := j.Spec.MemPerCPUMiB; mc > 0 {
		return mc
	}
	dm := j.defMemPerCPU
	if dm <= 0 || j.Spec.MemPerNodeMiB > 0 || j.Spec.MemPerGPUMiB > 0 || perNode[gres.Mem] != dm*perNode[gres.CPU] {
		return 0
	}
	return dm
}

// unitMem returns the memory job j's share of node n is charged when its
// request perNode (CPU count and memory) is given cpus CPUs, the request
// rounded up to whole allocation units: memory per CPU (--mem-per-cpu,
// DefMemPerCPU) is per usable allocated CPU (sbatch: where resources are
// allocated by core or socket, a job's allocated CPUs may exceed its
// task count), the usable ones being one thread per core under
// --hint=nomultithread. It returns false when that memory overflows.
func (j *job) unitMem(n *node, perNode gres.Vector, cpus int) (int64, bool) {
	mem := perNode[gres.Mem]
	usable := int64(cpus)
	if j.Spec.Hint.oneThreadPerCore() && n.lay.threads > 1 {
		usable /= int64(n.lay.threads)
	}
	extra := usable - perNode[gres.CPU]
	mc := j.memPerCPU(perNode)
	if extra <= 0 || mc == 0 {
		return mem, true
	}
	if mc > (gres.MaxCount-mem)/extra {
		return 0, false
	}
	return mem + mc*extra, true
}
