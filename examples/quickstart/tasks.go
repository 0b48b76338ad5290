package main

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/sluicehq/sluice/scheduler"
)

// tasksDemo shows Slurm's task vocabulary on a cluster of its own: two
// 16-CPU nodes. sbatch -n 32 names no node count, so the scheduler
// chooses it (two nodes, every CPU of each); -N2 -n7 deals its tasks one
// per node in turn (4+3 CPUs, not 4+4), and --mem-per-cpu gives each node
// memory for the CPUs it holds.
func tasksDemo(w io.Writer, at time.Time) error {
	nodes := []scheduler.NodeConfig{
		{Name: "cpu-01", CPUs: 16, MemoryMiB: 64 * 1024},
		{Name: "cpu-02", CPUs: 16, MemoryMiB: 64 * 1024},
	}
	s, err := scheduler.New(scheduler.Config{Nodes: nodes, Partitions: []scheduler.PartitionConfig{{Name: "cpu", Default: true}}})
	if err != nil {
		return err
	}
	fmt.Fprintln(w, "== tasks without a node count (two 16-CPU nodes)")
	for _, d := range []struct {
		sbatch string
		spec   scheduler.JobSpec
	}{
		{"sbatch -n 32", scheduler.JobSpec{Name: "mpi", User: "alice", Tasks: 32, TimeLimit: time.Hour}},
		{"sbatch -N 2 -n 7 --mem-per-cpu=1G", scheduler.JobSpec{Name: "seven", User: "bob", Nodes: 2, Tasks: 7, MemPerCPUMiB: 1024, TimeLimit: time.Hour}},
	} {
		id, err := s.Submit(at, d.spec)
		if err != nil {
			return fmt.Errorf("%s: %w", d.sbatch, err)
		}
		if _, err := s.Schedule(at); err != nil {
			return err
		}
		j, _ := s.Job(id)
		fmt.Fprintf(w, "%-36s job %d %s on %d node(s):", d.sbatch, id, j.State, len(j.Alloc.Nodes))
		for _, na := range j.Alloc.Nodes {
			fmt.Fprintf(w, " %s CPU_IDs=%s", na.Name, idRanges(na.CPUs))
			if na.MemoryMiB > 0 {
				fmt.Fprintf(w, " Mem=%dM", na.MemoryMiB)
			}
		}
		fmt.Fprintln(w)
		if err := s.Finish(at.Add(time.Minute), id, 0); err != nil {
			return err
		}
		at = at.Add(time.Minute)
	}
	fmt.Fprintln(w)
	return nil
}

// idRanges writes ascending ids as scontrol does: "0-3,8-9".
func idRanges(ids []int) string {
	var b strings.Builder
	for k := 0; k < len(ids); {
		e := k
		for e+1 < len(ids) && ids[e+1] == ids[e]+1 {
			e++
		}
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(ids[k]))
		if e > k {
			b.WriteString("-" + strconv.Itoa(ids[e]))
		}
		k = e + 1
	}
	return b.String()
}
