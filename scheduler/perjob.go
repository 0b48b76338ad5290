package scheduler

import (
	"fmt"
	"slices"
	"strings"

	"github.com/sluicehq/sluice/gres"
	"github.com/sluicehq/sluice/policy"
)

// A job's GRESPerJob (sbatch --gpus) is its total, not a per-node count:
// each of its nodes takes at least one (what perNode and devReq count),
// and the rest (job.extra) goes to the nodes as they can hold it, in node
// order, so that -N2 --gpus=5 takes 5 GPUs (3 + 2, or 4 + 1 where one node
// has only 2 free), and -N4 --gpus=8 fits nodes with 5, 1, 1 and 1 free
// GPUs. Placement, the allocation and its charge follow the spread. The
// backfill planner plans the total exactly (backfill.Job.Spread: the
// per-node minimum plus the rest over the nodes as they can hold it, and
// a start it decides takes the shares it planned, job.planShares), where
// every extra GPU adds only GPUs; where it would add CPUs or memory too
// (--cpus-per-gpu, --mem-per-gpu, DefCpuPerGPU, DefMemPerGPU), or the
// request is typed, it counts ceil(total/nodes) on each node (never less
// than the job takes).

// bfSpreadExact reports whether the backfill planner can plan j's
// GRESPerJob beyond one per node exactly as a Spread: every extra request
// is untyped (a typed one counts in two TRES the planner does not
// relate), and the whole total on one node would need no more CPUs or
// memory than the minimum (the per-node TRES grow with GPUs only through
// the per-GPU options, monotonically, so the widest case decides).
func (s *Scheduler) bfSpreadExact(j *job) (bool, error) {
	for _, r := range j.extra {
		if r.Type != "" {
			return false, nil
		}
	}
	widest := s.reg.NewVector()
	if err := s.nodeVector(j, addRequests(j.devReq, j.extra), widest); err != nil {
		return false, err
	}
	return widest[gres.CPU] == j.perNode[gres.CPU] && widest[gres.Mem] == j.perNode[gres.Mem], nil
}

// nodeVector writes into v (zeroed, of the registry's length) the TRES
// job j needs on one node holding the devices devReq: its CPUs (per task,
// or per GPU with --cpus-per-gpu or the partition's DefCpuPerGPU), memory
// (--mem, --mem-per-gpu, DefMemPerGPU or DefMemPerCPU), node, and GRES.
func (s *Scheduler) nodeVector(j *job, devReq []gres.Request, v gres.Vector) error {
	return s.nodeVectorN(j, j.tpn, devReq, v)
}

// nodeVectorN is nodeVector for a node running tpn of the job's tasks.
func (s *Scheduler) nodeVectorN(j *job, tpn int64, devReq []gres.Request, v gres.Vector) error {
	spec := &j.Spec
	var gpus int64 // GPUs per node, for --cpus-per-gpu and --mem-per-gpu
	for _, r := range devReq {
		if strings.EqualFold(r.Name, "gpu") {
			gpus += r.Count
		}
	}
	if gpus > 1<<16 {
		return fmt.Errorf("%w: %d GPUs per node is out of range", ErrInvalidJob, gpus)
	}
	cpt := int64(max(spec.CPUsPerTask, 1))
	v[gres.CPU] = max(tpn*cpt, gpus*int64(spec.CPUsPerGPU))
	var defMemGPU int64
	if spec.CPUsPerGPU == 0 {
		// The partition's DefCpuPerGPU / DefMemPerGPU.
		pp := policy.Partition{DefCPUPerGPU: int(j.defCPUPerGPU), DefMemPerGPU: j.defMemPerGPU}
		c, m := pp.GPUDefaults(gpus)
		v[gres.CPU] = max(v[gres.CPU], c)
		defMemGPU = m
	}
	if v[gres.CPU] > gres.MaxCount {
		return fmt.Errorf("%w: %d CPUs per node overflows", ErrInvalidJob, v[gres.CPU])
	}
	v[gres.Mem] = spec.MemPerNodeMiB
	if mc := spec.MemPerCPUMiB; mc > 0 {
		// --mem-per-cpu: per CPU the node gives the job (Submit keeps it
		// apart from --mem and --mem-per-gpu).
		if mc > gres.MaxCount/v[gres.CPU] {
			return fmt.Errorf("%w: MemPerCPUMiB %d × %d CPUs overflows", ErrInvalidJob, mc, v[gres.CPU])
		}
		v[gres.Mem] = mc * v[gres.CPU]
	} else if spec.MemPerGPUMiB > 0 {
		v[gres.Mem] = gpus * spec.MemPerGPUMiB
	} else if v[gres.Mem] == 0 {
		v[gres.Mem] = defMemGPU
	}
	if dm := j.defMemPerCPU; v[gres.Mem] == 0 && dm > 0 {
		if dm > gres.MaxCount/v[gres.CPU] {
			return fmt.Errorf("%w: default memory %d MiB/CPU × %d CPUs overflows", ErrInvalidJob, dm, v[gres.CPU])
		}
		v[gres.Mem] = dm * v[gres.CPU]
	}
	v[gres.Node] = 1
	return s.addRequestTRES(v, devReq)
}

// addRequestTRES adds the GRES of reqs to v (a typed request counts in its
// untyped TRES too).
func (s *Scheduler) addRequestTRES(v gres.Vector, reqs []gres.Request) error {
	for _, r := range reqs {
		id, ok := s.reg.Lookup(deviceTRES(r.Name, r.Type))
		if !ok {
			what := r.Name
			if r.Type != "" {
				what += ":" + r.Type
			}
			return fmt.Errorf("%w: %w: GRES %q: no node in the cluster has it", ErrInvalidJob, ErrUnsatisfiable, what)
		}
		v[id] += r.Count
		if r.Type != "" {
			v[s.reg.MustLookup(deviceTRES(r.Name, ""))] += r.Count
		}
	}
	return nil
}

// requestVector returns the GRES of reqs as a TRES vector.
func (s *Scheduler) requestVector(reqs []gres.Request) (gres.Vector, error) {
	v := s.reg.NewVector()
	return v, s.addRequestTRES(v, reqs)
}

// addRequests returns a new list: a's requests plus b's, merged by (name,
// type), typed requests first.
func addRequests(a, b []gres.Request) []gres.Request {
	out := slices.Clone(a)
next:
	for _, r := range b {
		for k := range out {
			if out[k].Name == r.Name && out[k].Type == r.Type {
				out[k].Count += r.Count
				continue next
			}
		}
		out = append(out, r)
	}
	slices.SortStableFunc(out, func(x, y gres.Request) int {
		switch {
		case (x.Type == "") == (y.Type == ""):
			return 0
		case x.Type != "":
			return -1
		}
		return 1
	})
	return out
}

// perJobFeasible rejects a job whose GRESPerJob no set of its partition's
// capable nodes could ever hold: for each request, the job's nodes with
// the most of that GRES must hold the total.
func (s *Scheduler) perJobFeasible(j *job) error {
	if len(j.extra) == 0 {
		return nil
	}
	caps := make([]int64, 0, j.shape.capable.Count())
	for _, r := range j.extra {
		id := s.reg.MustLookup(deviceTRES(r.Name, r.Type))
		caps = caps[:0]
		for i := j.shape.capable.Next(0); i >= 0; i = j.shape.capable.Next(i + 1) {
			caps = append(caps, s.nodes[i].capacity[id])
		}
		slices.SortFunc(caps, func(a, b int64) int { return int(b - a) })
		var room int64
		for _, c := range caps[:min(j.nodes, len(caps))] {
			room += c
		}
		if need := j.perNode[id]*int64(j.nodes) + j.extraTotal[id]; room < need {
			return fmt.Errorf("%w: %w: GRESPerJob needs %d %s on %d node(s) of partition %q, at most %d fit",
				ErrInvalidJob, ErrUnsatisfiable, need, s.reg.Name(id), j.nodes, j.Partition, room)
		}
	}
	return nil
}

// nodeReq is a job's request on one node when it differs from node to
// node (a GRESPerJob spread): its TRES and device requests.
type nodeReq struct {
	vec    gres.Vector
	devReq []gres.Request
}

// spreadExtra shares the job's GRESPerJob beyond one per node over the
// given nodes, as their free resources allow, in node order, and returns
// each node's request. It reports false when the nodes cannot hold the
// total. A job without such a request gets nil, true.
func (s *Scheduler) spreadExtra(j *job, nodes []int) ([]nodeReq, bool) {
	if len(j.extra) == 0 {
		return nil, true
	}
	if j.planShares != nil {
		return s.plannedSpread(j, nodes)
	}
	left := make([]gres.Vector, len(nodes)) // what each node has beyond the job's minimum
	for k, i := range nodes {
		f, err := s.nodes[i].free.Sub(j.perNode)
		if err != nil {
			return nil, false
		}
		left[k] = f
	}
	take := make([][]gres.Request, len(nodes))
	for _, r := range j.extra { // typed first, so untyped takes what is left
		id := s.reg.MustLookup(deviceTRES(r.Name, r.Type))
		untyped := id
		if r.Type != "" {
			untyped = s.reg.MustLookup(deviceTRES(r.Name, ""))
		}
		rest := r.Count
		for k := range nodes {
			c := min(rest, left[k][id], left[k][untyped])
			if c <= 0 {
				continue
			}
			left[k][id] -= c
			if untyped != id {
				left[k][untyped] -= c
			}
			take[k] = append(take[k], gres.Request{Name: r.Name, Type: r.Type, Count: c})
			if rest -= c; rest == 0 {
				break
			}
		}
		if rest > 0 {
			return nil, false
		}
	}
	return s.spreadRequests(j, nodes, take)
}

// plannedSpread is spreadExtra for a start the backfill plan decided:
// each node takes the share the plan booked for it (j.planShares,
// parallel to nodes), so that what is placed is what the plan holds.
func (s *Scheduler) plannedSpread(j *job, nodes []int) ([]nodeReq, bool) {
	if len(j.planShares) != len(nodes) {
		return nil, false
	}
	take := make([][]gres.Request, len(nodes))
	for _, r := range j.extra {
		id := s.reg.MustLookup(deviceTRES(r.Name, r.Type))
		var got int64
		for k := range nodes {
			if c := j.planShares[k].At(id); c > 0 {
				take[k] = append(take[k], gres.Request{Name: r.Name, Type: r.Type, Count: c})
				got += c
			}
		}
		if got != r.Count {
			return nil, false
		}
	}
	return s.spreadRequests(j, nodes, take)
}

// spreadRequests returns each node's request when it takes, beyond the
// job's minimum, the device requests of take; false when one does not
// fit the node's free resources.
func (s *Scheduler) spreadRequests(j *job, nodes []int, take [][]gres.Request) ([]nodeReq, bool) {
	reqs := make([]nodeReq, len(nodes))
	for k := range nodes {
		reqs[k].devReq = addRequests(j.devReq, take[k])
		reqs[k].vec = s.reg.NewVector()
		if err := s.nodeVector(j, reqs[k].devReq, reqs[k].vec); err != nil {
			return nil, false
		}
		if !s.fitsFree(j, &s.nodes[nodes[k]], reqs[k].vec) {
			// More GPUs brought more CPUs or memory than the node has (an
			// exclusive job too: its request must fit what it widens).
			return nil, false
		}
	}
	return reqs, true
}

// spreadNodes chooses, among the nodes of fit (which each hold the job's
// minimum), j.nodes that hold its GRESPerJob total: the first that do in
// node order, or else those with the most of it free. It returns them in
// out (emptied first), or nil.
func (s *Scheduler) spreadNodes(j *job, fit []int, out []int) []int {
	out = append(out[:0], fit[:min(j.nodes, len(fit))]...)
	if len(out) < j.nodes {
		return nil
	}
	if _, ok := s.spreadExtra(j, out); ok {
		return out
	}
	spare := func(i int) int64 {
		var n int64
		for _, r := range j.extra {
			n += s.nodes[i].free[s.reg.MustLookup(deviceTRES(r.Name, r.Type))]
		}
		return n
	}
	by := slices.Clone(fit)
	slices.SortStableFunc(by, func(a, b int) int {
		sa, sb := spare(a), spare(b)
		switch {
		case sa > sb:
			return -1
		case sa < sb:
			return 1
		}
		return a - b
	})
	out = append(out[:0], by[:j.nodes]...)
	slices.Sort(out)
	if _, ok := s.spreadExtra(j, out); ok {
		return out
	}
	return nil
}
