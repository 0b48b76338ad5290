package scheduler

import (
	"cmp"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/sluicehq/sluice/accounting"
	"github.com/sluicehq/sluice/gres"
	"github.com/sluicehq/sluice/policy"
	"github.com/sluicehq/sluice/priority"
	"github.com/sluicehq/sluice/topology"
)

// ErrNotRecordable reports an audit record that the accounting ledger has
// no place for (a decision kind it does not know, a GPU index beyond its
// range).
var ErrNotRecordable = errors.New("decision cannot be stored in the ledger")

// DecisionKind says what the scheduler decided about a job.
type DecisionKind uint8

// Decision kinds.
const (
	// DecisionStart: the main pass started the job in queue order.
	DecisionStart DecisionKind = iota + 1
	// DecisionBackfillStart: the backfill pass started the job ahead of
	// higher-priority jobs that could not start, without delaying their
	// reservations.
	DecisionBackfillStart
	// DecisionTimeout: the cycle ended the job at its time limit.
	DecisionTimeout
	// DecisionRequeue: the job went back to the queue (launch failure, or
	// a node failure of a requeueable job).
	DecisionRequeue
	// DecisionPreempt: the job was preempted for another (reserved for
	// when the scheduler preempts).
	DecisionPreempt
	// DecisionIdle: a running job's GPUs were found allocated but idle
	// (TelemetryEvent, TelemetryConfig's rule): recorded once when it
	// becomes idle (Action none) and again when the idle action takes its
	// allocation back (Action REQUEUE or CANCEL), with the run's mean GPU
	// utilisation and its idle time.
	DecisionIdle
	numDecisionKinds
)

var decisionKindNames = [numDecisionKinds]string{"", "start", "backfill-start", "timeout", "requeue", "preempt", "idle"}

// String returns "start", "backfill-start", "timeout", "requeue",
// "preempt" or "idle".
func (k DecisionKind) String() string { return enumName(k, decisionKindNames[:], "DecisionKind") }

// IsStart reports whether the decision started the job.
func (k DecisionKind) IsStart() bool { return k == DecisionStart || k == DecisionBackfillStart }

// NodeGPUs lists the GPU indices a job holds on one node.
type NodeGPUs struct {
	Node    string
	Indices []int
}

// Factors is the weighted priority breakdown a decision was made with
// (what sprio shows): the six multifactor terms, the TRES term, the site
// factor and the nice value subtracted.
type Factors struct {
	Age, Assoc, FairShare, JobSize, Partition, QOS, TRES float64
	Site, Nice                                           int64
}

// factorNames are the keys of Factors in an accounting record.
var factorNames = [...]string{"age", "assoc", "fairshare", "jobsize", "partition", "qos", "tres", "site", "nice"}

func (f *Factors) values() [9]float64 {
	return [9]float64{f.Age, f.Assoc, f.FairShare, f.JobSize, f.Partition, f.QOS, f.TRES, float64(f.Site), float64(f.Nice)}
}

func factorsOf(b *priority.Breakdown) *Factors {
	w := b.Weighted
	return &Factors{Age: w.Age, Assoc: w.Assoc, FairShare: w.FairShare, JobSize: w.JobSize, Partition: w.Partition,
		QOS: w.QOS, TRES: b.TRESSum, Site: b.Site, Nice: b.Nice}
}

// Overtaken is a job that was ahead of a backfilled job in queue order
// and still pending when it started, with why it could not start itself.
type Overtaken struct {
	Job      JobID
	Priority uint32
	// Reason is its pending reason in that cycle.
	Reason policy.Reason
	// PlannedStart is when the backfill plan expected it to start (zero
	// without an estimate; with Config.EstimateInterval, possibly the
	// estimate of an earlier cycle): the backfilled job did not delay it.
	PlannedStart time.Time
}

// MaxOvertaken bounds the jobs a backfill start record lists: the first
// ones in queue order among those that could use the started job's nodes.
const MaxOvertaken = 8

// Decision is the compact audit record of one scheduling decision, with
// the inputs it was based on, so that "why did job A start before job B"
// can be answered later from records alone. Convert it with Accounting to
// persist it in the ledger, and back with DecisionFromAccounting.
type Decision struct {
	Kind DecisionKind
	// Time is when the decision took effect (a timeout's time is the
	// job's deadline).
	Time time.Time
	Job  JobID
	// Partition, User and Account identify the job.
	Partition, User, Account string
	// Nodes are the job's nodes in allocation order; GPUs the GPU indices
	// on each (nodes without GPUs are left out).
	Nodes []string
	GPUs  []NodeGPUs
	// Priority is the job's priority when the decision was made, and
	// Factors its weighted breakdown (nil without multifactor priority).
	Priority uint32
	Factors  *Factors
	// QueuePos is the job's 1-based position in queue order among the
	// jobs pending when its cycle ran (starts only; 0 otherwise).
	QueuePos int
	// PolicyVersion identifies the configuration in force (see
	// Scheduler.PolicyVersion).
	PolicyVersion string
	// Overtook lists, for a backfill start, the first MaxOvertaken jobs
	// ahead of it in queue order that could have used its nodes and were
	// still pending; OvertookMore is set when there were more.
	Overtook     []Overtaken
	OvertookMore bool
	// Preempted lists, for a start, the running jobs preempted to make
	// room for it (in that cycle).
	Preempted []JobID
	// Preemptor is, for a preemption, the job it made room for; Action
	// what happens to the victim (CANCEL, REQUEUE) and KillAt when its
	// resources are freed (after its grace time). For an idle decision,
	// Action is what the idle action did (none: reported only) and
	// KillAt when.
	Preemptor JobID
	Action    policy.PreemptAction
	KillAt    time.Time
	// LostGPUSeconds and LostCPUSeconds are, for a preemption, the work
	// the victim loses (since its last checkpoint).
	LostGPUSeconds, LostCPUSeconds float64
	// Reason qualifies timeouts and requeues (TimeLimit, NodeDown,
	// launch_failed_requeued, Preempted, AllocatedIdle).
	Reason policy.Reason
	// Utilization and IdleFor are, for an idle decision, the mean GPU
	// utilisation (percent) of the job's current run so far and how long
	// every node of it that reported has been idle.
	Utilization float64       `json:",omitempty"`
	IdleFor     time.Duration `json:",omitempty"`
}

// String formats the record on one line, e.g.
//
//	2026-01-05T08:00:00Z backfill-start job 7 (gpu) on n1 gpus n1:0-1 priority 0 pos 3 passed 2 [4 Resources@…]
func (d Decision) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s job %d", d.Time.Format(time.RFC3339), d.Kind, d.Job)
	if d.Partition != "" {
		fmt.Fprintf(&b, " (%s)", d.Partition)
	}
	if len(d.Nodes) > 0 {
		fmt.Fprintf(&b, " on %s", strings.Join(d.Nodes, ","))
	}
	if len(d.GPUs) > 0 {
		b.WriteString(" gpus")
		for _, g := range d.GPUs {
			fmt.Fprintf(&b, " %s:%s", g.Node, gres.FormatIDList(g.Indices))
		}
	}
	fmt.Fprintf(&b, " priority %d", d.Priority)
	if d.QueuePos > 0 {
		fmt.Fprintf(&b, " pos %d", d.QueuePos)
	}
	if d.Reason != policy.ReasonNone {
		fmt.Fprintf(&b, " reason %s", d.Reason)
	}
	if d.Preemptor != 0 {
		fmt.Fprintf(&b, " for job %d (%s at %s)", d.Preemptor, d.Action, d.KillAt.Format(time.RFC3339))
	}
	if len(d.Preempted) > 0 {
		fmt.Fprintf(&b, " preempting %v", d.Preempted)
	}
	if len(d.Overtook) > 0 {
		fmt.Fprintf(&b, " passed %d", len(d.Overtook))
		if d.OvertookMore {
			b.WriteString("+")
		}
		b.WriteString(" [")
		for i, o := range d.Overtook {
			if i > 0 {
				b.WriteString(" ")
			}
			fmt.Fprintf(&b, "%d %s", o.Job, o.Reason)
			if !o.PlannedStart.IsZero() {
				fmt.Fprintf(&b, "@%s", o.PlannedStart.Format(time.RFC3339))
			}
		}
		b.WriteString("]")
	}
	return b.String()
}

// AuditRecords returns the audit records of the decisions cycle c made:
// one per job it ended at its time limit, one per preemption (the victim,
// with the job it made room for), then one per start in decision order
// (main-pass starts, then backfill starts; a start lists the jobs it
// preempted). A victim killed after its grace time appears in a later
// cycle's Ended, but its decision was recorded when it was made. Call it right after
// Schedule returned c, before further events: it reads the jobs' state
// (priority, allocation, the queue's order and reasons) as the cycle left
// it. The caller persists the records (see Decision.Accounting).
//
// A backfill start lists the jobs it overtook: the first MaxOvertaken jobs
// ahead of it in queue order, still pending after the cycle, whose
// partition and request allow them on at least one of its nodes, with
// their reason and planned start (the plan guarantees it did not delay a
// job that holds a reservation).
func (s *Scheduler) AuditRecords(c Cycle) []Decision {
	return s.auditRecords(c, nil)
}

// auditRecords is AuditRecords; pend, when not nil, holds the job of each
// entry of c.Pending (Schedule has them at hand), sparing a lookup by ID.
func (s *Scheduler) auditRecords(c Cycle, pend []*job) []Decision {
	out := make([]Decision, 0, len(c.Ended)+len(c.Preemptions)+len(c.Starts))
	if len(c.Ended)+len(c.Preemptions)+len(c.Starts) == 0 {
		return out
	}
	version := s.PolicyVersion()
	for _, e := range c.Ended {
		j, ok := s.jobs[e.Job]
		if !ok || e.Reason != policy.ReasonTimeLimit {
			continue // preemption kills were recorded as decisions earlier
		}
		d := s.recordOf(j, DecisionTimeout, j.EndTime, version)
		d.Reason = e.Reason
		out = append(out, d)
	}
	var preempted map[JobID][]JobID
	for _, p := range c.Preemptions {
		j, ok := s.jobs[p.Victim]
		if !ok {
			continue
		}
		d := s.recordOf(j, DecisionPreempt, c.Now, version)
		d.Preemptor, d.Action, d.KillAt, d.Reason = p.Preemptor, p.Action, p.KillAt, policy.ReasonPreempted
		d.LostGPUSeconds, d.LostCPUSeconds = p.LostGPUSeconds, p.LostCPUSeconds
		out = append(out, d)
		if preempted == nil {
			preempted = map[JobID][]JobID{}
		}
		preempted[p.Preemptor] = append(preempted[p.Preemptor], p.Victim)
	}
	if len(c.Starts) == 0 {
		return out
	}
	a := auditScan{s: s, pending: c.Pending, jobs: pend}
	a.init()
	// Started jobs in queue order, for queue positions (in scratch that
	// is emptied before returning).
	byQueue := s.audit.jobs[:0]
	for _, st := range c.Starts {
		if j, ok := s.jobs[st.Job]; ok {
			byQueue = append(byQueue, j)
		}
	}
	slices.SortFunc(byQueue, queueCmp)
	first := len(out)
	for _, st := range c.Starts {
		j, ok := s.jobs[st.Job]
		if !ok {
			continue
		}
		kind := DecisionStart
		if st.Backfill {
			kind = DecisionBackfillStart
		}
		d := s.recordOf(j, kind, c.Now, version)
		d.Preempted = preempted[j.ID]
		// Victims requeued during the cycle were running when it was
		// decided: they do not count.
		ahead := a.sortedAhead(j)
		startedAhead, _ := slices.BinarySearchFunc(byQueue, j, queueCmp)
		d.QueuePos = 1 + ahead + startedAhead
		out = append(out, d)
	}
	// Overtaken jobs of the backfill starts: one walk of the pending list
	// (up to the start's place in it) per backfill start.
	a.overtaken(out[first:])
	clear(byQueue)
	s.audit.jobs = byQueue[:0]
	return out
}

func queueCmp(a, b *job) int {
	switch {
	case a == b:
		return 0
	case queueLess(a, b):
		return -1
	}
	return 1
}

// recordOf builds the common part of a job's record.
func (s *Scheduler) recordOf(j *job, kind DecisionKind, at time.Time, version string) Decision {
	d := Decision{
		Kind: kind, Time: at, Job: j.ID, Partition: j.Partition, User: j.Spec.User, Account: j.Spec.Account,
		Priority: j.Priority, PolicyVersion: version,
	}
	if s.prio != nil {
		d.Factors = factorsOf(&j.breakdown)
	}
	d.Nodes = make([]string, len(j.Alloc.Nodes))
	for k, na := range j.Alloc.Nodes {
		d.Nodes[k] = na.Name
		n := &s.nodes[na.Node]
		var g []int
		for x, dev := range na.Devices {
			if n.isGPU(dev) {
				if g == nil {
					g = make([]int, 0, len(na.Devices)-x) // one allocation
				}
				g = append(g, dev)
			}
		}
		if len(g) > 0 {
			if d.GPUs == nil {
				d.GPUs = make([]NodeGPUs, 0, len(j.Alloc.Nodes)-k)
			}
			d.GPUs = append(d.GPUs, NodeGPUs{Node: na.Name, Indices: g})
		}
	}
	return d
}

// isGPU reports whether device index dev of the node is a GPU.
func (n *node) isGPU(dev int) bool {
	if ds := n.cfg.Devices.Devices; dev >= 0 && dev < len(ds) && ds[dev].Index == dev {
		return strings.EqualFold(ds[dev].Name, "gpu") // indices are usually positions
	}
	for k := range n.cfg.Devices.Devices {
		if d := &n.cfg.Devices.Devices[k]; d.Index == dev {
			return strings.EqualFold(d.Name, "gpu")
		}
	}
	return false
}

// auditScratch is what AuditRecords reuses from call to call: the
// started jobs it sorts (emptied after use), and for each backfill start
// its nodes, what competes found per shape, and the overtaken jobs found
// (each record gets a copy of its own).
type auditScratch struct {
	jobs  []*job
	nodes []int
	memo  map[*shape]bool
	found []Overtaken
}

// auditScan reads a cycle's pending list, resolving only the entries it
// looks at. The list is in queue order except for a tail of preemption
// victims requeued during the cycle (sorted says where that tail starts).
// jobs, when not nil, holds the job of each entry.
type auditScan struct {
	s       *Scheduler
	pending []Pending
	jobs    []*job
	sorted  int
}

// init finds the sorted part of the list.
func (a *auditScan) init() {
	a.sorted = len(a.pending)
	for a.sorted > 0 && a.pending[a.sorted-1].Reason == policy.ReasonPreempted {
		a.sorted--
	}
}

func (a *auditScan) at(i int) *job {
	if a.jobs != nil {
		return a.jobs[i]
	}
	return a.s.jobs[a.pending[i].Job]
}

// sortedAhead returns how many jobs of the sorted part of the list are
// ahead of j in queue order.
func (a *auditScan) sortedAhead(j *job) int {
	lo, hi := 0, a.sorted
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		p := a.at(m)
		if p != nil && queueLess(p, j) {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
}

// maxOvertakenScan bounds how far ahead of a backfill start the walk looks
// for jobs it overtook; past it the record says there were more.
const maxOvertakenScan = 1024

// overtaken fills Overtook of the backfill start records.
func (a *auditScan) overtaken(recs []Decision) {
	s := a.s
	nodes, memo, found := s.audit.nodes, s.audit.memo, s.audit.found
	if memo == nil {
		memo = map[*shape]bool{}
	}
	for r := range recs {
		d := &recs[r]
		if d.Kind != DecisionBackfillStart {
			continue
		}
		j := s.jobs[d.Job]
		pa := a.sortedAhead(j)
		limit := min(pa, maxOvertakenScan)
		nodes = nodes[:0]
		for _, na := range j.Alloc.Nodes {
			nodes = append(nodes, na.Node)
		}
		clear(memo)
		found = found[:0]
		competes := func(p *job) bool {
			c, ok := memo[p.shape]
			if !ok {
				for _, i := range nodes {
					if p.shape.capable.Has(i) {
						c = true
						break
					}
				}
				memo[p.shape] = c
			}
			return c
		}
		// add lists pending entry i (job p), or marks the list full.
		add := func(i int, p *job) bool {
			if len(found) == MaxOvertaken {
				d.OvertookMore = true
				return false
			}
			found = append(found, Overtaken{Job: p.ID, Priority: p.Priority, Reason: a.pending[i].Reason,
				PlannedStart: a.pending[i].ExpectedStart})
			return true
		}
		i := 0
		for ; i < limit; i++ {
			if p := a.at(i); p != nil && p.ID != j.ID && competes(p) && !add(i, p) {
				break
			}
		}
		if i == limit && pa > limit {
			d.OvertookMore = true
		}
		// Victims requeued this cycle and ahead of it.
		for i := a.sorted; i < len(a.pending) && !d.OvertookMore; i++ {
			if p := a.at(i); p != nil && queueLess(p, j) && competes(p) && !add(i, p) {
				break
			}
		}
		if len(found) > 0 {
			d.Overtook = slices.Clone(found)
		}
	}
	s.audit.nodes, s.audit.memo, s.audit.found = nodes, memo, found
}

// RequeueRecord returns the audit record of a requeue the caller just
// applied (Requeue, or DownNode for a requeueable job): the nodes and
// GPUs of the allocation the job lost, and why. It fails with ErrJobState
// when the job is not a requeued pending job.
func (s *Scheduler) RequeueRecord(now time.Time, id JobID) (Decision, error) {
	j, ok := s.jobs[id]
	if !ok {
		return Decision{}, s.unknownJob(id)
	}
	if j.State != JobPending || j.Restarts == 0 {
		return Decision{}, fmt.Errorf("%w: job %d is %s with %d restarts, not a requeued job", ErrJobState, id, j.State, j.Restarts)
	}
	d := s.recordOf(j, DecisionRequeue, now, s.PolicyVersion())
	d.Reason = j.Reason
	return d, nil
}

// ---- accounting conversion ----

// Accounting converts the record to the ledger's form for cluster
// (accounting.Decision): both kinds of start become DecisionStart, the
// main pass's with Detail "how=main", backfill's with "how=backfill";
// requeue and preempt map to their kinds. The queue position, partition,
// user, account and reason go into Detail as key=value words; overtaken
// jobs become Competitors whose Reason is "<reason>" or
// "<reason> planned=<RFC 3339 time>"; Factors become the map keys age,
// assoc, fairshare, jobsize, partition, qos, tres, site and nice. Times
// are kept in whole seconds, as the ledger stores them.
//
// A timeout has no ledger kind yet and returns ErrNotRecordable, as does a
// GPU index the ledger cannot hold (above 63).
func (d Decision) Accounting(cluster string) (accounting.Decision, error) {
	ad := accounting.Decision{Job: accounting.JobID(d.Job), Time: d.Time.Truncate(time.Second), Cluster: cluster,
		Priority: float64(d.Priority), PolicyVersion: d.PolicyVersion}
	var detail []string
	switch d.Kind {
	case DecisionStart:
		ad.Kind = accounting.DecisionStart
		detail = append(detail, "how=main")
	case DecisionBackfillStart:
		ad.Kind = accounting.DecisionStart
		detail = append(detail, "how=backfill")
	case DecisionRequeue:
		ad.Kind = accounting.DecisionRequeue
	case DecisionPreempt:
		ad.Kind = accounting.DecisionPreempt
	case DecisionIdle:
		ad.Kind = accounting.DecisionIdle
	default:
		return accounting.Decision{}, fmt.Errorf("%w: job %d: kind %s has no ledger kind", ErrNotRecordable, d.Job, d.Kind)
	}
	for _, kv := range [...]struct{ k, v string }{{"part", d.Partition}, {"user", d.User}, {"account", d.Account}} {
		if kv.v != "" {
			detail = append(detail, kv.k+"="+kv.v)
		}
	}
	if d.QueuePos > 0 {
		detail = append(detail, "pos="+strconv.Itoa(d.QueuePos))
	}
	if d.Reason != policy.ReasonNone {
		// Detail words are space-separated: a reason spelled with spaces
		// ("ReqNodeNotAvail, Reserved for maintenance") keeps them as '+'.
		detail = append(detail, "reason="+strings.ReplaceAll(d.Reason.String(), " ", "+"))
	}
	if d.OvertookMore {
		detail = append(detail, "more=1")
	}
	if d.Preemptor != 0 {
		detail = append(detail, "preemptor="+strconv.FormatUint(uint64(d.Preemptor), 10), "action="+d.Action.String(),
			"killat="+d.KillAt.UTC().Format(time.RFC3339),
			"lost_gpu_s="+strconv.FormatFloat(d.LostGPUSeconds, 'g', -1, 64),
			"lost_cpu_s="+strconv.FormatFloat(d.LostCPUSeconds, 'g', -1, 64))
	}
	if d.Kind == DecisionIdle {
		detail = append(detail, "util="+strconv.FormatFloat(d.Utilization, 'g', -1, 64),
			"idle_s="+strconv.FormatFloat(d.IdleFor.Seconds(), 'g', -1, 64))
		if d.Action != policy.ActionNone {
			detail = append(detail, "action="+d.Action.String())
		}
	}
	ad.Detail = strings.Join(detail, " ")
	if len(d.Nodes) > 0 {
		ad.NodeList = compactNames(d.Nodes)
	}
	for _, g := range d.GPUs {
		for _, x := range g.Indices {
			if x < 0 || x > 63 {
				return accounting.Decision{}, fmt.Errorf("%w: job %d: GPU index %d on %s", ErrNotRecordable, d.Job, x, g.Node)
			}
		}
		ad.GPUs = append(ad.GPUs, accounting.NodeGPUs{Node: g.Node, Indices: slices.Clone(g.Indices)})
	}
	if d.Factors != nil {
		ad.Factors = make(map[string]float64, len(factorNames))
		for k, v := range d.Factors.values() {
			ad.Factors[factorNames[k]] = v
		}
	}
	for _, v := range d.Preempted {
		ad.Competing = append(ad.Competing, accounting.Competitor{Job: accounting.JobID(v), Reason: policy.ReasonPreempted.String()})
	}
	for _, o := range d.Overtook {
		r := o.Reason.String()
		if !o.PlannedStart.IsZero() {
			r += " planned=" + o.PlannedStart.UTC().Format(time.RFC3339)
		}
		ad.Competing = append(ad.Competing, accounting.Competitor{Job: accounting.JobID(o.Job), Priority: float64(o.Priority), Reason: r})
	}
	return ad, nil
}

// DecisionFromAccounting reads back a record written by
// Decision.Accounting. Node lists come back sorted (the ledger keeps a
// compressed hostlist), times in UTC.
func DecisionFromAccounting(ad accounting.Decision) (Decision, error) {
	d := Decision{Job: JobID(ad.Job), Time: ad.Time.UTC(), PolicyVersion: ad.PolicyVersion}
	if ad.Priority < 0 || ad.Priority > math.MaxUint32 || ad.Priority != math.Trunc(ad.Priority) {
		return Decision{}, fmt.Errorf("%w: job %d: priority %v is not a scheduler priority", ErrInvalidRecord, ad.Job, ad.Priority)
	}
	d.Priority = uint32(ad.Priority)
	fields := strings.Fields(ad.Detail)
	how := ""
	for _, f := range fields {
		k, v, ok := strings.Cut(f, "=")
		if !ok {
			return Decision{}, fmt.Errorf("%w: job %d: detail word %q", ErrInvalidRecord, ad.Job, f)
		}
		var err error
		switch k {
		case "how":
			how = v
		case "part":
			d.Partition = v
		case "user":
			d.User = v
		case "account":
			d.Account = v
		case "pos":
			d.QueuePos, err = strconv.Atoi(v)
		case "reason":
			d.Reason, err = policy.ParseReason(strings.ReplaceAll(v, "+", " "))
		case "more":
			d.OvertookMore = v == "1"
		case "preemptor":
			var id uint64
			id, err = strconv.ParseUint(v, 10, 64)
			d.Preemptor = JobID(id)
		case "action":
			switch v {
			case policy.ActionCancel.String():
				d.Action = policy.ActionCancel
			case policy.ActionRequeue.String():
				d.Action = policy.ActionRequeue
			case policy.ActionSuspend.String():
				d.Action = policy.ActionSuspend
			default:
				err = fmt.Errorf("unknown action %q", v)
			}
		case "killat":
			d.KillAt, err = time.Parse(time.RFC3339, v)
		case "lost_gpu_s":
			d.LostGPUSeconds, err = strconv.ParseFloat(v, 64)
		case "lost_cpu_s":
			d.LostCPUSeconds, err = strconv.ParseFloat(v, 64)
		case "util":
			d.Utilization, err = strconv.ParseFloat(v, 64)
		case "idle_s":
			var sec float64
			sec, err = strconv.ParseFloat(v, 64)
			if err == nil && !(sec >= 0 && sec < float64(math.MaxInt64)/1e9) {
				err = fmt.Errorf("idle time %v s out of range", sec)
			}
			d.IdleFor = time.Duration(math.Round(sec * 1e9))
		}
		if err != nil {
			return Decision{}, fmt.Errorf("%w: job %d: detail %q: %w", ErrInvalidRecord, ad.Job, f, err)
		}
	}
	switch ad.Kind {
	case accounting.DecisionStart:
		d.Kind = DecisionStart
		if how == "backfill" {
			d.Kind = DecisionBackfillStart
		}
	case accounting.DecisionRequeue:
		d.Kind = DecisionRequeue
	case accounting.DecisionPreempt:
		d.Kind = DecisionPreempt
	case accounting.DecisionIdle:
		d.Kind = DecisionIdle
	default:
		return Decision{}, fmt.Errorf("%w: job %d: ledger kind %s", ErrInvalidRecord, ad.Job, ad.Kind)
	}
	if ad.NodeList != "" {
		nodes, err := topology.ExpandHostlist(ad.NodeList)
		if err != nil {
			return Decision{}, fmt.Errorf("%w: job %d: nodelist: %w", ErrInvalidRecord, ad.Job, err)
		}
		d.Nodes = nodes
	}
	for _, g := range ad.GPUs {
		d.GPUs = append(d.GPUs, NodeGPUs{Node: g.Node, Indices: slices.Clone(g.Indices)})
	}
	if len(ad.Factors) > 0 {
		var v [9]float64
		for k, name := range factorNames {
			v[k] = ad.Factors[name]
		}
		d.Factors = &Factors{Age: v[0], Assoc: v[1], FairShare: v[2], JobSize: v[3], Partition: v[4], QOS: v[5], TRES: v[6],
			Site: int64(v[7]), Nice: int64(v[8])}
	}
	for _, c := range ad.Competing {
		if c.Reason == policy.ReasonPreempted.String() && d.Kind.IsStart() {
			d.Preempted = append(d.Preempted, JobID(c.Job))
			continue
		}
		o := Overtaken{Job: JobID(c.Job), Priority: uint32(max(0, min(c.Priority, math.MaxUint32)))}
		rs, planned, hasPlan := strings.Cut(c.Reason, " planned=")
		r, err := policy.ParseReason(rs)
		if err != nil {
			return Decision{}, fmt.Errorf("%w: job %d: competitor %d: %w", ErrInvalidRecord, ad.Job, c.Job, err)
		}
		o.Reason = r
		if hasPlan {
			t, err := time.Parse(time.RFC3339, planned)
			if err != nil {
				return Decision{}, fmt.Errorf("%w: job %d: competitor %d: planned start: %w", ErrInvalidRecord, ad.Job, c.Job, err)
			}
			o.PlannedStart = t
		}
		d.Overtook = append(d.Overtook, o)
	}
	return d, nil
}

// ErrInvalidRecord reports a ledger record that DecisionFromAccounting
// cannot read.
var ErrInvalidRecord = errors.New("invalid decision record")

// ---- records source ----

// DecisionSource supplies the audit records of a job, oldest first — from
// the accounting ledger (convert with DecisionFromAccounting) or from
// records the caller kept. Explain reads it for running and finished jobs.
type DecisionSource interface {
	JobDecisions(id JobID) ([]Decision, error)
}

// Decisions is an in-memory DecisionSource.
type Decisions []Decision

// JobDecisions returns the records of job id in time order.
func (ds Decisions) JobDecisions(id JobID) ([]Decision, error) {
	var out []Decision
	for _, d := range ds {
		if d.Job == id {
			out = append(out, d)
		}
	}
	slices.SortStableFunc(out, func(a, b Decision) int { return a.Time.Compare(b.Time) })
	return out, nil
}

// ---- Compare ----

// ComparisonKind classifies the answer to "why did job A start before
// job B".
type ComparisonKind uint8

// Comparison kinds.
const (
	// CompareUnknown: the records do not tell (neither started, or they
	// hold too little).
	CompareUnknown ComparisonKind = iota
	// CompareOnlyOne: only one of the jobs has started.
	CompareOnlyOne
	// CompareBackfill: the first started by backfill while the other,
	// ahead of it in the queue, was pending and listed as overtaken.
	CompareBackfill
	// CompareQueueOrder: the first started in queue order (main pass), or
	// both started in one cycle and the first was ahead in the queue.
	CompareQueueOrder
	// CompareNotCompeting: the first started while the other was not
	// recorded as competing for its nodes (not yet submitted or eligible,
	// lower in the queue, or waiting for other nodes).
	CompareNotCompeting
)

var comparisonKindNames = [...]string{"unknown", "only-one-started", "backfill", "queue-order", "not-competing"}

// String names the kind.
func (k ComparisonKind) String() string { return enumName(k, comparisonKindNames[:], "ComparisonKind") }

// Comparison answers "why did one job start before the other", from audit
// records only.
type Comparison struct {
	// First and Second are the jobs in start order (First is A when
	// neither started); FirstStart and SecondStart their latest start
	// records (nil when a job never started).
	First, Second           JobID
	FirstStart, SecondStart *Decision
	Kind                    ComparisonKind
	// Overtaken is the second job's entry in the first's record when the
	// first overtook it by backfill.
	Overtaken *Overtaken
	// PriorityDelta is the first's priority minus the second's, each at
	// its own start, and Largest the factor that differs most (empty
	// without factors on both).
	PriorityDelta int64
	Largest       string
	LargestDelta  float64
	// SamePolicy reports whether both decisions were made under the same
	// policy version.
	SamePolicy bool
}

// Compare answers "why did job A start before job B" (or B before A) from
// each job's audit records (a and b: any records, only the job's own
// start decisions are used; the latest start of each counts). It never
// consults the scheduler's live state.
func Compare(a, b []Decision) Comparison {
	sa, sb := lastStart(a, time.Time{}), lastStart(b, time.Time{})
	var c Comparison
	switch {
	case sa == nil && sb == nil:
		if len(a) > 0 {
			c.First = a[0].Job
		}
		if len(b) > 0 {
			c.Second = b[0].Job
		}
		return c
	case sb == nil || (sa != nil && startsBefore(sa, sb)):
	default:
		sa, sb = sb, sa
		a, b = b, a
	}
	c.First, c.FirstStart = sa.Job, sa
	if sb == nil {
		c.Kind = CompareOnlyOne
		if len(b) > 0 {
			c.Second = b[0].Job
		}
		if c.Second != 0 {
			if c.Overtaken = overtakenIn(sa, c.Second); c.Overtaken != nil {
				c.Kind = CompareBackfill
			}
		}
		return c
	}
	c.Second, c.SecondStart = sb.Job, sb
	c.SamePolicy = sa.PolicyVersion == sb.PolicyVersion
	c.PriorityDelta = int64(sa.Priority) - int64(sb.Priority)
	if sa.Factors != nil && sb.Factors != nil {
		va, vb := sa.Factors.values(), sb.Factors.values()
		for k := range va {
			dlt := va[k] - vb[k]
			if k == 8 { // nice is subtracted
				dlt = -dlt
			}
			if math.Abs(dlt) > math.Abs(c.LargestDelta) {
				c.Largest, c.LargestDelta = factorNames[k], dlt
			}
		}
	}
	if c.Overtaken = overtakenIn(sa, sb.Job); c.Overtaken != nil {
		c.Kind = CompareBackfill
		return c
	}
	if sa.Kind == DecisionStart {
		// Started by the main pass, in queue order (main-pass starts of a
		// cycle also precede its backfill starts).
		c.Kind = CompareQueueOrder
	} else {
		c.Kind = CompareNotCompeting
	}
	return c
}

// overtakenIn returns a copy of d's entry for job id among the jobs it
// overtook, or nil.
func overtakenIn(d *Decision, id JobID) *Overtaken {
	for k := range d.Overtook {
		if d.Overtook[k].Job == id {
			o := d.Overtook[k]
			return &o
		}
	}
	return nil
}

// CompareJobs is Compare over the records src holds for jobs a and b; it
// names both jobs even when one has no record at all.
func CompareJobs(src DecisionSource, a, b JobID) (Comparison, error) {
	ra, err := src.JobDecisions(a)
	if err != nil {
		return Comparison{}, fmt.Errorf("scheduler: records of job %d: %w", a, err)
	}
	rb, err := src.JobDecisions(b)
	if err != nil {
		return Comparison{}, fmt.Errorf("scheduler: records of job %d: %w", b, err)
	}
	// A record naming the job keeps the IDs when a slice is empty.
	if len(ra) == 0 {
		ra = []Decision{{Job: a}}
	}
	if len(rb) == 0 {
		rb = []Decision{{Job: b}}
	}
	c := Compare(ra, rb)
	return c, nil
}

func (c Comparison) writeOvertaken(b *strings.Builder) {
	fmt.Fprintf(b, "job %d was backfilled past job %d (priority %d, pending for %s", c.First, c.Second, c.Overtaken.Priority, c.Overtaken.Reason)
	if !c.Overtaken.PlannedStart.IsZero() {
		fmt.Fprintf(b, ", planned to start at %s", c.Overtaken.PlannedStart.Format(time.RFC3339))
	}
	b.WriteString("); it fit in resources the plan did not need before then")
}

// startsBefore orders two start records: by time, then main pass before
// backfill, then queue position.
func startsBefore(x, y *Decision) bool {
	if c := x.Time.Compare(y.Time); c != 0 {
		return c < 0
	}
	if x.Kind != y.Kind {
		return x.Kind == DecisionStart
	}
	return cmp.Compare(x.QueuePos, y.QueuePos) <= 0
}

// lastStart returns the latest start record of ds (the last of equal
// times), of those at or before by unless by is zero; nil when none.
func lastStart(ds []Decision, by time.Time) *Decision {
	var out *Decision
	for k := range ds {
		if d := &ds[k]; d.Kind.IsStart() && (by.IsZero() || !d.Time.After(by)) && (out == nil || !d.Time.Before(out.Time)) {
			out = d
		}
	}
	return out
}

// String explains the comparison in a sentence or two.
func (c Comparison) String() string {
	var b strings.Builder
	switch c.Kind {
	case CompareUnknown:
		fmt.Fprintf(&b, "neither job %d nor job %d has a start record", c.First, c.Second)
		return b.String()
	case CompareOnlyOne:
		fmt.Fprintf(&b, "job %d started at %s (%s); job %d has not started", c.First,
			c.FirstStart.Time.Format(time.RFC3339), c.FirstStart.Kind, c.Second)
		return b.String()
	}
	f, s := c.FirstStart, c.SecondStart
	if s == nil { // backfilled past a job still pending
		fmt.Fprintf(&b, "job %d started at %s, job %d has not started: ", c.First, f.Time.Format(time.RFC3339), c.Second)
		c.writeOvertaken(&b)
		return b.String()
	}
	fmt.Fprintf(&b, "job %d started at %s, job %d at %s: ", c.First, f.Time.Format(time.RFC3339), c.Second, s.Time.Format(time.RFC3339))
	switch c.Kind {
	case CompareBackfill:
		c.writeOvertaken(&b)
	case CompareQueueOrder:
		if f.Time.Equal(s.Time) && f.Kind == s.Kind {
			fmt.Fprintf(&b, "both started in one cycle; job %d was ahead in queue order (position %d vs %d)", c.First, f.QueuePos, s.QueuePos)
		} else {
			fmt.Fprintf(&b, "job %d started in priority order (queue position %d, priority %d)", c.First, f.QueuePos, f.Priority)
		}
	case CompareNotCompeting:
		fmt.Fprintf(&b, "job %d (%s, priority %d) did not pass job %d: job %d was not pending for its nodes then, or was behind it",
			c.First, f.Kind, f.Priority, c.Second, c.Second)
		if f.OvertookMore {
			fmt.Fprintf(&b, " (the record lists only the first %d jobs passed)", MaxOvertaken)
		}
	}
	fmt.Fprintf(&b, "; priority %d vs %d", f.Priority, s.Priority)
	if c.Largest != "" {
		fmt.Fprintf(&b, " (largest difference: %s %+.0f)", c.Largest, c.LargestDelta)
	}
	if !c.SamePolicy {
		fmt.Fprintf(&b, "; policy changed between the decisions (%s vs %s)", f.PolicyVersion, s.PolicyVersion)
	}
	return b.String()
}

// ---- policy version ----

// PolicyVersion returns a short hash (16 hex digits) of the configuration
// decisions depend on, recorded in every audit record so that a decision
// can be matched with the policy it was made under. It covers: every
// node's name, CPUs, memory, features, schedulable TRES and device
// (index, name, type) list, and the TRES names; every partition's
// settings and nodes (as normalised by New); the topology (each node's
// leaf switch, block and NVLink domain, the switches' names and parents,
// block names and sizes, NVLink domain names); the multifactor
// configuration (weights, TRES weights, max age, flags, QOS priorities,
// calc period, dampening factor, and whether a site-factor hook and a
// fair-share source are set); every backfill knob; and the policy (QOS,
// partition rules, associations and their limits, preemption settings)
// with the advance reservations in force. It does not cover fair-share
// usage (data, not policy), device links or CPU affinity, or the code of
// hooks. Adding or removing a reservation changes it, as does every
// administrative change of partitions, QOS or associations.
//
// It is computed on the first call (about 1.3 ms at the standard scale)
// and kept until a reservation or an administrative change alters what it
// covers.
func (s *Scheduler) PolicyVersion() string {
	if s.policyVersion == "" {
		s.policyVersion = s.policyHash()
	}
	return s.policyVersion
}

// policyHash computes PolicyVersion.
func (s *Scheduler) policyHash() string {
	h := sha256.New()
	var buf []byte
	str := func(x string) {
		buf = binary.AppendUvarint(buf, uint64(len(x)))
		buf = append(buf, x...)
	}
	num := func(x int64) { buf = binary.AppendVarint(buf, x) }
	flush := func() {
		if len(buf) > 1<<14 {
			h.Write(buf)
			buf = buf[:0]
		}
	}
	str("sluice-policy-v1")
	num(int64(len(s.nodes)))
	for i := range s.nodes {
		n := &s.nodes[i]
		if n.removed {
			str("(removed)")
			continue
		}
		str(n.cfg.Name)
		if w := n.cfg.weight(); w != 1 {
			str("weight") // only when set: versions of unweighted clusters stay as they were
			num(w)
		}
		num(int64(n.cfg.CPUs))
		num(n.cfg.MemoryMiB)
		num(int64(len(n.cfg.Features)))
		for _, f := range n.cfg.Features {
			str(f)
		}
		num(int64(len(n.capacity)))
		for _, v := range n.capacity {
			num(v)
		}
		num(int64(len(n.cfg.Devices.Devices)))
		for _, d := range n.cfg.Devices.Devices {
			num(int64(d.Index))
			str(d.Name)
			str(d.Type)
		}
		if s.graph != nil {
			num(int64(s.graph.LeafSwitchOf(i)))
			num(int64(s.graph.BlockOf(i)))
			num(int64(s.graph.DomainOf(i)))
		}
		flush()
	}
	for _, name := range s.reg.Names() {
		str(name)
	}
	for _, p := range s.parts {
		buf = hashValue(buf, reflect.ValueOf(p.cfg), 0)
		num(int64(p.nodes.Count()))
		for i := p.nodes.Next(0); i >= 0; i = p.nodes.Next(i + 1) {
			num(int64(i))
		}
		flush()
	}
	if g := s.graph; g != nil {
		str("topology")
		for k := range g.NumSwitches() {
			sw, _ := g.Switch(k)
			str(sw.Name)
			num(int64(sw.Parent))
		}
		for k := range g.NumBlocks() {
			b, _ := g.Block(k)
			str(b.Name)
		}
		for _, b := range g.BlockSizes() {
			num(int64(b))
		}
		for k := range g.NumDomains() {
			d, _ := g.Domain(k)
			str(d.Name)
		}
	}
	if p := s.prio; p != nil {
		str("priority")
		e := p.engine.Config()
		e.Registry = nil // the registry's names are hashed above
		buf = hashValue(buf, reflect.ValueOf(e), 0)
		c := p.cfg
		c.Engine = priority.Config{}
		num(boolInt(c.FairShare != nil)) // the source's data is usage, not policy
		c.FairShare = nil
		buf = hashValue(buf, reflect.ValueOf(c), 0)
	}
	if s.bf != nil {
		str("backfill")
		buf = hashValue(buf, reflect.ValueOf(s.bf.planner.Config()), 0)
	}
	if s.pol != nil {
		str("policy")
		buf = hashValue(buf, reflect.ValueOf(s.pol.p.Config()), 0)
		for _, r := range s.pol.resv.All() {
			buf = hashValue(buf, reflect.ValueOf(r), 0)
		}
	}
	h.Write(buf)
	sum := h.Sum(nil)
	return hex.EncodeToString(sum[:8])
}

// hashValue appends a deterministic encoding of v: struct fields in
// order (unexported ones too), map entries sorted by their encoded key,
// pointers followed, functions and channels only as set or not.
func hashValue(buf []byte, v reflect.Value, depth int) []byte {
	if depth > 16 {
		return append(buf, '~')
	}
	if v.Type() == typeTRESLimits && v.CanInterface() {
		// The limits, not how they were built (with or without names).
		l := v.Interface().(policy.TRESLimits)
		buf = binary.AppendUvarint(buf, uint64(l.Len()))
		for id, x := range l.All() {
			buf = binary.AppendVarint(binary.AppendVarint(buf, int64(id)), x)
		}
		return buf
	}
	if v.Type() == typeNodeSet && v.CanInterface() {
		// The members, not the set's capacity (which grows with the
		// cluster).
		ns := v.Interface().(topology.NodeSet)
		buf = binary.AppendUvarint(buf, uint64(ns.Count()))
		for i := ns.Next(0); i >= 0; i = ns.Next(i + 1) {
			buf = binary.AppendUvarint(buf, uint64(i))
		}
		return buf
	}
	switch v.Kind() {
	case reflect.Invalid:
		return append(buf, 0)
	case reflect.Bool:
		if v.Bool() {
			return append(buf, 1)
		}
		return append(buf, 2)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return binary.AppendVarint(buf, v.Int())
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return binary.AppendUvarint(buf, v.Uint())
	case reflect.Float32, reflect.Float64:
		return binary.LittleEndian.AppendUint64(buf, math.Float64bits(v.Float()))
	case reflect.String:
		buf = binary.AppendUvarint(buf, uint64(v.Len()))
		return append(buf, v.String()...)
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			return append(buf, 0)
		}
		return hashValue(append(buf, 1), v.Elem(), depth+1)
	case reflect.Func, reflect.Chan, reflect.UnsafePointer:
		if v.IsNil() {
			return append(buf, 0)
		}
		return append(buf, 1)
	case reflect.Slice, reflect.Array:
		buf = binary.AppendUvarint(buf, uint64(v.Len()))
		for i := range v.Len() {
			buf = hashValue(buf, v.Index(i), depth+1)
		}
		return buf
	case reflect.Struct:
		for i := range v.NumField() {
			buf = hashValue(buf, v.Field(i), depth+1)
		}
		return buf
	case reflect.Map:
		keys := make([][]byte, 0, v.Len())
		vals := map[string][]byte{}
		it := v.MapRange()
		for it.Next() {
			k := hashValue(nil, it.Key(), depth+1)
			keys = append(keys, k)
			vals[string(k)] = hashValue(nil, it.Value(), depth+1)
		}
		slices.SortFunc(keys, func(a, b []byte) int { return strings.Compare(string(a), string(b)) })
		buf = binary.AppendUvarint(buf, uint64(len(keys)))
		for _, k := range keys {
			buf = append(buf, k...)
			buf = append(buf, vals[string(k)]...)
		}
		return buf
	}
	return append(buf, '?')
}

func boolInt(b bool) int64 {
	if b {
		return 1
	}
	return 0
}
