package scheduler

import (
	"fmt"
	"strconv"
	"strings"
)

// DistMethod is one level of sbatch -m/--distribution: how tasks (and,
// within a node, their CPUs) are laid over nodes, sockets or cores.
type DistMethod uint8

// Distribution methods, with Slurm's names.
const (
	// DistDefault is "*" or an absent level: Slurm's default, block over
	// nodes and cyclic over sockets and cores.
	DistDefault DistMethod = iota
	// DistBlock ("block") fills one node (socket, core) before the next.
	// At the node level it numbers the tasks of a step (consecutive tasks
	// share a node) and does not change the job's allocation: see
	// Distribution.
	DistBlock
	// DistCyclic ("cyclic") takes one task from each node (socket, core)
	// in turn; within a node each task's CPUs stay on one socket where
	// one has room for them all. At the node level, as block, it does not
	// change the allocation.
	DistCyclic
	// DistFCyclic ("fcyclic", sockets and cores only) takes each CPU of a
	// task from the next socket (core) in turn.
	DistFCyclic
	// DistArbitrary ("arbitrary", nodes only) follows the order of the
	// job's node list (in Slurm, the SLURM_HOSTFILE a step reads, which
	// Sluice does not have): it does not change the allocation.
	DistArbitrary
	// DistPlane ("plane=<size>", nodes only) deals blocks of PlaneSize
	// tasks to the nodes in turn; it changes how many tasks (and so CPUs,
	// memory and per-task GRES) each node of the job gets.
	DistPlane
)

var distMethodNames = [...]string{DistDefault: "*", DistBlock: "block", DistCyclic: "cyclic",
	DistFCyclic: "fcyclic", DistArbitrary: "arbitrary", DistPlane: "plane"}

// String returns Slurm's name of the method ("*" for the default).
func (m DistMethod) String() string { return enumName(m, distMethodNames[:], "DistMethod") }

// PackMode is the ",Pack" / ",NoPack" suffix of --distribution.
type PackMode uint8

// Pack modes. Slurm's sbatch page describes both as the layout of a job
// step's tasks over the nodes of the allocation (Pack with the block
// method); Sluice allocates jobs and has no steps, so neither changes the
// allocation: they are kept, encoded and reported.
const (
	// PackDefault: no suffix.
	PackDefault PackMode = iota
	// Pack ("Pack"): a step's tasks packed on nodes as tightly as possible.
	Pack
	// NoPack ("NoPack"): a step's tasks spread over nodes as evenly as
	// possible.
	NoPack
)

var packModeNames = [...]string{PackDefault: "", Pack: "Pack", NoPack: "NoPack"}

// String returns the suffix's name ("" for none).
func (p PackMode) String() string {
	if int(p) < len(packModeNames) {
		return packModeNames[p]
	}
	return enumName(p, nil, "PackMode")
}

// Distribution is sbatch -m/--distribution,
// node[:socket[:core]][,Pack|NoPack]. The zero value is Slurm's default
// (block:cyclic:cyclic: tasks in blocks over nodes, cyclic over sockets).
// Within a node the socket level (the second field) decides which CPU ids
// the job gets, as the select/cons_tres allocation method does: cyclic
// (the default) takes a task's CPUs from each socket in turn, block fills
// the lowest socket first, fcyclic deals each CPU to the next socket.
//
// At the node level (the first field) only plane changes the allocation:
// Slurm's dist_plane page allocates the tasks in blocks of plane_size to
// the nodes in turn, so -N4 -n21 -m plane=4 runs 8+5+4+4 tasks where the
// default runs 6+5+5+5 (each block cut to what a node has room for, the
// rest going on to the next nodes; fewer blocks than -N nodes is refused,
// as in Slurm, and without -N the job takes at most one node per block).
// It applies to jobs whose tasks spread (Tasks with more than one node);
// with a GRESPerJob total the tasks stay ceil(Tasks/Nodes) per node.
// Block, cyclic and arbitrary number a step's tasks over the nodes (which
// task runs where), not how many each node holds: the job's per-node
// counts are those of the task spread (one task per node in turn while a
// node has room, see JobSpec.Tasks) whichever is given. Pack and NoPack
// are a step's layout too (see PackMode), and the core level only binds
// tasks in Slurm: all are kept, encoded and reported, and change nothing
// in the allocation.
type Distribution struct {
	// Node is the first field: block, cyclic, arbitrary or plane.
	Node DistMethod
	// PlaneSize is plane's size; set exactly when Node is DistPlane.
	PlaneSize int
	// Socket is the second field: block, cyclic or fcyclic.
	Socket DistMethod
	// Core is the third field: block, cyclic or fcyclic.
	Core DistMethod
	// Pack is the ",Pack" or ",NoPack" suffix.
	Pack PackMode
}

// planeSize is the job's -m plane=<size> when it has tasks to deal (0
// otherwise: without Tasks every node runs the same tasks).
func (sp *JobSpec) planeSize() int {
	if sp.Distribution.Node == DistPlane && sp.Tasks > 0 {
		return sp.Distribution.PlaneSize
	}
	return 0
}

// maxPlaneSize bounds plane=<size>.
const maxPlaneSize = MaxTasksPerJob

// ParseDistribution parses sbatch's -m/--distribution value, such as
// "block:cyclic", "cyclic:fcyclic:block,Pack", "plane=4" or "*:block";
// names are case-insensitive and "" is the default. Errors wrap
// ErrInvalidJob and name the value and the field.
func ParseDistribution(s string) (Distribution, error) {
	var d Distribution
	bad := func(format string, a ...any) (Distribution, error) {
		return Distribution{}, fmt.Errorf("%w: distribution %q: %s", ErrInvalidJob, s, fmt.Sprintf(format, a...))
	}
	t := strings.TrimSpace(s)
	if t == "" {
		return d, nil
	}
	if i := strings.IndexByte(t, ','); i >= 0 {
		switch suf := t[i+1:]; {
		case strings.EqualFold(suf, "Pack"):
			d.Pack = Pack
		case strings.EqualFold(suf, "NoPack"):
			d.Pack = NoPack
		default:
			return bad("suffix %q, want Pack or NoPack", suf)
		}
		t = t[:i]
	}
	levels := strings.Split(t, ":")
	if len(levels) > 3 {
		return bad("%d levels, at most 3 (node:socket:core)", len(levels))
	}
	for k, f := range levels {
		if k == 0 && len(f) > 6 && strings.EqualFold(f[:6], "plane=") {
			n, err := strconv.Atoi(f[6:])
			if err != nil || n < 1 || n > maxPlaneSize {
				return bad("plane size %q, want 1..%d", f[6:], maxPlaneSize)
			}
			d.Node, d.PlaneSize = DistPlane, n
			continue
		}
		m, err := parseName[DistMethod](f, distMethodNames[:], "DistMethod")
		if err != nil || m == DistPlane {
			return bad("level %d: unknown method %q", k+1, f)
		}
		if k > 0 && m == DistArbitrary {
			return bad("level %d: %s applies to nodes only", k+1, m)
		}
		if k == 0 && m == DistFCyclic {
			return bad("fcyclic applies to sockets and cores only")
		}
		switch k {
		case 0:
			d.Node = m
		case 1:
			d.Socket = m
		default:
			d.Core = m
		}
	}
	return d, nil
}

// validate checks a Distribution built by hand.
func (d Distribution) validate() error {
	switch {
	case d.Node > DistPlane || d.Node == DistFCyclic:
		return fmt.Errorf("%w: distribution: node method %d invalid", ErrInvalidJob, d.Node)
	case (d.Node == DistPlane) != (d.PlaneSize > 0) || d.PlaneSize < 0 || d.PlaneSize > maxPlaneSize:
		return fmt.Errorf("%w: distribution: PlaneSize %d with node method %v (plane needs 1..%d, the others 0)", ErrInvalidJob, d.PlaneSize, d.Node, maxPlaneSize)
	case d.Socket > DistFCyclic || d.Core > DistFCyclic:
		return fmt.Errorf("%w: distribution: socket method %d / core method %d invalid (block, cyclic, fcyclic)", ErrInvalidJob, d.Socket, d.Core)
	case d.Pack > NoPack:
		return fmt.Errorf("%w: distribution: Pack %d invalid", ErrInvalidJob, d.Pack)
	}
	return nil
}

// String returns the --distribution value ParseDistribution reads back
// ("" for the default; "*" stands for a default level before a set one).
func (d Distribution) String() string {
	if d == (Distribution{}) {
		return ""
	}
	var b strings.Builder
	if d.Node == DistPlane {
		b.WriteString("plane=" + strconv.Itoa(d.PlaneSize))
	} else {
		b.WriteString(d.Node.String())
	}
	if d.Socket != DistDefault || d.Core != DistDefault {
		b.WriteString(":" + d.Socket.String())
	}
	if d.Core != DistDefault {
		b.WriteString(":" + d.Core.String())
	}
	if d.Pack != PackDefault {
		b.WriteString("," + d.Pack.String())
	}
	return b.String()
}

// MarshalText writes String's form; an invalid value is an error.
func (d Distribution) MarshalText() ([]byte, error) {
	if err := d.validate(); err != nil {
		return nil, err
	}
	return []byte(d.String()), nil
}

// UnmarshalText reads what ParseDistribution reads.
func (d *Distribution) UnmarshalText(b []byte) error {
	v, err := ParseDistribution(string(b))
	if err != nil {
		return err
	}
	*d = v
	return nil
}

// socketMethod is the method the per-node CPU selection uses over sockets:
// the second field, cyclic when unset (Slurm's default allocation method
// within a node).
func (d Distribution) socketMethod() DistMethod {
	if d.Socket == DistDefault {
		return DistCyclic
	}
	return d.Socket
}

// Hint is sbatch --hint.
type Hint uint8

// Hints, with Slurm's names.
const (
	// HintNone: no hint (threads are CPUs, as multithread).
	HintNone Hint = iota
	// HintMultithread ("multithread"): use the extra threads of a core;
	// Sluice's default allocation already does.
	HintMultithread
	// HintNoMultithread ("nomultithread"): one thread per core: each CPU
	// the job gets on a node is on a core of its own.
	HintNoMultithread
	// HintComputeBound ("compute_bound"): all cores of each socket, one
	// thread per core: allocated as HintNoMultithread.
	HintComputeBound
)

var hintNames = [...]string{HintNone: "", HintMultithread: "multithread", HintNoMultithread: "nomultithread", HintComputeBound: "compute_bound"}

// String returns Slurm's name of the hint ("" for none).
func (h Hint) String() string {
	if int(h) < len(hintNames) {
		return hintNames[h]
	}
	return enumName(h, nil, "Hint")
}

// ParseHint parses sbatch's --hint value: "nomultithread", "multithread",
// "compute_bound" (case-insensitive; "" is none). "memory_bound" (one core
// per socket) is Slurm's too but not supported: an error says so. Errors
// wrap ErrInvalidJob.
func ParseHint(s string) (Hint, error) {
	if strings.EqualFold(strings.TrimSpace(s), "memory_bound") {
		return 0, fmt.Errorf("%w: hint %q: memory_bound is not supported", ErrInvalidJob, s)
	}
	h, err := parseName[Hint](s, hintNames[:], "Hint")
	if err != nil && strings.TrimSpace(s) != "" {
		return 0, fmt.Errorf("%w: hint %q: want nomultithread, multithread or compute_bound: %w", ErrInvalidJob, s, err)
	}
	return h, nil
}

// MarshalText writes the hint's name.
func (h Hint) MarshalText() ([]byte, error) {
	if int(h) >= len(hintNames) {
		return nil, fmt.Errorf("scheduler: %w: Hint(%d) has no name", ErrUnknownName, uint8(h))
	}
	return []byte(hintNames[h]), nil
}

// UnmarshalText reads what ParseHint reads.
func (h *Hint) UnmarshalText(b []byte) error {
	v, err := ParseHint(string(b))
	if err != nil {
		return err
	}
	*h = v
	return nil
}

// oneThreadPerCore reports whether the hint takes one thread per core.
func (h Hint) oneThreadPerCore() bool { return h == HintNoMultithread || h == HintComputeBound }

// ExclusiveMode is the value of sbatch --exclusive[=user]: JobSpec keeps
// it as its Exclusive and ExclusiveUser fields (ParseExclusive, Apply).
type ExclusiveMode uint8

// Exclusive modes.
const (
	// ExclusiveNone: nodes shared as the partition allows.
	ExclusiveNone ExclusiveMode = iota
	// ExclusiveNode: --exclusive, whole nodes (JobSpec.Exclusive).
	ExclusiveNode
	// ExclusiveUser: --exclusive=user, nodes shared only with the same
	// user's jobs (JobSpec.ExclusiveUser).
	ExclusiveUser
)

// ParseExclusive parses the value of sbatch --exclusive: "" (the bare
// flag: whole nodes) or "user" (case-insensitive). Slurm's "mcs" and
// "topo" are not supported (Sluice has no MCS labels nor exclusive
// topology blocks): an error says so. Errors wrap ErrInvalidJob.
func ParseExclusive(s string) (ExclusiveMode, error) {
	switch t := strings.TrimSpace(s); {
	case t == "":
		return ExclusiveNode, nil
	case strings.EqualFold(t, "user"):
		return ExclusiveUser, nil
	case strings.EqualFold(t, "mcs"), strings.EqualFold(t, "topo"):
		return 0, fmt.Errorf("%w: --exclusive=%s is not supported", ErrInvalidJob, t)
	}
	return 0, fmt.Errorf("%w: --exclusive=%q: want no value or user", ErrInvalidJob, s)
}

// Apply sets the spec's Exclusive and ExclusiveUser fields to mode m.
func (m ExclusiveMode) Apply(spec *JobSpec) {
	spec.Exclusive, spec.ExclusiveUser = m == ExclusiveNode, m == ExclusiveUser
}
