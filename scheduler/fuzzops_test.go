package scheduler

import (
	"fmt"
	"math/rand/v2"
	"os"
	"runtime/debug"
	"strings"
	"time"

	"github.com/sluicehq/sluice/gres"
	"github.com/sluicehq/sluice/policy"
	"github.com/sluicehq/sluice/topology"
)

// This file holds FuzzScheduler's events: fzSource turns fuzz input (or a
// seeded PRNG) into draws, fzGen draws events — mostly valid, some hostile
// (negative, zero, huge and sub-second values, unknown IDs and names, time
// going backwards, names with separators) — and fzOp is one event as data,
// so that a failing sequence can be replayed, shrunk and printed as Go.

// fzSource yields the draws that drive a run: the fuzz input's bytes (then
// zeros, once exhausted), or, with rng set, an endless seeded stream.
type fzSource struct {
	data []byte
	pos  int
	rng  *rand.Rand
}

func (s *fzSource) byte() byte {
	if s.rng != nil {
		return byte(s.rng.Uint32())
	}
	s.pos++
	if s.pos <= len(s.data) {
		return s.data[s.pos-1]
	}
	return 0
}

// exhausted reports whether a byte source has given all its input.
func (s *fzSource) exhausted() bool { return s.rng == nil && s.pos >= len(s.data) }

// intn returns a draw in [0, n).
func (s *fzSource) intn(n int) int {
	if n <= 1 {
		return 0
	}
	if n <= 256 {
		return int(s.byte()) % n
	}
	v := int(s.byte()) | int(s.byte())<<8 | int(s.byte())<<16
	return v % n
}

// chance reports true with probability about 1/n.
func (s *fzSource) chance(n int) bool { return s.intn(n) == 0 }

func fzPick[T any](s *fzSource, xs ...T) T { return xs[s.intn(len(xs))] }

// fzKind is an event kind.
type fzKind uint8

const (
	fkSchedule fzKind = iota
	fkSubmit
	fkSubmitArray
	fkCancel
	fkFinish
	fkRequeue
	fkCheckpoint
	fkDrain
	fkFail
	fkResume
	fkDown
	fkHealth
	fkAddResv
	fkRemoveResv
	fkExplain
	fkIdle
	fkRequeueRecord
	fkHold
	fkRelease
	fkUpdateJob
	fkSuspendJob
	fkResumeJob
	fkRequeueJob
	fkAddPart
	fkUpdatePart
	fkRemovePart
	fkAddQOS
	fkUpdateQOS
	fkRemoveQOS
	fkPutAssoc
	fkRemoveAssoc
	fkAddNode
	fkRemoveNode
	fkUpdateNode
	fkPowerDown
	fkPowerUp
	fkPoweredUp
	fkReboot
	fkRebooted
	fkTelemetry
	fkSetTelemetry
	fkCount
)

var fzKindNames = [fkCount]string{"Schedule", "Submit", "SubmitArray", "Cancel", "Finish", "Requeue", "Checkpoint",
	"DrainNode", "FailNode", "ResumeNode", "DownNode", "SetDeviceHealth", "AddReservation", "RemoveReservation",
	"Explain", "IdleCapacity", "RequeueRecord", "Hold", "Release", "UpdateJob", "SuspendJob", "ResumeJob", "RequeueJob",
	"AddPartition", "UpdatePartition", "RemovePartition", "AddQOS", "UpdateQOS", "RemoveQOS", "PutAssoc", "RemoveAssoc",
	"AddNode", "RemoveNode", "UpdateNode",
	"PowerDownNode", "PowerUpNode", "NodePoweredUp", "RebootNode", "NodeRebooted", "Telemetry", "SetTelemetry"}

func (k fzKind) String() string { return fzKindNames[k] }

// readOnly reports whether events of kind k must leave the state as it was.
func (k fzKind) readOnly() bool { return k == fkExplain || k == fkIdle || k == fkRequeueRecord }

// fzResv is a reservation request as data (its node set by indices).
type fzResv struct {
	Name                 string
	Start, End, Duration time.Duration // Start and End relative to fzEpoch; End 0: unset
	NodeSetLen           int
	Nodes                []int
	NodeCount            int
	Users, Accounts      []string
	Flags                policy.ResvFlags
}

func (r fzResv) reservation() policy.Reservation {
	out := policy.Reservation{Name: r.Name, Start: fzEpoch.Add(r.Start), Duration: r.Duration, NodeCount: r.NodeCount,
		Users: r.Users, Accounts: r.Accounts, Flags: r.Flags}
	if r.End != 0 {
		out.End = fzEpoch.Add(r.End)
	}
	if r.NodeSetLen > 0 {
		out.Nodes = topology.NodeSetOf(r.NodeSetLen, r.Nodes...)
	}
	return out
}

// fzOp is one event: its kind, its time (relative to fzEpoch) and its
// arguments.
type fzOp struct {
	Kind    fzKind
	At      time.Duration
	Spec    JobSpec
	Array   string
	ID      JobID
	Node    string
	Reason  string
	Index   int
	Healthy bool
	Exit    int
	Resv    fzResv
	Counter bool
	Frac    float64
	// Job control: Hold's and Release's admin, RequeueJob's hold (Flag),
	// Requeue's failed nodes, UpdateJob's update.
	Flag   bool
	Nodes  []string
	Update JobUpdate
	// Part, QOS and Assoc are the administration events' arguments
	// (fzadmin_test.go); Resv.Name names what a removal removes.
	Part  PartitionConfig
	QOS   policy.QOS
	Assoc policy.Assoc
	// NodeCfg, Parts and SetParts are an AddNode's or UpdateNode's node
	// (named Node) and partitions; SetParts on an AddNode adds the node
	// powered down.
	NodeCfg  fzNode
	Parts    []string
	SetParts bool
	// Tel and TelCfg are a telemetry event and a telemetry
	// configuration (fztel_test.go).
	Tel    TelemetryEvent
	TelCfg TelemetryConfig
}

// nodeConfig is the op's node as a NodeConfig.
func (op fzOp) nodeConfig() (NodeConfig, error) {
	return fzNodeConfig(op.Node, op.NodeCfg)
}

// fzGen draws events against the state a run has seen: the IDs it was
// given, the reservations it made, the time of its last successful event.
type fzGen struct {
	src   *fzSource
	c     fzCluster
	ids   []JobID
	resvs []string
	last  time.Duration
	gpus  int // most GPUs on a node
	// held and stopped are the jobs job control last tried to hold and
	// suspend: releases and resumes favour them.
	held, stopped []JobID
	// started lists the jobs cycles started (fzRun.step fills it).
	started []JobID
	// reads counts the telemetry events drawn (their counters rise by it);
	// startedOn lists the first node (index) of each start, where the
	// readings mostly go.
	reads     int
	startedOn []int
	// noTelemetry leaves telemetry out of the draw (and the draw's
	// randomness as it was before telemetry ops existed).
	noTelemetry bool
}

func newFzGen(src *fzSource, c fzCluster) *fzGen {
	g := &fzGen{src: src, c: c}
	for _, n := range c.Nodes {
		g.gpus = max(g.gpus, n.Sockets*n.GPUsPerSocket)
	}
	return g
}

// at draws an event time: mostly forward by zero, sub-second, seconds,
// minutes or hours; sometimes backwards.
func (g *fzGen) at() time.Duration {
	s := g.src
	switch k := s.intn(100); {
	case k < 20:
		return g.last
	case k < 30:
		return g.last + time.Duration(1+s.intn(999_999_999))
	case k < 68:
		return g.last + time.Duration(1+s.intn(120))*time.Second
	case k < 88:
		return g.last + time.Duration(1+s.intn(120))*time.Minute + time.Duration(s.intn(60))*time.Second
	case k < 97:
		return g.last + time.Duration(1+s.intn(48))*time.Hour + time.Duration(s.intn(3600))*time.Second
	}
	return g.last - time.Duration(1+s.intn(3_600_000))*time.Millisecond
}

// id draws a job ID: mostly one the run was given, sometimes unknown.
func (g *fzGen) id() JobID {
	s := g.src
	if len(g.ids) > 0 && !s.chance(8) {
		if s.chance(2) { // favour recent jobs
			return g.ids[len(g.ids)-1-s.intn(min(len(g.ids), 8))]
		}
		return g.ids[s.intn(len(g.ids))]
	}
	var next JobID = 1
	if len(g.ids) > 0 {
		next = g.ids[len(g.ids)-1] + 1
	}
	return fzPick(s, 0, next, next+7, 1<<40, ^JobID(0))
}

// node draws a node name, sometimes unknown or with separators.
func (g *fzGen) node() string {
	s := g.src
	if !s.chance(10) {
		// Sometimes one the run may have added.
		return fzNodeName(s.intn(len(g.c.Nodes) + 2))
	}
	return fzPick(s, "", "nope", "n0,n1", "n0 ", "n0:1", "N0")
}

// parts draws a partition list: known names, sometimes an unknown one.
func (g *fzGen) parts() []string {
	s := g.src
	var out []string
	for k := range g.c.Parts {
		if s.chance(2) {
			out = append(out, fmt.Sprintf("p%d", k))
		}
	}
	if s.chance(15) {
		out = append(out, "nope")
	}
	return out
}

// name draws a user or account name, sometimes hostile.
func (g *fzGen) name(valid ...string) string {
	s := g.src
	if !s.chance(12) {
		return valid[s.intn(len(valid))]
	}
	return fzPick(s, "", "a:b", "a,b", "a b", "a/b", "-ann", strings.Repeat("x", 300))
}

// duration draws a time limit: zero, minutes, odd seconds, or hostile
// (sub-second, negative, huge).
func (g *fzGen) duration() time.Duration {
	s := g.src
	switch k := s.intn(40); {
	case k < 6:
		return 0
	case k < 24:
		return time.Duration(1+s.intn(600)) * time.Minute
	case k < 36:
		return time.Duration(37+s.intn(7200)) * time.Second
	case k < 37:
		return time.Duration(1 + s.intn(999_999_999))
	case k < 38:
		return -time.Duration(1+s.intn(3600)) * time.Second
	case k < 39:
		return MaxTimeLimit + time.Second
	}
	return 1<<62 + time.Duration(s.intn(1000))
}

// gres draws a GRES request list: mostly gpus of a node's types, sometimes
// hostile names (with separators, unknown, upper case) and counts.
func (g *fzGen) gres(maxCount int) []gres.Request {
	s := g.src
	n := 1
	if s.chance(6) {
		n = 2
	}
	var out []gres.Request
	for range n {
		q := gres.Request{Name: "gpu", Count: int64(1 + s.intn(max(maxCount, 1)))}
		if s.chance(2) {
			q.Type = fzPick(s, fzGPUTypes...)
		}
		if s.chance(10) {
			q.Name = fzPick(s, "shard", "gpu:a100", "gpu:h100", "gpu,shard", "", "GPU", "mps", "gpu/a100")
		}
		if s.chance(12) {
			q.Type = fzPick(s, "v100", "a100:2", "h100,x", "2", "A100")
		}
		if s.chance(12) {
			q.Count = fzPick[int64](s, 0, -1, 1<<40, gres.MaxCount+1, 1<<62)
		}
		out = append(out, q)
	}
	return out
}

// spec draws a job request.
func (g *fzGen) spec() JobSpec {
	s := g.src
	var sp JobSpec
	sp.User = g.name("ann", "bob", "cy")
	sp.Account = g.name("", "acct1", "acct2")
	if s.chance(3) {
		sp.Partition = fmt.Sprintf("p%d", s.intn(len(g.c.Parts)))
	} else if s.chance(15) {
		sp.Partition = fzPick(s, "nope", "p0,p1", "p0:x", "P0")
	}
	if s.chance(3) {
		sp.QOS = fzPick(s, fzQOS...)
	} else if s.chance(20) {
		sp.QOS = fzPick(s, "nope", "high,low", "")
	}
	switch k := s.intn(20); {
	case k < 14:
	case k < 18:
		sp.Nodes = 1 + s.intn(len(g.c.Nodes)+1)
	default:
		sp.Nodes = fzPick(s, -1, 0, 1000, MaxNodesPerJob+1)
	}
	if s.chance(4) {
		sp.Tasks = 1 + s.intn(8)
	} else if s.chance(40) {
		sp.Tasks = fzPick(s, -3, MaxTasksPerJob+1)
	}
	if s.chance(6) {
		// Tasks without a node count, -N min-max, --ntasks-per-node,
		// --ntasks-per-socket.
		sp.Tasks = 1 + s.intn(40)
		if s.chance(3) {
			sp.NodesMax = fzPick(s, 1, 2, 4, len(g.c.Nodes), -1, MaxNodesPerJob+1)
		}
		if s.chance(3) {
			sp.TasksPerNode = fzPick(s, 1, 2, 8, -1)
		}
		if s.chance(6) {
			sp.TasksPerSocket = fzPick(s, 1, 4, -2)
		}
	}
	if s.chance(10) {
		sp.MemPerCPUMiB = fzPick[int64](s, 100, 2048, -1)
	}
	if s.chance(2) {
		sp.CPUsPerTask = 1 + s.intn(6)
	} else if s.chance(30) {
		sp.CPUsPerTask = fzPick(s, -1, 1<<20, 1<<40)
	}
	switch k := s.intn(20); {
	case k < 10:
	case k < 18:
		sp.MemPerNodeMiB = int64(1 + s.intn(16*1024))
	default:
		sp.MemPerNodeMiB = fzPick[int64](s, -1, 1<<62, gres.MaxCount)
	}
	switch k := s.intn(12); {
	case k < 5:
		sp.GRESPerNode = g.gres(g.gpus)
	case k < 6:
		sp.GRESPerTask = g.gres(2)
		if sp.Tasks == 0 {
			sp.Tasks = 1 + s.intn(4)
		}
	case k < 7:
		sp.GRESPerJob = g.gres(g.gpus * 2)
	}
	if s.chance(10) {
		sp.CPUsPerGPU = fzPick(s, 1, 2, -1)
	}
	if s.chance(12) {
		sp.MemPerGPUMiB = fzPick[int64](s, 512, 4096, -5)
	}
	if s.chance(8) {
		sp.GPUsPerSocket = fzPick(s, 1, 2, 1, -1)
		sp.SocketsPerNode = fzPick(s, 0, 1, 2, 3, -2)
		if len(sp.GRESPerNode) == 0 && s.chance(2) {
			sp.GRESPerNode = []gres.Request{{Name: "gpu", Count: int64(max(sp.GPUsPerSocket, 1) * max(sp.SocketsPerNode, 1))}}
		}
	}
	sp.EnforceBinding = s.chance(10)
	sp.TimeLimit = g.duration()
	if s.chance(8) {
		sp.TimeMin = fzPick(s, sp.TimeLimit/2, time.Duration(1+s.intn(999_999_999)), -time.Second, sp.TimeLimit+time.Hour)
	}
	if s.chance(10) {
		sp.BeginTime = fzEpoch.Add(g.last + time.Duration(s.intn(7200)-1800)*time.Second + time.Duration(s.intn(1000))*time.Millisecond)
	}
	sp.Exclusive = s.chance(10)
	sp.Requeue = fzPick(s, RequeueDefault, RequeueYes, RequeueNo, RequeueDefault, RequeueMode(7))
	if s.chance(10) {
		sp.CheckpointInterval = fzPick(s, time.Minute, 17*time.Second, -time.Second, time.Nanosecond)
	}
	if s.chance(25) {
		sp.Switches, sp.SwitchesMaxWait = fzPick(s, 1, 2, -1), fzPick(s, 0, time.Minute, -time.Second)
	}
	if s.chance(30) {
		sp.Segment = fzPick(s, 1, 2, -1)
	}
	if s.chance(8) {
		if len(g.resvs) > 0 && s.chance(2) {
			sp.Reservation = g.resvs[s.intn(len(g.resvs))]
		} else {
			sp.Reservation = fzPick(s, "r0", "r1", "nope", "r0,r1", "")
		}
	}
	if s.chance(6) {
		a, b := g.id(), g.id()
		sp.Dependency = fzPick(s, fmt.Sprintf("afterok:%d", a), fmt.Sprintf("afterany:%d:%d", a, b),
			fmt.Sprintf("afternotok:%d", a), fmt.Sprintf("after:%d+5", a), "singleton",
			fmt.Sprintf("afterok:%d?afterany:%d", a, b), "afterok:", "afterok:-1", "bogus:1", fmt.Sprintf("aftercorr:%d", a))
	}
	if s.chance(10) {
		sp.Nice = fzPick(s, 100, -100, 2147483645, 2147483646, -(1 << 40))
	}
	if s.chance(30) {
		sp.NVLinkDomain = topology.DomainMode(s.intn(5))
	}
	if s.chance(5) {
		sp.Name = fzPick(s, "train", "train", "a:b,c", "")
	}
	sp.Hold = s.chance(25)
	if s.chance(20) {
		sp.Exclude = []string{g.node()}
	}
	if s.chance(15) {
		sp.NodeList = g.node()
		if s.chance(3) {
			sp.NodeList += "," + g.node() // more nodes than -N, or than the tasks
		}
	}
	if s.chance(15) {
		sp.Constraint = fzPick(s, "f0", "f0|f1", "[f0|f1]", "f1*1", "[f0*1&f1*1]", "f0&", "nope",
			"f2", "f3&f0", "f2|f3", "[f2|f0]", "f3*1") // f2, f3: changeable (fzNode.nodeConfig)
	}
	sp.Contiguous = s.chance(10)
	if s.chance(12) {
		// -m plane=<size> deals tasks in blocks; the rest do not change
		// the allocation; PlaneSize 0 with plane is invalid.
		sp.Distribution = fzPick(s, Distribution{Node: DistPlane, PlaneSize: 1 + s.intn(4)}, Distribution{Node: DistBlock},
			Distribution{Node: DistCyclic, Pack: Pack}, Distribution{Node: DistPlane})
	}
	sp.OverSubscribe = s.chance(3) // drawn last: earlier draws keep their meaning
	return sp
}

// update draws a job update: one to three fields, mostly valid values.
func (g *fzGen) update() JobUpdate {
	s := g.src
	var u JobUpdate
	for range 1 + s.intn(3) {
		switch s.intn(11) {
		case 0, 1:
			d := g.duration()
			u.TimeLimit = &d
		case 2:
			d := fzPick(s, 0, time.Minute, time.Duration(1+s.intn(999_999_999)), -time.Second)
			u.TimeMin = &d
		case 3:
			n := fzPick(s, 0, 100, -100, 1<<40)
			u.Nice = &n
		case 4:
			p := fzPick(s, "p0", "p1", "p2", "nope", "")
			u.Partition = &p
		case 5:
			q := fzPick(s, append([]string{"nope", ""}, fzQOS...)...)
			u.QOS = &q
		case 6:
			a := g.name("", "acct1", "acct2")
			u.Account = &a
		case 7:
			d := fzPick(s, "", fmt.Sprintf("afterok:%d", g.id()), "singleton", "bogus:1")
			u.Dependency = &d
		case 8:
			t := fzPick(s, time.Time{}, fzEpoch.Add(g.last+time.Duration(s.intn(7200)-1800)*time.Second))
			u.BeginTime = &t
		case 9:
			p := fzPick[uint32](s, 0, 1, 1000, 1<<31)
			u.Priority = &p
		default:
			u.ResetPriority = true
		}
	}
	return u
}

// resv draws a reservation.
func (g *fzGen) resv() fzResv {
	s := g.src
	nn := len(g.c.Nodes)
	r := fzResv{Name: fzPick(s, "r0", "r1", "r2", "r3")}
	if s.chance(12) {
		r.Name = fzPick(s, "", "r:1", "r,2", "r 3")
	}
	r.Start = g.last + time.Duration(s.intn(5*3600)-3600)*time.Second
	if s.chance(6) {
		r.Start += time.Duration(1 + s.intn(999_999_999))
	}
	r.Duration = time.Duration(10+s.intn(360)) * time.Minute
	if s.chance(10) {
		r.Duration = fzPick(s, 0, -time.Second, time.Nanosecond, 1<<62, 40*24*time.Hour)
	}
	if s.chance(12) {
		r.End = r.Start + fzPick(s, time.Hour, -time.Hour, 0)
	}
	if s.chance(2) {
		r.NodeSetLen = nn
		if s.chance(15) {
			r.NodeSetLen = nn + 3
		}
		for k := range r.NodeSetLen {
			if s.chance(2) {
				r.Nodes = append(r.Nodes, k)
			}
		}
	} else {
		r.NodeCount = 1 + s.intn(nn)
		if s.chance(10) {
			r.NodeCount = fzPick(s, 0, -1, 100)
		}
	}
	switch s.intn(8) {
	case 0:
		r.Accounts = []string{"acct1"}
	case 1:
	case 2:
		r.Users = []string{"-ann"}
	default:
		r.Users = []string{fzPick(s, "ann", "bob", "cy")}
	}
	for _, f := range []policy.ResvFlags{policy.ResvMaint, policy.ResvIgnoreJobs, policy.ResvFlex, policy.ResvMagnetic,
		policy.ResvOverlap, policy.ResvDaily, policy.ResvReplace} {
		if s.chance(6) {
			r.Flags |= f
		}
	}
	if s.chance(40) {
		r.Flags |= 1 << 30
	}
	return r
}

// next draws the next event.
func (g *fzGen) next() fzOp {
	s := g.src
	op := fzOp{At: g.at()}
	if s.chance(10) {
		return g.admin(op)
	}
	switch k := s.intn(100); {
	case k < 20:
		op.Kind = fkSchedule
	case k < 45:
		op.Kind, op.Spec = fkSubmit, g.spec()
	case k < 49:
		op.Kind, op.Spec = fkSubmitArray, g.spec()
		op.Array = fzPick(s, "0-3", "0-7%2", "1,3,5", "0-31:4", "2", "-1", "0-2000", "", "3-1", "0-3%0", "a", "0-3%")
	case k < 59:
		op.Kind, op.ID, op.Exit = fkFinish, g.id(), fzPick(s, 0, 0, 1, -1, 255, 1<<20)
	case k < 64:
		op.Kind, op.ID = fkCancel, g.id()
	case k < 68:
		op.Kind, op.ID = fkRequeue, g.id()
	case k < 70:
		op.Kind, op.ID = fkCheckpoint, g.id()
	case k < 73:
		op.Kind, op.Node, op.Reason = fkDrain, g.node(), fzPick(s, "maint", "", "a:b,c")
	case k < 75:
		op.Kind, op.Node, op.Reason = fkFail, g.node(), "bad dimm"
	case k < 80:
		op.Kind, op.Node = fkResume, g.node()
	case k < 82:
		op.Kind, op.Node, op.Reason = fkDown, g.node(), "not responding"
	case k < 88:
		op.Kind, op.Node, op.Healthy, op.Reason = fkHealth, g.node(), s.chance(3), "xid 79"
		op.Index = s.intn(g.gpus+2) - 1
		if s.chance(20) {
			op.Index = fzPick(s, 1<<20, gres.MaxDeviceIndex+1, -1<<40)
		}
	case k < 91:
		op.Kind, op.Resv = fkAddResv, g.resv()
	case k < 93:
		op.Kind = fkRemoveResv
		op.Resv.Name = fzPick(s, "r0", "r1", "r2", "r3", "nope", "")
	case k < 97:
		op.Kind, op.ID, op.Counter = fkExplain, g.id(), s.chance(3)
		op.Frac = fzPick(s, 0, 0, 0.5, 1, -1, 2)
	case k < 99:
		op.Kind = fkIdle
	default:
		op.Kind, op.ID = fkRequeueRecord, g.id()
	}
	if s.chance(7) {
		// Job control, about one event in seven.
		op.ID, op.Flag = g.id(), s.chance(2)
		recent := func(ids []JobID) {
			if len(ids) > 0 && !s.chance(4) {
				op.ID = ids[len(ids)-1-s.intn(min(len(ids), 4))]
			}
		}
		if s.chance(2) {
			recent(g.started)
		}
		switch s.intn(12) {
		case 0, 1, 2:
			op.Kind = fkHold
			g.held = append(g.held, op.ID)
		case 3, 4, 5:
			op.Kind = fkRelease
			recent(g.held)
		case 6, 7:
			op.Kind, op.Update = fkUpdateJob, g.update()
		case 8:
			op.Kind = fkSuspendJob
			g.stopped = append(g.stopped, op.ID)
		case 9:
			op.Kind = fkResumeJob
			recent(g.stopped)
		case 10:
			op.Kind = fkRequeueJob
		default:
			op.Kind, op.Nodes = fkRequeue, []string{g.node()}
		}
	}
	if s.chance(12) {
		// Node administration, drawn apart so that the other events keep
		// their share.
		op.Node, op.NodeCfg = g.node(), fzGenNode(s)
		if s.chance(20) {
			op.NodeCfg.Sockets = fzPick(s, 0, -1)
		}
		if s.chance(25) {
			op.NodeCfg.GPUType = fzPick(s, "v100", "h200")
		}
		switch s.intn(8) {
		case 6:
			op.Kind = fkReboot
			op.Parts = fzPick(s, []string(nil), []string{"f2"}, []string{"f3"}, []string{"f0"})
		case 7:
			op.Kind = fkRebooted
		case 0:
			op.Kind, op.Parts = fkAddNode, g.parts()
			op.SetParts = s.chance(4) // powered down
		case 1:
			op.Kind = fkRemoveNode
		case 2:
			op.Kind = fkPowerDown
		case 3:
			op.Kind = fkPowerUp
		case 4:
			op.Kind = fkPoweredUp
		default:
			op.Kind, op.SetParts = fkUpdateNode, s.chance(2)
			if op.SetParts {
				op.Parts = g.parts()
			}
		}
	}
	if !g.noTelemetry && s.chance(9) {
		// Telemetry, drawn apart as node administration is.
		g.telemetry(&op)
	}
	return op
}

// fzResult is what one call returned: its result as text, the cycle of
// a Schedule, the IDs a submission was given, its error, and whether it
// panicked (the panic's message then is err).
type fzResult struct {
	res      string
	cyc      *Cycle
	ids      []JobID
	err      error
	panicked bool
}

// fzCall applies op to s. A panic is returned in the result, not
// propagated.
func fzCall(s *Scheduler, op fzOp) (out fzResult) {
	defer func() {
		if p := recover(); p != nil {
			if os.Getenv("SLUICE_FUZZ_STACK") != "" {
				fmt.Fprintf(os.Stderr, "panic: %v\n%s\n", p, debug.Stack())
			}
			out = fzResult{err: fmt.Errorf("panic: %v", p), panicked: true}
		}
	}()
	now := fzEpoch.Add(op.At)
	var err error
	switch op.Kind {
	case fkSchedule:
		var c Cycle
		c, err = s.Schedule(now)
		if err == nil {
			out.res, out.cyc = fzCycleDigest(c), &c
		}
	case fkSubmit:
		var id JobID
		id, err = s.Submit(now, op.Spec)
		if err == nil {
			out.ids = []JobID{id}
		}
		out.res = fmt.Sprint(id)
	case fkSubmitArray:
		out.ids, err = s.SubmitArray(now, op.Spec, op.Array)
		out.res = fmt.Sprint(out.ids)
	case fkCancel:
		err = s.Cancel(now, op.ID)
	case fkFinish:
		err = s.Finish(now, op.ID, op.Exit)
	case fkRequeue:
		if len(op.Nodes) > 0 {
			err = s.RequeueExcluding(now, op.ID, op.Nodes...)
		} else {
			err = s.Requeue(now, op.ID)
		}
	case fkHold:
		err = s.Hold(now, op.ID, op.Flag)
	case fkRelease:
		if op.Flag {
			err = s.Release(now, op.ID)
		} else {
			err = s.UserRelease(now, op.ID)
		}
	case fkUpdateJob:
		err = s.UpdateJob(now, op.ID, op.Update)
	case fkSuspendJob:
		err = s.SuspendJob(now, op.ID)
	case fkResumeJob:
		err = s.ResumeJob(now, op.ID)
	case fkRequeueJob:
		err = s.RequeueJob(now, op.ID, op.Flag)
	case fkCheckpoint:
		err = s.Checkpoint(now, op.ID)
	case fkDrain:
		err = s.DrainNode(now, op.Node, op.Reason)
	case fkFail:
		err = s.FailNode(now, op.Node, op.Reason)
	case fkResume:
		err = s.ResumeNode(now, op.Node)
	case fkDown:
		var ids []JobID
		ids, err = s.DownNode(now, op.Node, op.Reason)
		out.res = fmt.Sprint(ids)
	case fkHealth:
		err = s.SetDeviceHealth(now, op.Node, op.Index, op.Healthy, op.Reason)
	case fkAddResv:
		err = s.AddReservation(now, op.Resv.reservation())
	case fkRemoveResv:
		err = s.RemoveReservation(now, op.Resv.Name)
	case fkExplain:
		var e Explanation
		e, err = s.Explain(now, op.ID, ExplainOptions{Counterfactuals: op.Counter, RuntimeFraction: op.Frac})
		if err == nil {
			out.res = e.String()
		}
	case fkIdle:
		out.res = s.IdleCapacity(now).String()
	case fkRequeueRecord:
		var d Decision
		d, err = s.RequeueRecord(now, op.ID)
		if err == nil {
			out.res = d.String()
		}
	case fkAddNode, fkUpdateNode:
		var nc NodeConfig
		if nc, err = op.nodeConfig(); err != nil {
			break
		}
		if op.Kind == fkAddNode {
			_, err = s.Apply(now, AddNodeEvent{Node: nc, Partitions: op.Parts, PoweredDown: op.SetParts})
		} else {
			_, err = s.Apply(now, UpdateNodeEvent{Node: nc, SetPartitions: op.SetParts, Partitions: op.Parts})
		}
	case fkRemoveNode:
		err = s.RemoveNode(now, op.Node)
	case fkPowerDown:
		err = s.PowerDownNode(now, op.Node)
	case fkPowerUp:
		err = s.PowerUpNode(now, op.Node)
	case fkPoweredUp:
		err = s.NodePoweredUp(now, op.Node)
	case fkReboot:
		err = s.RebootNode(now, op.Node, op.Parts...)
	case fkRebooted:
		err = s.NodeRebooted(now, op.Node)
	case fkTelemetry:
		var r Result
		r, err = s.Apply(now, op.Tel)
		out.res = fmt.Sprint(r.Jobs)
	case fkSetTelemetry:
		err = s.SetTelemetry(now, op.TelCfg)
	default:
		err = fzAdminCall(s, now, op)
	}
	out.err = err
	return out
}

// goCode writes op as the Go call that makes it (in package scheduler,
// with s the scheduler and t0 fzEpoch).
func (op fzOp) goCode() string {
	at := fmt.Sprintf("t0.Add(%s)", fzDur(op.At))
	switch op.Kind {
	case fkSchedule:
		return fmt.Sprintf("s.Schedule(%s)", at)
	case fkSubmit:
		return fmt.Sprintf("s.Submit(%s, %s)", at, fzSpecCode(op.Spec))
	case fkSubmitArray:
		return fmt.Sprintf("s.SubmitArray(%s, %s, %q)", at, fzSpecCode(op.Spec), op.Array)
	case fkRequeue:
		if len(op.Nodes) > 0 {
			return fmt.Sprintf("s.RequeueExcluding(%s, %d, %#v...)", at, op.ID, op.Nodes)
		}
		return fmt.Sprintf("s.Requeue(%s, %d)", at, op.ID)
	case fkCancel, fkCheckpoint, fkSuspendJob, fkResumeJob:
		return fmt.Sprintf("s.%s(%s, %d)", op.Kind, at, op.ID)
	case fkHold, fkRequeueJob:
		return fmt.Sprintf("s.%s(%s, %d, %v)", op.Kind, at, op.ID, op.Flag)
	case fkRelease:
		if op.Flag {
			return fmt.Sprintf("s.Release(%s, %d)", at, op.ID)
		}
		return fmt.Sprintf("s.UserRelease(%s, %d)", at, op.ID)
	case fkUpdateJob:
		return fmt.Sprintf("s.UpdateJob(%s, %d, %s)", at, op.ID, fzUpdateCode(op.Update))
	case fkFinish:
		return fmt.Sprintf("s.Finish(%s, %d, %d)", at, op.ID, op.Exit)
	case fkDrain, fkFail, fkDown:
		return fmt.Sprintf("s.%s(%s, %q, %q)", op.Kind, at, op.Node, op.Reason)
	case fkResume:
		return fmt.Sprintf("s.ResumeNode(%s, %q)", at, op.Node)
	case fkHealth:
		return fmt.Sprintf("s.SetDeviceHealth(%s, %q, %d, %v, %q)", at, op.Node, op.Index, op.Healthy, op.Reason)
	case fkAddResv:
		r := op.Resv
		nodes := ""
		if r.NodeSetLen > 0 {
			nodes = fmt.Sprintf(", Nodes: topology.NodeSetOf(%d", r.NodeSetLen)
			for _, k := range r.Nodes {
				nodes += fmt.Sprintf(", %d", k)
			}
			nodes += ")"
		}
		end := ""
		if r.End != 0 {
			end = fmt.Sprintf(", End: t0.Add(%s)", fzDur(r.End))
		}
		return fmt.Sprintf("s.AddReservation(%s, policy.Reservation{Name: %q, Start: t0.Add(%s)%s, Duration: %s%s, NodeCount: %d, Users: %#v, Accounts: %#v, Flags: %#x})",
			at, r.Name, fzDur(r.Start), end, fzDur(r.Duration), nodes, r.NodeCount, r.Users, r.Accounts, uint32(r.Flags))
	case fkRemoveResv:
		return fmt.Sprintf("s.RemoveReservation(%s, %q)", at, op.Resv.Name)
	case fkExplain:
		return fmt.Sprintf("s.Explain(%s, %d, ExplainOptions{Counterfactuals: %v, RuntimeFraction: %v})", at, op.ID, op.Counter, op.Frac)
	case fkIdle:
		return fmt.Sprintf("s.IdleCapacity(%s)", at)
	case fkRequeueRecord:
		return fmt.Sprintf("s.RequeueRecord(%s, %d)", at, op.ID)
	case fkAddNode:
		return fmt.Sprintf("s.Apply(%s, AddNodeEvent{Node: fzMustNode(%q, %#v), Partitions: %#v, PoweredDown: %v})",
			at, op.Node, op.NodeCfg, op.Parts, op.SetParts)
	case fkPowerDown, fkPowerUp, fkPoweredUp, fkRebooted:
		return fmt.Sprintf("s.%s(%s, %q)", op.Kind, at, op.Node)
	case fkReboot:
		return fmt.Sprintf("s.RebootNode(%s, %q, %#v...)", at, op.Node, op.Parts)
	case fkUpdateNode:
		return fmt.Sprintf("s.Apply(%s, UpdateNodeEvent{Node: fzMustNode(%q, %#v), SetPartitions: %v, Partitions: %#v})",
			at, op.Node, op.NodeCfg, op.SetParts, op.Parts)
	case fkRemoveNode:
		return fmt.Sprintf("s.RemoveNode(%s, %q)", at, op.Node)
	case fkTelemetry:
		return fmt.Sprintf("s.Apply(%s, %s)", at, strings.ReplaceAll(fmt.Sprintf("%#v", op.Tel), "scheduler.", ""))
	case fkSetTelemetry:
		return fmt.Sprintf("s.SetTelemetry(%s, %s)", at, strings.ReplaceAll(fmt.Sprintf("%#v", op.TelCfg), "scheduler.", ""))
	}
	return op.adminGoCode(at)
}

// fzMustNode is fzOp.nodeConfig for a reproduction's Go code.
func fzMustNode(name string, n fzNode) NodeConfig {
	nc, err := fzOp{Node: name, NodeCfg: n}.nodeConfig()
	if err != nil {
		panic(err)
	}
	return nc
}

// fzDur writes d as a Go expression.
func fzDur(d time.Duration) string {
	switch {
	case d == 0:
		return "0"
	case d%time.Second == 0:
		return fmt.Sprintf("%d*time.Second", d/time.Second)
	case d/time.Second == 0:
		return fmt.Sprintf("%d", int64(d))
	}
	return fmt.Sprintf("%d*time.Second + %d", d/time.Second, int64(d%time.Second))
}

// fzSpecCode writes a JobSpec literal with only its non-zero fields.
func fzSpecCode(sp JobSpec) string {
	s := fmt.Sprintf("%#v", sp)
	s = strings.ReplaceAll(s, "scheduler.", "")
	// Drop zero fields to keep reproductions readable.
	for _, z := range []string{`Name:"", `, `User:"", `, `Account:"", `, `Partition:"", `, `QOS:"", `, `Nodes:0, `, `Tasks:0, `,
		`CPUsPerTask:0, `, `MemPerNodeMiB:0, `, `GRESPerNode:[]gres.Request(nil), `, `GRESPerTask:[]gres.Request(nil), `,
		`GRESPerJob:[]gres.Request(nil), `, `CPUsPerGPU:0, `, `MemPerGPUMiB:0, `, `GPUsPerSocket:0, `, `SocketsPerNode:0, `,
		`EnforceBinding:false, `, `TimeMin:0, `, `TimeLimit:0, `, `BeginTime:time.Date(1, time.January, 1, 0, 0, 0, 0, time.UTC), `,
		`Exclusive:false, `, `CheckpointInterval:0, `, `Requeue:false, `, `Switches:0, `, `SwitchesMaxWait:0, `, `Segment:0, `,
		`Reservation:"", `, `Dependency:"", `, `Nice:0, `, `, Exclude:[]string(nil)`, `, Hold:false`, `Hold:false, `, `, NodeList:""`, `, Constraint:""`, `, Contiguous:false`,
		`, NVLinkDomain:0x0`, `NVLinkDomain:0x0, `, `NVLinkDomain:0x0`,
		`, OverSubscribe:false`, `, NodesMax:0`, `, TasksPerNode:0`, `, TasksPerSocket:0`, `, MemPerCPUMiB:0`} {
		s = strings.ReplaceAll(s, z, "")
	}
	s = strings.ReplaceAll(s, "{gres.Request{", "{{")
	return strings.ReplaceAll(s, "}, gres.Request{", "}, {")
}

// fzUpdateCode writes a JobUpdate literal with the values its pointers
// hold (through the jobctl test's ptr helper).
func fzUpdateCode(u JobUpdate) string {
	var parts []string
	add := func(name string, set bool, v any) {
		if set {
			parts = append(parts, fmt.Sprintf("%s: ptr(%#v)", name, v))
		}
	}
	add("TimeLimit", u.TimeLimit != nil, deref(u.TimeLimit))
	add("TimeMin", u.TimeMin != nil, deref(u.TimeMin))
	add("Nice", u.Nice != nil, deref(u.Nice))
	add("Partition", u.Partition != nil, deref(u.Partition))
	add("QOS", u.QOS != nil, deref(u.QOS))
	add("Account", u.Account != nil, deref(u.Account))
	add("Dependency", u.Dependency != nil, deref(u.Dependency))
	add("BeginTime", u.BeginTime != nil, deref(u.BeginTime))
	add("Priority", u.Priority != nil, deref(u.Priority))
	if u.ResetPriority {
		parts = append(parts, "ResetPriority: true")
	}
	return "JobUpdate{" + strings.Join(parts, ", ") + "}"
}

// deref is *p, or the zero value for nil.
func deref[T any](p *T) T {
	var z T
	if p == nil {
		return z
	}
	return *p
}
