package scheduler

import (
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/sluicehq/sluice/feature"
	"github.com/sluicehq/sluice/gres"
	"github.com/sluicehq/sluice/policy"
	"github.com/sluicehq/sluice/topology"
)

// This file holds FuzzScheduler's checks: the digest of the observable
// state, the invariants checked after every call, and fzRun, which applies
// every event to twin schedulers (see step).

// fzDigest is the observable state of s as text: Jobs(), Nodes(), the
// queue counts, the reservations and the policy's usage counters at now.
func fzDigest(s *Scheduler, now time.Time) string {
	var b strings.Builder
	for _, j := range s.Jobs() {
		u := j.Usage
		j.Usage = nil // its address differs between twins
		fmt.Fprintf(&b, "job %+v\n", j)
		if u != nil {
			fmt.Fprintf(&b, "job %d usage %+v\n", j.ID, *u)
		}
	}
	fmt.Fprintf(&b, "telemetry %+v\n", s.Telemetry())
	for _, n := range s.Nodes() {
		rb := n.Reboot
		n.Reboot = nil // its address differs between twins
		fmt.Fprintf(&b, "node %+v\n", n)
		if rb != nil {
			fmt.Fprintf(&b, "node %s reboot %+v\n", n.Name, *rb)
		}
	}
	p, r := s.Counts()
	fmt.Fprintf(&b, "counts %d %d\n", p, r)
	for _, rv := range s.Reservations() {
		fmt.Fprintf(&b, "resv %+v\n", rv)
	}
	fmt.Fprintf(&b, "policy %s\n", s.PolicyVersion())
	fmt.Fprintf(&b, "partitions %+v\n", s.Partitions())
	if s.pol != nil {
		fmt.Fprintf(&b, "policy config %x\n", hashValue(nil, reflect.ValueOf(s.pol.p.Config()), 0))
		u := s.pol.usage
		fmt.Fprintf(&b, "usage jobs %d\n", u.Len())
		for _, q := range fzQOS {
			g, _ := u.QOSUsage(q, now)
			fmt.Fprintf(&b, "qos %s %+v\n", q, g)
			for _, who := range []string{"ann", "bob", "cy", "acct1", "acct2", ""} {
				tr, jobs, sub := u.QOSUserUsage(q, who)
				fmt.Fprintf(&b, " user %s %v %d %d", who, tr, jobs, sub)
				tr, jobs, sub = u.QOSAccountUsage(q, who)
				fmt.Fprintf(&b, " acct %s %v %d %d\n", who, tr, jobs, sub)
			}
		}
	}
	return b.String()
}

// fzCycleDigest is a cycle's decisions as text (audit records by their
// String form: they hold pointers).
func fzCycleDigest(c Cycle) string {
	var b strings.Builder
	fmt.Fprintf(&b, "now %s\nended %+v\nstarts %+v\npending %+v\nresumed %v\npreempt %+v\npower up %v down %v timedout %v\n",
		c.Now.Format(time.RFC3339Nano), c.Ended, c.Starts, c.Pending, c.Resumed, c.Preemptions, c.PowerUp, c.PowerDown, c.ResumeTimedOut)
	for _, d := range c.Decisions {
		fmt.Fprintf(&b, "decision %s\n", d)
	}
	return b.String()
}

// fzDiff returns the first line where a and b differ.
func fzDiff(a, b string) string {
	la, lb := strings.Split(a, "\n"), strings.Split(b, "\n")
	for i := range max(len(la), len(lb)) {
		var x, y string
		if i < len(la) {
			x = la[i]
		}
		if i < len(lb) {
			y = lb[i]
		}
		if x != y {
			return fmt.Sprintf("line %d:\n\t  got %.600s\n\twant %.600s", i, x, y)
		}
	}
	return "(identical)"
}

// fzInvariants checks what must hold after any call: free within [0,
// capacity]; on every node, no CPU id or device index held by two jobs,
// held resources plus free equal to capacity, device counts matching
// the device indices; the queue counts match the job states; and, after
// a cycle, every start on an up node with healthy devices.
func fzInvariants(s *Scheduler, cyc *Cycle) error {
	// nodes by index: a removed node's slot is the zero NodeInfo.
	nodes := make([]NodeInfo, len(s.nodes))
	for _, n := range s.Nodes() {
		nodes[n.Index] = n
	}
	jobs := s.Jobs()
	gpu, hasGPU := s.reg.Lookup("gres/gpu")
	type held struct{ cpu, dev map[int]JobID }
	// CPUs may be shared (OverSubscribe): by jobs of one partition that
	// may share, at most as many as the least of their counts.
	holders := make([]map[int][]*Job, len(nodes))
	shared := make([]bool, len(nodes))
	hold := make([]held, len(nodes))
	sum := make([]gres.Vector, len(nodes))
	for i, n := range nodes {
		hold[i] = held{map[int]JobID{}, map[int]JobID{}}
		sum[i] = make(gres.Vector, len(n.Capacity))
		for k := range n.Capacity {
			if n.Free[k] < 0 || n.Free[k] > n.Capacity[k] {
				return fmt.Errorf("node %s: TRES %s free %d outside [0, %d]", n.Name, s.reg.Name(gres.ID(k)), n.Free[k], n.Capacity[k])
			}
		}
	}
	var pend, run int
	byID := make(map[JobID]*Job, len(jobs))
	for ji := range jobs {
		j := &jobs[ji]
		byID[j.ID] = j
		switch j.State {
		case JobPending:
			pend++
			continue
		case JobRunning:
			run++
		case JobSuspended:
		default:
			continue
		}
		for _, na := range j.Alloc.Nodes {
			if na.Node < 0 || na.Node >= len(nodes) || nodes[na.Node].Name != na.Name {
				return fmt.Errorf("job %d: allocation names node %d %q", j.ID, na.Node, na.Name)
			}
			n := &nodes[na.Node]
			h := hold[na.Node]
			for _, c := range na.CPUs {
				if c < 0 || int64(c) >= n.Capacity[gres.CPU] {
					return fmt.Errorf("job %d: node %s: CPU %d does not exist", j.ID, n.Name, c)
				}
				if holders[na.Node] == nil {
					holders[na.Node] = map[int][]*Job{}
				}
				hs := append(holders[na.Node][c], j)
				holders[na.Node][c] = hs
				if o, dup := h.cpu[c]; dup {
					shared[na.Node] = true
					least := len(hs)
					for _, x := range hs {
						if x.Alloc.OverSubscribe < 2 || x.Partition != j.Partition {
							return fmt.Errorf("node %s: CPU %d held by jobs %d and %d, not sharers of one partition", n.Name, c, o, j.ID)
						}
						least = min(least, x.Alloc.OverSubscribe)
					}
					if len(hs) > least {
						return fmt.Errorf("node %s: CPU %d held by %d jobs, at most %d may share it", n.Name, c, len(hs), least)
					}
				}
				h.cpu[c] = j.ID
			}
			if int64(len(na.CPUs)) != na.TRES[gres.CPU] {
				return fmt.Errorf("job %d: node %s: %d CPU ids for a CPU count of %d", j.ID, n.Name, len(na.CPUs), na.TRES[gres.CPU])
			}
			if err := fzWholeUnits(s, j, na); err != nil {
				return err
			}
			for _, d := range na.Devices {
				if o, dup := h.dev[d]; dup {
					return fmt.Errorf("node %s: device %d held by jobs %d and %d", n.Name, d, o, j.ID)
				}
				h.dev[d] = j.ID
				if slices.Contains(n.FreeDevices, d) {
					return fmt.Errorf("node %s: device %d held by job %d is listed free", n.Name, d, j.ID)
				}
			}
			// Every fuzzed node's devices are gpus of one type: the
			// untyped and the typed gpu TRES both count the devices.
			for k := range na.TRES {
				if nm := s.reg.Name(gres.ID(k)); strings.HasPrefix(nm, "gres/gpu") && n.Capacity[k] > 0 && na.TRES[k] != int64(len(na.Devices)) {
					return fmt.Errorf("job %d: node %s: charged %d %s for device indices %v", j.ID, n.Name, na.TRES[k], nm, na.Devices)
				}
			}
			for k := range j.PerNode {
				// A suspended job has lent its CPUs.
				if k < len(na.TRES) && gres.ID(k) != gres.Node && !(j.State == JobSuspended && gres.ID(k) == gres.CPU) && na.TRES[k] < j.PerNode[k] {
					return fmt.Errorf("job %d: node %s: holds %d %s, its request is %d per node", j.ID, n.Name, na.TRES[k], s.reg.Name(gres.ID(k)), j.PerNode[k])
				}
			}
			if err := sum[na.Node].AddInPlace(na.TRES); err != nil {
				return fmt.Errorf("node %s: summing allocations: %w", n.Name, err)
			}
			if j.State == JobRunning && !slices.Contains(n.Jobs, j.ID) {
				return fmt.Errorf("running job %d is not in node %s's jobs %v", j.ID, n.Name, n.Jobs)
			}
		}
	}
	for i, n := range nodes {
		if n.Name == "" {
			continue // removed
		}
		// Unhealthy devices that no job holds are neither held nor free.
		var sick int64
		for _, d := range n.UnhealthyDevices {
			if _, ok := hold[i].dev[d]; !ok {
				sick++
			}
		}
		for k := range n.Capacity {
			if gres.ID(k) == gres.Node || (gres.ID(k) == gres.CPU && shared[i]) {
				continue // shared CPUs: the distinct CPU ids are counted below
			}
			off := int64(0)
			if strings.HasPrefix(s.reg.Name(gres.ID(k)), "gres/gpu") && n.Capacity[k] > 0 {
				off = sick // every fuzzed node's devices are gpus of one type
			}
			if sum[i][k]+n.Free[k]+off != n.Capacity[k] {
				return fmt.Errorf("node %s: TRES %s: jobs hold %d, free %d, capacity %d", n.Name, s.reg.Name(gres.ID(k)), sum[i][k], n.Free[k], n.Capacity[k])
			}
		}
		if int64(len(hold[i].cpu))+n.Free[gres.CPU] != n.Capacity[gres.CPU] {
			return fmt.Errorf("node %s: %d CPU ids held, %d free, capacity %d", n.Name, len(hold[i].cpu), n.Free[gres.CPU], n.Capacity[gres.CPU])
		}
		if hasGPU && n.Capacity[gpu] > 0 && int64(len(n.FreeDevices)) != n.Free[gpu] {
			return fmt.Errorf("node %s: free devices %v but %d gres/gpu free", n.Name, n.FreeDevices, n.Free[gpu])
		}
		if n.Power != PowerOn && len(n.Jobs) > 0 {
			return fmt.Errorf("node %s is %s but runs jobs %v", n.Name, n.Power, n.Jobs)
		}
		for _, id := range n.Jobs {
			if j := byID[id]; j == nil || (j.State != JobRunning && j.State != JobSuspended) {
				return fmt.Errorf("node %s lists job %d, which does not run", n.Name, id)
			}
		}
	}
	if p, r := s.Counts(); p != pend || r != run {
		return fmt.Errorf("Counts() = %d pending, %d running; Jobs() has %d and %d", p, r, pend, run)
	}
	for ji := range jobs {
		if err := fzCheckTasks(s, &jobs[ji]); err != nil {
			return err
		}
	}
	if err := fzCheckGPUCount(s); err != nil {
		return err
	}
	for ji := range jobs {
		j := &jobs[ji]
		sp := &j.Spec
		if j.State != JobRunning || len(sp.GRESPerJob) != 1 || sp.GRESPerJob[0].Name != "gpu" || sp.GRESPerJob[0].Count <= 0 ||
			len(sp.GRESPerNode)+len(sp.GRESPerTask) > 0 || sp.GPUsPerSocket != 0 || !hasGPU {
			continue
		}
		// --gpus is the job's total (Slurm), not a per-node share rounded up.
		var got int64
		for _, na := range j.Alloc.Nodes {
			got += na.TRES[gpu]
		}
		// An exclusive job (its own flag or its partition's) is charged whole nodes.
		exclusive := j.Spec.Exclusive || s.parts[s.partByName[j.Partition]].cfg.OverSubscribe == policy.OverSubscribeExclusive
		if want := j.Spec.GRESPerJob[0].Count; got != want && (!exclusive || got < want) {
			return fmt.Errorf("job %d: GRESPerJob %s but %d gpus allocated on %d nodes", j.ID, j.Spec.GRESPerJob[0], got, len(j.Alloc.Nodes))
		}
	}
	if cyc != nil {
		for _, st := range cyc.Starts {
			j := byID[st.Job]
			if j == nil {
				continue // forgotten already (MinJobAge)
			}
			if err := fzDependencyMet(j, jobs); err != nil {
				return err
			}
			if st.TimeLimit <= 0 {
				return fmt.Errorf("job %d started with time limit %v", st.Job, st.TimeLimit)
			}
			if err := fzCheckWhere(s, j, nodes); err != nil {
				return err
			}
			for _, na := range st.Alloc.Nodes {
				n := &nodes[na.Node]
				if n.Name != na.Name {
					return fmt.Errorf("job %d started on node %d %q, which is %q", st.Job, na.Node, na.Name, n.Name)
				}
				if n.Power != PowerOn {
					return fmt.Errorf("job %d started on node %s, which is %s", st.Job, n.Name, n.Power)
				}
				if !n.State.Usable() && n.State != NodeDraining && n.State != NodeFailing {
					return fmt.Errorf("job %d started on node %s in state %s", st.Job, n.Name, n.State)
				}
				for _, d := range na.Devices {
					if slices.Contains(n.UnhealthyDevices, d) {
						return fmt.Errorf("job %d started on unhealthy device %d of node %s", st.Job, d, n.Name)
					}
				}
			}
		}
	}
	return nil
}

// fzFailure is a broken promise found by a run: Key names its class (the
// same defect found twice has the same key), Msg the details, Step the
// index of the event that exposed it.
type fzFailure struct {
	Key, Msg string
	Step     int
}

var (
	fzDurations = regexp.MustCompile(`[0-9][0-9.]*(ns|µs|us|ms|h|m|s)([0-9.]+(ns|µs|us|ms|h|m|s))*`)
	fzDigits    = regexp.MustCompile(`0x[0-9a-f]+|[0-9]+`)
)

// fzKey normalises a message into a failure class: numbers elided, cut
// short.
func fzKey(kind string, msg string) string {
	msg = fzDurations.ReplaceAllString(msg, "<d>")
	msg = fzDigits.ReplaceAllString(msg, "#")
	if i := strings.IndexByte(msg, '\n'); i >= 0 {
		msg = msg[:i]
	}
	if len(msg) > 90 {
		msg = msg[:90]
	}
	return kind + ": " + msg
}

// fzRun applies events to twin schedulers built from one cluster. Each
// event goes to the leader; when it succeeds it goes to the follower too,
// which must succeed with the same result and reach the same state
// (determinism). When it fails, the follower does not get it, and the
// leader's state must equal the follower's: the failed call changed
// nothing. The follower, which never saw the failed call, then leads, so
// that a change the digest cannot see (a clock moved, a cache) shows as the
// twins answering the next event differently.
type fzRun struct {
	c      fzCluster
	s      [2]*Scheduler
	lead   int
	last   time.Duration
	ops    []fzOp
	errs   []string // per op: "" or its error
	failed bool     // the last event failed
	gen    *fzGen
}

func newFzRun(c fzCluster) (*fzRun, error) {
	r := &fzRun{c: c}
	for k := range r.s {
		cfg, err := fzConfig(c)
		if err != nil {
			return nil, err
		}
		if r.s[k], err = New(cfg); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// step applies op to both twins and checks every promise.
func (r *fzRun) step(op fzOp) *fzFailure {
	r.ops = append(r.ops, op)
	r.errs = append(r.errs, "")
	i := len(r.ops) - 1
	fail := func(kind, msg string) *fzFailure {
		return &fzFailure{Key: fzKey(kind+" "+op.Kind.String(), msg), Msg: msg, Step: i}
	}
	L, F := r.s[r.lead], r.s[1-r.lead]
	now := fzEpoch.Add(max(r.last, op.At))
	var before string
	if op.Kind.readOnly() {
		before = fzDigest(L, now)
	}
	a := fzCall(L, op)
	if a.panicked {
		return fail("panic in", a.err.Error())
	}
	r.failed = a.err != nil
	if a.err != nil {
		r.errs[i] = a.err.Error()
		dl, df := fzDigest(L, now), fzDigest(F, now)
		if dl != df {
			return fail("state changed by failed", fmt.Sprintf("%v\n%s", a.err, fzDiff(dl, df)))
		}
		r.lead = 1 - r.lead
		return nil
	}
	b := fzCall(F, op)
	switch {
	case b.panicked:
		return fail("twin panic in", b.err.Error())
	case b.err != nil:
		return fail("twins diverge on", "leader succeeded, twin failed (an earlier failed call changed hidden state?): "+b.err.Error())
	case a.res != b.res:
		return fail("twins answer differently to", fzDiff(a.res, b.res))
	}
	dl := fzDigest(L, now)
	if df := fzDigest(F, now); dl != df {
		return fail("twins differ after", fzDiff(dl, df))
	}
	if op.Kind.readOnly() && dl != before {
		return fail("state changed by read-only", fzDiff(dl, before))
	}
	if err := fzInvariants(L, a.cyc); err != nil {
		return fail("invariant after", err.Error())
	}
	if op.Kind == fkAddResv {
		if err := fzReservationClear(L, now, op.Resv); err != nil {
			return fail("broken promise in", err.Error())
		}
	}
	r.last = max(r.last, op.At)
	if r.gen != nil {
		r.gen.last = r.last
		r.gen.ids = append(r.gen.ids, a.ids...)
		if a.cyc != nil {
			for _, st := range a.cyc.Starts {
				r.gen.started = append(r.gen.started, st.Job)
				if len(st.Alloc.Nodes) > 0 {
					r.gen.startedOn = append(r.gen.startedOn, st.Alloc.Nodes[0].Node)
				}
			}
		}
		if op.Kind == fkAddResv {
			r.gen.resvs = append(r.gen.resvs, op.Resv.Name)
		}
	}
	return nil
}

// fzDependencyMet checks, for a job just started, a dependency of one of
// the simple forms the generator writes ("afterok:A", "afterany:A:B",
// "afternotok:A"): every job it names — every task, for a job array's ID —
// has ended as the kind requires. Jobs already forgotten (MinJobAge) are
// not checked.
func fzDependencyMet(j *Job, jobs []Job) error {
	kind, list, ok := strings.Cut(j.Spec.Dependency, ":")
	if !ok || strings.ContainsAny(list, "?,+") {
		return nil
	}
	for _, f := range strings.Split(list, ":") {
		var target JobID
		if _, err := fmt.Sscan(f, &target); err != nil {
			return nil
		}
		var ended, okCount, n int
		for k := range jobs {
			o := &jobs[k]
			if o.ID != target && o.ArrayJobID != target {
				continue
			}
			n++
			if o.State.Finished() {
				ended++
				if o.State == JobCompleted {
					okCount++
				}
			}
		}
		if n == 0 {
			continue
		}
		met := true
		switch kind {
		case "afterok":
			met = okCount == n
		case "afterany":
			met = ended == n
		case "afternotok":
			met = ended == n && okCount < n
		}
		if !met {
			return fmt.Errorf("job %d started with dependency %q unmet: %d of %d jobs of %d ended, %d completed", j.ID, j.Spec.Dependency, ended, n, target, okCount)
		}
	}
	return nil
}

// fzReservationClear checks a reservation just made at now on an explicit
// node list without IGNORE_JOBS (or MAINT): no job running on its nodes
// may run into one of its windows (Slurm refuses such a reservation). A
// job's run left is [now, start + time limit); one already past its limit
// ends at the next cycle and holds nothing. The windows are derived here
// from the reservation's documented recurrence, not by the policy's code.
func fzReservationClear(s *Scheduler, now time.Time, r fzResv) error {
	if r.NodeSetLen == 0 || r.Flags&(policy.ResvIgnoreJobs|policy.ResvMaint) != 0 {
		return nil
	}
	pr := r.reservation()
	dur := pr.Duration
	if !pr.End.IsZero() {
		dur = pr.End.Sub(pr.Start)
	}
	step := time.Duration(0) // no recurrence: one window
	switch {
	case pr.Flags.Has(policy.ResvHourly):
		step = time.Hour
	case pr.Flags.Has(policy.ResvWeekly):
		step = 7 * 24 * time.Hour
	case pr.Flags&(policy.ResvDaily|policy.ResvWeekday|policy.ResvWeekend) != 0:
		step = 24 * time.Hour
	}
	counts := func(w time.Time) bool {
		wd := w.Weekday()
		weekend := wd == time.Saturday || wd == time.Sunday
		switch {
		case pr.Flags.Has(policy.ResvWeekday):
			return !weekend
		case pr.Flags.Has(policy.ResvWeekend):
			return weekend
		}
		return true
	}
	// overlaps: the first window that meets [now, end), if any.
	overlaps := func(end time.Time) (time.Time, bool) {
		for w := pr.Start; w.Before(end); w = w.Add(step) {
			if w.Add(dur).After(now) && counts(w) {
				return w, true
			}
			if step == 0 {
				break
			}
		}
		return time.Time{}, false
	}
	names := map[string]bool{}
	for _, k := range r.Nodes {
		names[fzNodeName(k)] = true
	}
	for _, j := range s.Jobs() {
		if j.State != JobRunning || j.Spec.TimeMin != 0 || j.Spec.Reservation != "" {
			continue // a --time-min or reservation job may end before its TimeLimit
		}
		end := j.StartTime.Add(j.TimeLimit)
		if !end.After(now) {
			continue // past its limit: it ends at the next cycle
		}
		for _, na := range j.Alloc.Nodes {
			if w, ok := overlaps(end); names[na.Name] && ok {
				return fmt.Errorf("reservation %q on node %s accepted over running job %d (ends %s, window opens %s)",
					r.Name, na.Name, j.ID, end.Format(time.RFC3339), w.Format(time.RFC3339))
			}
		}
	}
	return nil
}

// fzCheckTasks checks a running job's tasks as Slurm lays them out: its
// node count within [Nodes, NodesMax] (or what its tasks need), and, when
// only its tasks decide its CPUs, Tasks × CPUsPerTask CPUs in all, at
// least one task and at most TasksPerNode on each node.
func fzCheckTasks(s *Scheduler, j *Job) error {
	sp := &j.Spec
	if j.State != JobRunning {
		return nil
	}
	n := len(j.Alloc.Nodes)
	// A NodeList or counted Constraint may raise the node count above -N.
	raised := sp.NodeList != "" || strings.Contains(sp.Constraint, "*")
	if len(sp.GRESPerJob) > 0 {
		// --gpus: the count chosen within -N's range, one GPU at least on
		// each node, one task at least on each.
		var gpus int64
		for _, r := range sp.GRESPerJob {
			gpus = max(gpus, r.Count)
		}
		if n < max(sp.Nodes, 1) || (sp.NodesMax > 0 && n > sp.NodesMax && !raised) || (gpus > 0 && int64(n) > gpus) || (sp.Tasks > 0 && n > sp.Tasks) {
			return fmt.Errorf("job %d: -N %d-%d -n %d --gpus=%d runs on %d nodes", j.ID, sp.Nodes, sp.NodesMax, sp.Tasks, gpus, n)
		}
		return nil
	}
	if sp.Tasks == 0 {
		return nil
	}
	if p := sp.planeSize(); p > 0 && n > (sp.Tasks+p-1)/p {
		return fmt.Errorf("job %d: -n %d -m plane=%d runs on %d nodes, more than its blocks", j.ID, sp.Tasks, p, n)
	}
	if n < max(sp.Nodes, 1) || (sp.NodesMax > 0 && n > sp.NodesMax) || (sp.Nodes > 0 && sp.NodesMax == 0 && n != sp.Nodes && !raised) || n > sp.Tasks {
		return fmt.Errorf("job %d: -N %d-%d -n %d runs on %d nodes", j.ID, sp.Nodes, sp.NodesMax, sp.Tasks, n)
	}
	exclusive := sp.Exclusive || s.parts[s.partByName[j.Partition]].cfg.OverSubscribe == policy.OverSubscribeExclusive
	if s.crUnit != CRCPU {
		return nil // whole cores or sockets round the CPUs up (crunit.go)
	}
	if exclusive || sp.CPUsPerGPU > 0 || len(sp.GRESPerNode)+len(sp.GRESPerTask) > 0 || sp.GPUsPerSocket > 0 {
		return nil // per-GPU CPUs (or whole nodes) may add CPUs
	}
	cpt := max(sp.CPUsPerTask, 1)
	total := 0
	for _, na := range j.Alloc.Nodes {
		c := len(na.CPUs)
		total += c
		if c < cpt || c%cpt != 0 || (sp.TasksPerNode > 0 && c > sp.TasksPerNode*cpt) {
			return fmt.Errorf("job %d: %d CPUs on node %s for tasks of %d CPUs (TasksPerNode %d)", j.ID, c, na.Name, cpt, sp.TasksPerNode)
		}
		if sp.MemPerCPUMiB > 0 && na.MemoryMiB != int64(c)*sp.MemPerCPUMiB {
			return fmt.Errorf("job %d: %d MiB on node %s for %d CPUs at %d MiB/CPU", j.ID, na.MemoryMiB, na.Name, c, sp.MemPerCPUMiB)
		}
	}
	if total != sp.Tasks*cpt {
		return fmt.Errorf("job %d: -n %d -c %d holds %d CPUs", j.ID, sp.Tasks, cpt, total)
	}
	return nil
}

// fzWholeUnits checks that a running job's CPUs on a node are whole
// allocation units (Config.SelectTypeParameters: cores or sockets).
func fzWholeUnits(s *Scheduler, j *Job, na NodeAlloc) error {
	if s.crUnit == CRCPU || j.State != JobRunning {
		return nil
	}
	l := s.nodes[na.Node].lay
	size := l.unitSize(s.crUnit)
	if size == 1 {
		return nil
	}
	units := map[int]int{}
	for _, c := range na.CPUs {
		units[c/size]++
	}
	for u, k := range units {
		if k != size {
			return fmt.Errorf("job %d: node %s: %d of the %d CPUs of %s unit %d (CPUs %v)", j.ID, na.Name, k, size, s.crUnit, u, na.CPUs)
		}
	}
	return nil
}

// fzCheckWhere checks a job just started against where it may run, as
// Slurm documents -w, -C and --contiguous: every NodeList node in its
// allocation, every counted group's count met by distinct nodes, one
// matching-OR alternative matched by all its nodes, consecutive nodes for
// Contiguous, none of its Exclude nodes, and no node over its capacity
// (the per-node checks of fzInvariants).
func fzCheckWhere(s *Scheduler, j *Job, nodes []NodeInfo) error {
	sp := &j.Spec
	in := map[string]bool{}
	for _, na := range j.Alloc.Nodes {
		in[na.Name] = true
	}
	if sp.NodeList != "" {
		names, err := topology.ExpandHostlist(sp.NodeList)
		if err != nil {
			return fmt.Errorf("job %d: NodeList %q accepted but does not parse: %w", j.ID, sp.NodeList, err)
		}
		for _, nm := range names {
			if !in[nm] {
				return fmt.Errorf("job %d: NodeList %q but runs on %v", j.ID, sp.NodeList, j.Alloc.NodeNames())
			}
		}
	}
	for _, x := range sp.Exclude {
		names, _ := topology.ExpandHostlist(x)
		for _, nm := range names {
			if in[nm] {
				return fmt.Errorf("job %d: Exclude %q but runs on %v", j.ID, x, j.Alloc.NodeNames())
			}
		}
	}
	feats := func(na NodeAlloc) []string { return s.nodes[na.Node].cfg.Features }
	if c, err := feature.Parse(sp.Constraint); err == nil {
		switch c.Kind() {
		case feature.KindCounts:
			// Greedy assignment in group order, as the chooser counts
			// (each node toward the first group in need it matches).
			need := make([]int, len(c.Groups()))
			for k, g := range c.Groups() {
				need[k] = g.Count
			}
			for _, na := range j.Alloc.Nodes {
				for k, g := range c.Groups() {
					if need[k] > 0 && g.Expr.Match(feats(na)) {
						need[k]--
						break
					}
				}
			}
			for k, x := range need {
				if x > 0 {
					return fmt.Errorf("job %d: Constraint %q group %d short of %d node(s) on %v", j.ID, sp.Constraint, k, x, j.Alloc.NodeNames())
				}
			}
		case feature.KindMatchingOR:
			one := false
			for _, a := range c.Alternatives() {
				all := true
				for _, na := range j.Alloc.Nodes {
					all = all && a.Match(feats(na))
				}
				one = one || all
			}
			if !one {
				return fmt.Errorf("job %d: Constraint %q but no one alternative matches all of %v", j.ID, sp.Constraint, j.Alloc.NodeNames())
			}
		}
	}
	if sp.Contiguous {
		for k := 1; k < len(j.Alloc.Nodes); k++ {
			if j.Alloc.Nodes[k].Node != j.Alloc.Nodes[k-1].Node+1 {
				return fmt.Errorf("job %d: Contiguous but runs on %v", j.ID, j.Alloc.NodeNames())
			}
		}
	}
	return nil
}
