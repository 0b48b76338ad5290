// Command quickstart schedules a small GPU cluster through a virtual day
// and prints what a Slurm user would look at: squeue-like snapshots of the
// queue (state, reason, nodes, GPU indices) and a final summary.
//
//	go run ./examples/quickstart
//
// The cluster has four nodes: two h100 servers (8 GPUs on NVSwitch) and two
// a100 PCIe servers (8 GPUs in NVLink pairs), in two partitions: "gpu"
// (all nodes, the default) and "h100" (the h100 nodes, a higher priority
// tier). Thirty jobs from five users in three accounts arrive over the day.
package main

import (
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/sluicehq/sluice/gres"
	"github.com/sluicehq/sluice/internal/gputest"
	"github.com/sluicehq/sluice/scheduler"
	"github.com/sluicehq/sluice/scheduler/sim"
)

func main() {
	seed := flag.Uint64("seed", 1, "workload seed")
	every := flag.Duration("every", 3*time.Hour, "virtual time between squeue snapshots")
	flag.Parse()
	if err := run(os.Stdout, *seed, *every); err != nil {
		fmt.Fprintln(os.Stderr, "quickstart:", err)
		os.Exit(1)
	}
}

// day0 is the virtual day the quickstart simulates.
var day0 = time.Date(2026, 3, 2, 8, 0, 0, 0, time.UTC)

func cluster() scheduler.Config {
	const gib = 1024
	return scheduler.Config{
		Nodes: []scheduler.NodeConfig{
			{Name: "h100-01", CPUs: 112, MemoryMiB: 2048 * gib, Devices: gputest.DGXH100()},
			{Name: "h100-02", CPUs: 112, MemoryMiB: 2048 * gib, Devices: gputest.DGXH100()},
			{Name: "a100-01", CPUs: 64, MemoryMiB: 512 * gib, Devices: gputest.PCIeA100Pairs()},
			{Name: "a100-02", CPUs: 64, MemoryMiB: 512 * gib, Devices: gputest.PCIeA100Pairs()},
		},
		Partitions: []scheduler.PartitionConfig{
			{Name: "gpu", Default: true, DefaultTime: 2 * time.Hour, MaxTime: 24 * time.Hour, DefMemPerCPU: 4 * gib},
			{Name: "h100", Nodes: []string{"h100-01", "h100-02"}, MaxTime: 8 * time.Hour, PriorityTier: 2, DefMemPerCPU: 8 * gib},
		},
	}
}

// workload returns 30 jobs over the day: single-GPU experiments, 2–4 GPU
// fine-tuning runs, whole-node and two-node training jobs.
func workload(seed uint64) []sim.Job {
	rng := rand.New(rand.NewPCG(seed, 42))
	users := []struct{ user, account string }{
		{"alice", "physics"}, {"bob", "physics"}, {"carol", "bio"}, {"dave", "bio"}, {"erin", "ml"},
	}
	var jobs []sim.Job
	at := day0
	for i := range 30 {
		u := users[rng.IntN(len(users))]
		spec := scheduler.JobSpec{User: u.user, Account: u.account, CPUsPerTask: 8}
		run := time.Duration(20+rng.IntN(220)) * time.Minute
		switch k := rng.IntN(10); {
		case k < 4:
			spec.Name = fmt.Sprintf("sweep-%02d", i)
			spec.GRESPerNode = []gres.Request{{Name: "gpu", Count: 1}}
		case k < 7:
			spec.Name = fmt.Sprintf("finetune-%02d", i)
			spec.GRESPerNode = []gres.Request{{Name: "gpu", Count: int64(2 << rng.IntN(2))}}
			spec.Tasks = int(spec.GRESPerNode[0].Count)
		case k < 9:
			spec.Name = fmt.Sprintf("train-%02d", i)
			spec.Partition = "h100"
			spec.GRESPerNode = []gres.Request{{Name: "gpu", Type: "h100", Count: 8}}
			spec.Exclusive = true
		default:
			spec.Name = fmt.Sprintf("pretrain-%02d", i)
			spec.Nodes = 2
			spec.GRESPerNode = []gres.Request{{Name: "gpu", Count: 8}}
			spec.Exclusive = true
		}
		// Users over-estimate: the limit is 1.2–3× the real run, rounded to 10 minutes.
		limit := time.Duration(float64(run) * (1.2 + 1.8*rng.Float64()))
		spec.TimeLimit = (limit + 10*time.Minute - 1) / (10 * time.Minute) * (10 * time.Minute)
		if spec.Partition == "h100" {
			spec.TimeLimit = min(spec.TimeLimit, 8*time.Hour)
		}
		if rng.IntN(8) == 0 {
			run = spec.TimeLimit + time.Hour // this one would run forever: it times out
		}
		jobs = append(jobs, sim.Job{Spec: spec, Submit: at, Runtime: run})
		at = at.Add(time.Duration(rng.IntN(50)) * time.Minute)
	}
	return jobs
}

func run(w io.Writer, seed uint64, every time.Duration) error {
	s, err := scheduler.New(cluster())
	if err != nil {
		return err
	}
	jobs := workload(seed)
	fmt.Fprintf(w, "Sluice quickstart: %d nodes, %d GPUs, %d jobs from %s over a virtual day\n\n",
		len(s.Nodes()), totalGPUs(s), len(jobs), day0.Format("Mon 2 Jan 2006"))
	nextSnap := day0.Add(time.Hour)
	res, err := sim.Run(s, &sim.SliceSource{Jobs: jobs}, sim.Options{
		OnCycle: func(s *scheduler.Scheduler, c scheduler.Cycle) {
			if c.Now.Before(nextSnap) {
				return
			}
			squeue(w, s, c)
			for !nextSnap.After(c.Now) {
				nextSnap = nextSnap.Add(every)
			}
		},
	})
	if err != nil {
		return err
	}
	summary(w, s, res)
	return nil
}

func totalGPUs(s *scheduler.Scheduler) int64 {
	id, ok := s.Registry().Lookup("gres/gpu")
	if !ok {
		return 0
	}
	var n int64
	for _, nd := range s.Nodes() {
		n += nd.Capacity.At(id)
	}
	return n
}

// squeue prints the queue the way `squeue` does, plus the GPU indices.
func squeue(w io.Writer, s *scheduler.Scheduler, c scheduler.Cycle) {
	fmt.Fprintf(w, "== squeue at %s (%d started this cycle)\n", c.Now.Format("15:04"), len(c.Starts))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "JOBID\tPARTITION\tNAME\tUSER\tACCOUNT\tST\tTIME\tNODES\tNODELIST(REASON)\tGPUS")
	var rows []scheduler.Job
	for _, j := range s.Jobs() {
		if j.State == scheduler.JobRunning {
			rows = append(rows, j)
		}
	}
	for _, p := range c.Pending {
		j, _ := s.Job(p.Job)
		rows = append(rows, j)
	}
	for _, j := range rows {
		elapsed, where, devs := "0:00", "("+j.Reason.String()+")", "-"
		nodes := max(j.Spec.Nodes, 1)
		if j.State == scheduler.JobRunning {
			elapsed = clock(c.Now.Sub(j.StartTime))
			where = strings.Join(j.Alloc.NodeNames(), ",")
			devs = gpuList(j.Alloc)
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\t%d\t%s\t%s\n", j.ID, j.Partition, j.Spec.Name, j.Spec.User,
			j.Spec.Account, j.State.Short(), elapsed, nodes, where, devs)
	}
	tw.Flush()
	fmt.Fprintln(w)
}

func gpuList(a scheduler.Allocation) string {
	var parts []string
	for _, na := range a.Nodes {
		idx := make([]string, len(na.Devices))
		for i, d := range na.Devices {
			idx[i] = fmt.Sprint(d)
		}
		parts = append(parts, na.Name+":"+strings.Join(idx, ","))
	}
	return strings.Join(parts, " ")
}

func clock(d time.Duration) string {
	d = d.Round(time.Minute)
	return fmt.Sprintf("%d:%02d", int(d.Hours()), int(d.Minutes())%60)
}

func summary(w io.Writer, s *scheduler.Scheduler, res sim.Result) {
	states := map[scheduler.JobState]int{}
	var wait time.Duration
	var gpuSec float64
	for _, r := range res.Jobs {
		states[r.State]++
		wait += r.Wait()
		gpuSec += float64(r.GPUs) * r.End.Sub(r.Start).Seconds()
	}
	span := res.End.Sub(res.Start)
	fmt.Fprintf(w, "== summary (%s to %s, %d scheduling cycles)\n", res.Start.Format("Mon 15:04"), res.End.Format("Mon 15:04"), res.Cycles)
	keys := make([]scheduler.JobState, 0, len(states))
	for k := range states {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%d %s", states[k], k))
	}
	fmt.Fprintf(w, "jobs done:        %d (%s), %d rejected\n", len(res.Jobs), strings.Join(parts, ", "), res.Rejected)
	if len(res.Jobs) > 0 {
		fmt.Fprintf(w, "mean wait:        %s\n", (wait / time.Duration(len(res.Jobs))).Round(time.Second))
	}
	if span > 0 {
		fmt.Fprintf(w, "GPU utilisation:  %.1f%% of %d GPUs over %s\n", 100*gpuSec/(float64(totalGPUs(s))*span.Seconds()), totalGPUs(s), span.Round(time.Minute))
	}
}
