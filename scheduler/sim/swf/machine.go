package swf

import (
	"errors"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/sluicehq/sluice/gres"
	"github.com/sluicehq/sluice/scheduler"
	"github.com/sluicehq/sluice/scheduler/sim"
)

// ErrMachine reports a Machine that cannot be built or a record that does
// not fit it.
var ErrMachine = errors.New("swf: invalid machine")

// DefaultPartition is the name of the single partition of a Machine's
// cluster when Machine.Partition is empty.
const DefaultPartition = "batch"

// Machine maps SWF processors onto a Sluice cluster. Two models:
//
//   - ProcsPerNode 0 or 1: the classic model of trace simulators, a pool of
//     processors. The cluster has Procs single-CPU nodes and a job of p
//     processors takes p of them (sbatch -N p -n p).
//   - ProcsPerNode k > 1: nodes of k CPUs allocated whole, as on machines
//     that do not share nodes. The cluster has Procs/k nodes and a job of p
//     processors takes ceil(p/k) whole nodes (sbatch -N ceil(p/k)
//     --exclusive), so its allocation may exceed p.
//
// The cluster has one partition with no time limit; every job's limit is
// its requested time. With GPUsPerNode g > 0 every node also has g GPUs
// and every job asks for all of them on each of its nodes (--gres=gpu:g):
// in the pool model each processor carries g GPUs (g = 1 reads the
// trace's processors as GPUs), so that a trace can be replayed with
// utilisation profiles (sim.WithProfiles) for goodput and energy.
type Machine struct {
	// Procs is the number of processors (MaxProcs of the header).
	Procs int64
	// ProcsPerNode is k above (0 means 1).
	ProcsPerNode int
	// Partition names the partition (default DefaultPartition).
	Partition string
	// Start is the time of the trace's second 0 (zero means the Unix
	// epoch; MachineFor uses the header's UnixStartTime).
	Start time.Time
	// GPUsPerNode is g above (0: no GPUs).
	GPUsPerNode int
}

// MaxGPUsPerNode is the largest Machine.GPUsPerNode.
const MaxGPUsPerNode = 1024

// MachineFor returns the machine a trace header describes (its MaxProcs,
// or MaxNodes when only that is given, and its UnixStartTime), with nodes
// of procsPerNode processors. procs > 0 overrides the header's size.
func MachineFor(h Header, procs int64, procsPerNode int) (Machine, error) {
	if procs == 0 {
		procs = h.Procs()
	}
	m := Machine{Procs: procs, ProcsPerNode: procsPerNode, Start: h.Start()}
	if procs == 0 {
		return m, fmt.Errorf("%w: the header gives neither MaxProcs nor MaxNodes; give the machine size", ErrMachine)
	}
	return m, m.Validate()
}

// Validate checks the machine.
func (m Machine) Validate() error {
	k := m.perNode()
	switch {
	case m.Procs < 1 || m.Procs > MaxProcsValue:
		return fmt.Errorf("%w: Procs %d out of range [1, %d]", ErrMachine, m.Procs, MaxProcsValue)
	case m.ProcsPerNode < 0 || m.ProcsPerNode > 1<<20:
		return fmt.Errorf("%w: ProcsPerNode %d out of range [0, 2^20]", ErrMachine, m.ProcsPerNode)
	case m.GPUsPerNode < 0 || m.GPUsPerNode > MaxGPUsPerNode:
		return fmt.Errorf("%w: GPUsPerNode %d out of range [0, %d]", ErrMachine, m.GPUsPerNode, MaxGPUsPerNode)
	case m.Procs%k != 0:
		return fmt.Errorf("%w: Procs %d is not a multiple of ProcsPerNode %d", ErrMachine, m.Procs, k)
	case m.Procs/k > scheduler.MaxNodesPerJob:
		return fmt.Errorf("%w: %d nodes of %d processors, more than %d", ErrMachine, m.Procs/k, k, scheduler.MaxNodesPerJob)
	}
	return nil
}

// Nodes returns the node count of the machine's cluster.
func (m Machine) Nodes() int { return int(m.Procs / m.perNode()) }

// perNode returns the processors per node: ProcsPerNode, 0 counting as 1.
func (m Machine) perNode() int64 { return int64(max(m.ProcsPerNode, 1)) }

func (m Machine) partition() string {
	if m.Partition == "" {
		return DefaultPartition
	}
	return m.Partition
}

// Config returns the scheduler configuration of the machine's cluster:
// Nodes() nodes named n00000, n00001 … of ProcsPerNode CPUs (no memory;
// GPUsPerNode count-only GPUs, gres/gpu) in one default partition without time limits, forgetting finished
// jobs after sim.PurgeAge (MinJobAge).
func (m Machine) Config() (scheduler.Config, error) {
	if err := m.Validate(); err != nil {
		return scheduler.Config{}, err
	}
	n := m.Nodes()
	cfg := scheduler.Config{Nodes: make([]scheduler.NodeConfig, n)}
	for i := range cfg.Nodes {
		cfg.Nodes[i] = scheduler.NodeConfig{Name: fmt.Sprintf("n%05d", i), CPUs: int(m.perNode()), GRES: m.gpus()}
	}
	cfg.Partitions = []scheduler.PartitionConfig{{Name: m.partition(), Default: true}}
	cfg.MinJobAge = sim.PurgeAge
	return cfg, nil
}

// Job returns the simulator job of a cleaned record: submitted at
// Start + Submit seconds, running Run seconds, with a time limit of
// ReqTime seconds (the user's estimate) and Procs processors mapped as
// the Machine documents. User and Account are "u<user ID>" and "g<group
// ID>" when known. The status field says how the job ended, per the
// Standard Workload Format definition: 1 completed, 0 failed, 5 cancelled,
// -1 unknown (a trace that does not record it, such as NASA-iPSC, and
// every model). Status 1 replays with exit code 0 (COMPLETED when it ends
// before its limit); -1 also with exit code 0 and Job.ExitUnknown set, so
// that the simulator counts it as unknown (Summary.Unknown), neither
// completed nor failed; any other status with exit code 1 (FAILED when it
// ends before its limit). The record is kept in Job.Data (a *Record) for
// the Writer.
func (m Machine) Job(rec Record) (sim.Job, error) { return m.job(rec, nil) }

// job is Job, taking the user and account names from names (nil: format
// them).
func (m Machine) job(rec Record, names *idNames) (sim.Job, error) {
	switch {
	case rec.Procs < 1:
		return sim.Job{}, fmt.Errorf("%w: line %d: job %d has %d processors (read it with a Reader, which cleans records)", ErrMachine, rec.Line, rec.Job, rec.Procs)
	case rec.Procs > m.Procs:
		return sim.Job{}, fmt.Errorf("%w: line %d: job %d needs %d processors, the machine has %d", ErrMachine, rec.Line, rec.Job, rec.Procs, m.Procs)
	case rec.Submit < 0 || rec.Submit > MaxSeconds:
		return sim.Job{}, fmt.Errorf("%w: line %d: job %d: submit time %d out of range", ErrMachine, rec.Line, rec.Job, rec.Submit)
	case rec.Run < 1 || rec.Run > MaxSeconds:
		return sim.Job{}, fmt.Errorf("%w: line %d: job %d: run time %d out of range", ErrMachine, rec.Line, rec.Job, rec.Run)
	case rec.ReqTime < 1 || rec.ReqTime > MaxSeconds:
		return sim.Job{}, fmt.Errorf("%w: line %d: job %d: requested time %d out of range", ErrMachine, rec.Line, rec.Job, rec.ReqTime)
	}
	spec := scheduler.JobSpec{
		Name:        strconv.FormatInt(rec.Job, 10),
		Partition:   m.partition(),
		TimeLimit:   time.Duration(rec.ReqTime) * time.Second,
		GRESPerNode: m.gpus(),
	}
	if k := m.perNode(); k == 1 {
		spec.Nodes = int(rec.Procs)
	} else {
		spec.Nodes = int((rec.Procs + k - 1) / k)
		spec.Exclusive = true
	}
	if rec.User >= 0 {
		spec.User = names.user(rec.User)
	}
	if rec.Group >= 0 {
		spec.Account = names.group(rec.Group)
	}
	j := sim.Job{
		Spec:    spec,
		Submit:  m.start().Add(time.Duration(rec.Submit) * time.Second),
		Runtime: time.Duration(rec.Run) * time.Second,
	}
	switch rec.Status {
	case 1:
	case -1:
		j.ExitUnknown = true
	default:
		j.ExitCode = 1
	}
	j.Data = &rec // rec is the caller's copy
	return j, nil
}

// gpus returns the GPU request of every node and job: GPUsPerNode GPUs
// (nil without GPUs). Each call returns a new slice.
func (m Machine) gpus() []gres.Request {
	if m.GPUsPerNode == 0 {
		return nil
	}
	return []gres.Request{{Name: "gpu", Count: int64(m.GPUsPerNode)}}
}

func (m Machine) start() time.Time { return epochIfZero(m.Start) }

// Source returns a sim.Source that streams the cleaned records of rd as
// jobs of machine m. Read errors (and, with Options.Strict, dropped lines)
// stop the simulation.
func Source(rd *Reader, m Machine) sim.Source { return &source{rd: rd, m: m} }

type source struct {
	rd    *Reader
	m     Machine
	names idNames
}

// maxNames bounds each map of idNames, so that a trace with ever new IDs
// still streams in constant memory.
const maxNames = 4096

// idNames remembers the "u<user ID>" and "g<group ID>" names made so far,
// so that the jobs of one user share one string rather than each
// formatting its own (strings are immutable: sharing one is safe). Up to
// maxNames of each are kept; other IDs are formatted every time.
type idNames struct {
	users, groups map[int64]string
}

// user returns "u<id>"; a nil n formats it without caching.
func (n *idNames) user(id int64) string {
	if n == nil {
		return "u" + strconv.FormatInt(id, 10)
	}
	return cachedName(&n.users, "u", id)
}

// group returns "g<id>"; a nil n formats it without caching.
func (n *idNames) group(id int64) string {
	if n == nil {
		return "g" + strconv.FormatInt(id, 10)
	}
	return cachedName(&n.groups, "g", id)
}

// cachedName returns prefix followed by id in decimal, from *cache, or
// made and added to it while it holds fewer than maxNames.
func cachedName(cache *map[int64]string, prefix string, id int64) string {
	if s, ok := (*cache)[id]; ok {
		return s
	}
	s := prefix + strconv.FormatInt(id, 10)
	if *cache == nil {
		*cache = make(map[int64]string)
	}
	if len(*cache) < maxNames {
		(*cache)[id] = s
	}
	return s
}

// Next reads the next cleaned record and maps it onto the machine.
func (s *source) Next() (sim.Job, bool, error) {
	rec, err := s.rd.Read()
	if err == io.EOF {
		return sim.Job{}, false, nil
	}
	if err != nil {
		return sim.Job{}, false, err
	}
	j, err := s.m.job(rec, &s.names)
	if err != nil {
		return sim.Job{}, false, err
	}
	return j, true, nil
}
