package scheduler

import (
	"fmt"
	"slices"

	"github.com/sluicehq/sluice/gres"
)

// cpuLayout is a node's CPUs as Slurm's cons_tres numbers them: sockets
// (over all boards), cores per socket and threads per core. CPU ids are
// Slurm's abstract ids: socket by socket, core by core within a socket,
// the threads of a core consecutive, so the CPU of thread t of core c on
// socket s is (s·cores + c)·threads + t, and Slurm's core index (gres.conf
// Cores=) of that core is s·cores + c.
type cpuLayout struct {
	sockets, cores, threads int
}

// socketOf returns the socket of CPU id c.
func (l cpuLayout) socketOf(c int) int { return c / (l.cores * l.threads) }

// coreOf returns Slurm's core index of CPU id c.
func (l cpuLayout) coreOf(c int) int { return c / l.threads }

// flat reports whether every CPU is a socket of its own or the node has a
// single socket of single-thread cores: the distribution over sockets
// then takes the lowest free CPU ids, whatever the method.
func (l cpuLayout) flat() bool {
	return l.threads == 1 && (l.cores == 1 || l.sockets == 1)
}

// cpusOfCores returns the CPU ids of the cores in cores (Slurm's core
// indices, as gres.conf Cores= names them): every thread of each. Core
// indices beyond the node's are dropped (validate rejects them).
func (l cpuLayout) cpusOfCores(cores gres.CoreSet) gres.CoreSet {
	if l.threads == 1 || cores.IsEmpty() {
		return cores
	}
	var ids []int
	for _, c := range cores.AppendTo(nil) {
		if c >= l.sockets*l.cores {
			continue
		}
		for t := range l.threads {
			ids = append(ids, c*l.threads+t)
		}
	}
	cs, _ := gres.CoreSetOf(ids...) // ids < CPUs ≤ MaxCoreID+1 (validate)
	return cs
}

// Layout limits: each of Boards, Sockets, CoresPerSocket and
// ThreadsPerCore is at most maxLayoutCount (their product is bounded by
// the CPU count anyway).
const maxLayoutCount = 1 << 16

// layout returns the node's CPU layout with Slurm's defaults filled in
// (slurm.conf's node section):
//
//   - Boards defaults to 1; with Boards set, Sockets counts the sockets of
//     one board (Slurm's SocketsPerBoard), so the node has Boards×Sockets;
//   - ThreadsPerCore and CoresPerSocket default to 1;
//   - Sockets, when unset, is inferred from CPUs: CPUs/(Boards×CoresPerSocket×ThreadsPerCore).
//
// So a node giving only CPUs has CPUs sockets of one single-thread core,
// as slurmctld infers. CPUs must then be the product of the four, or the
// core count Boards×Sockets×CoresPerSocket (Slurm then schedules cores as
// CPUs and threads are not counted: the layout has one thread per core).
// Errors wrap ErrInvalidConfig and name the node and the fields.
func (n *NodeConfig) layout() (cpuLayout, error) {
	bad := func(format string, a ...any) (cpuLayout, error) {
		return cpuLayout{}, fmt.Errorf("%w: node %q: %s", ErrInvalidConfig, n.Name, fmt.Sprintf(format, a...))
	}
	for _, f := range [...]struct {
		name string
		v    int
	}{{"Boards", n.Boards}, {"Sockets", n.Sockets}, {"CoresPerSocket", n.CoresPerSocket}, {"ThreadsPerCore", n.ThreadsPerCore}} {
		if f.v < 0 || f.v > maxLayoutCount {
			return bad("%s %d out of range [0 (Slurm's default), %d]", f.name, f.v, maxLayoutCount)
		}
	}
	boards, cores, threads := max(n.Boards, 1), max(n.CoresPerSocket, 1), max(n.ThreadsPerCore, 1)
	perBoard := n.Sockets
	if perBoard == 0 {
		k := boards * cores * threads
		switch {
		case n.CPUs%k == 0:
			perBoard = n.CPUs / k
		case n.CPUs%(boards*cores) == 0:
			perBoard = n.CPUs / (boards * cores) // CPUs count cores
		default:
			return bad("Sockets unset and CPUs %d not a multiple of Boards×CoresPerSocket×ThreadsPerCore = %d", n.CPUs, k)
		}
		if perBoard == 0 {
			return bad("CPUs %d fewer than Boards×CoresPerSocket×ThreadsPerCore = %d", n.CPUs, k)
		}
	}
	sockets := boards * perBoard
	if sockets > maxLayoutCount {
		return bad("Boards×Sockets = %d above %d", sockets, maxLayoutCount)
	}
	switch total := int64(sockets) * int64(cores); {
	case total*int64(threads) == int64(n.CPUs):
	case total == int64(n.CPUs):
		threads = 1 // CPUs are cores: Slurm allocates whole cores
	default:
		return bad("CPUs %d is neither Boards×Sockets×CoresPerSocket×ThreadsPerCore = %d×%d×%d×%d = %d nor the core count %d",
			n.CPUs, boards, perBoard, cores, threads, total*int64(threads), total)
	}
	return cpuLayout{sockets: sockets, cores: cores, threads: threads}, nil
}

// validateLayout checks the node's layout and, when the node gives one
// (any of Boards, Sockets, CoresPerSocket, ThreadsPerCore set), that its
// devices' sockets and cores (gres.conf Cores=: Slurm's core indices) lie
// within it.
func (n *NodeConfig) validateLayout() error {
	l, err := n.layout()
	if err != nil {
		return err
	}
	layoutGiven := n.Boards != 0 || n.Sockets != 0 || n.CoresPerSocket != 0 || n.ThreadsPerCore != 0
	for _, d := range n.Devices.Devices {
		if layoutGiven && d.Socket >= l.sockets {
			return fmt.Errorf("%w: node %q: device %d on socket %d, the node has %d socket(s)", ErrInvalidConfig, n.Name, d.Index, d.Socket, l.sockets)
		}
		// Without a layout, ids beyond the node are left as they were
		// accepted before layouts (they are close to no CPU of the node).
		if ids := d.Cores.AppendTo(nil); layoutGiven && len(ids) > 0 && ids[len(ids)-1] >= l.sockets*l.cores {
			m := ids[len(ids)-1]
			return fmt.Errorf("%w: node %q: device %d: core %d beyond the node's %d cores (Cores names core indices, as gres.conf's Cores=)",
				ErrInvalidConfig, n.Name, d.Index, m, l.sockets*l.cores)
		}
	}
	return nil
}

// cpuInventory returns inv with its devices' Cores (core indices) as the
// CPU ids of those cores, the ids the device choice compares with the
// job's CPUs; inv itself where the two agree (one thread per core).
func (l cpuLayout) cpuInventory(inv gres.Inventory) gres.Inventory {
	if l.threads == 1 {
		return inv
	}
	out := inv
	out.Devices = slices.Clone(inv.Devices)
	for k := range out.Devices {
		out.Devices[k].Cores = l.cpusOfCores(out.Devices[k].Cores)
	}
	return out
}
