// Command quickstart schedules a small GPU cluster through a virtual day
// and prints what a Slurm user would look at: squeue-like snapshots of the
// queue (state, reason, nodes, GPU indices, expected start), an sprio-like
// priority table, and at the end an sreport-like utilisation summary and an
// sshare-like fair-share tree read back from the accounting ledger.
//
//	go run ./examples/quickstart
//	go run ./examples/quickstart -ledger /tmp/sluice.db   # keep the ledger; run again to see usage accumulate
//
// The cluster has four nodes: two h100 servers (8 GPUs on NVSwitch) and two
// a100 PCIe servers (8 GPUs in NVLink pairs), in two partitions: "gpu"
// (all nodes, the default) and "h100" (the h100 nodes, a higher priority
// tier). Thirty jobs from five users in three accounts arrive over the
// day. At the end, a cluster of two 16-CPU nodes shows tasks without a
// node count (sbatch -n 32 taking both nodes, with their CPU ids). The queue is ordered by multifactor priority (age, fair-share from
// the ledger, job size), EASY backfill fills the gaps, and a per-user GPU
// limit holds some jobs back with Slurm's reason. Two small scenes follow:
// a job held by a limit gets an expected start, and telemetry shows a job
// whose GPUs sit idle — IdleCapacity's "allocated-idle" class and the
// Explain of the job waiting behind it.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/sluicehq/sluice/accounting"
	"github.com/sluicehq/sluice/backfill"
	"github.com/sluicehq/sluice/gres"
	"github.com/sluicehq/sluice/gres/gpuserver"
	"github.com/sluicehq/sluice/policy"
	"github.com/sluicehq/sluice/priority"
	"github.com/sluicehq/sluice/scheduler"
	"github.com/sluicehq/sluice/scheduler/ledger"
	"github.com/sluicehq/sluice/scheduler/sim"
)

const cluster = "quickstart"

func main() {
	seed := flag.Uint64("seed", 1, "workload seed")
	every := flag.Duration("every", 3*time.Hour, "virtual time between squeue snapshots")
	ledgerPath := flag.String("ledger", "", "buntdb ledger file to keep across runs (default: a temporary file)")
	flag.Parse()
	if err := run(os.Stdout, *seed, *every, *ledgerPath); err != nil {
		fmt.Fprintln(os.Stderr, "quickstart:", err)
		os.Exit(1)
	}
}

// users are the quickstart's users and the accounts they charge.
var users = []struct{ user, account string }{
	{"alice", "physics"}, {"bob", "physics"}, {"carol", "bio"}, {"dave", "bio"}, {"erin", "ml"},
}

func nodes() []scheduler.NodeConfig {
	const gib = 1024
	return []scheduler.NodeConfig{
		{Name: "h100-01", CPUs: 128, MemoryMiB: 2048 * gib, Devices: gpuserver.DGXH100()},
		{Name: "h100-02", CPUs: 128, MemoryMiB: 2048 * gib, Devices: gpuserver.DGXH100()},
		{Name: "a100-01", CPUs: 128, MemoryMiB: 1024 * gib, Devices: gpuserver.PCIeA100Pairs()},
		{Name: "a100-02", CPUs: 128, MemoryMiB: 1024 * gib, Devices: gpuserver.PCIeA100Pairs()},
	}
}

// config builds the cluster, its policy (a QOS limiting each user to 16
// GPUs at a time), multifactor priority with fair-share read from the
// ledger, and EASY backfill.
func config(l accounting.Ledger, firstID scheduler.JobID) (scheduler.Config, error) {
	const gib = 1024
	cfg := scheduler.Config{
		Nodes: nodes(),
		Partitions: []scheduler.PartitionConfig{
			{Name: "gpu", Default: true, DefaultTime: 2 * time.Hour, MaxTime: 24 * time.Hour, DefMemPerCPU: 4 * gib},
			{Name: "h100", Nodes: []string{"h100-01", "h100-02"}, MaxTime: 8 * time.Hour, PriorityTier: 2, DefMemPerCPU: 8 * gib},
		},
		FirstJobID: firstID,
		Backfill:   &backfill.Config{Mode: backfill.EASY},
		// Jobs are allocated-but-idle when telemetry shows their GPUs idle
		// (the day's simulated jobs report none: see allocatedIdle).
		Telemetry: scheduler.TelemetryConfig{Rule: idleRule},
		Priority: &scheduler.PriorityConfig{
			Engine:    priority.Config{Weights: priority.Weights{Age: 1000, FairShare: 10000, JobSize: 1000}},
			FairShare: ledger.FairShare(l, cluster),
		},
	}
	reg, err := scheduler.NewRegistry(cfg.Nodes)
	if err != nil {
		return cfg, err
	}
	perUser, err := policy.ParseTRESLimits(reg, "gres/gpu=16")
	if err != nil {
		return cfg, err
	}
	cfg.Registry = reg
	// The association tree is declared once, in the ledger (the fair-share
	// shares and the limits): the policy's associations are read from it.
	assocs, err := ledger.PolicyAssocs(l, cluster, reg)
	if err != nil {
		return cfg, err
	}
	cfg.Policy = &policy.Config{QOS: []policy.QOS{{Name: "normal", Limits: policy.QOSLimits{MaxTRESPerUser: perUser}}}, Assocs: assocs}
	return cfg, nil
}

// workload returns 30 jobs over the day starting at day0: single-GPU
// experiments, 2–4 GPU fine-tuning runs, whole-node and two-node training.
func workload(seed uint64, day0 time.Time) []sim.Job {
	rng := rand.New(rand.NewPCG(seed, 42))
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
			spec.Nodes = 1 // -N1: without it Slurm would choose the node count
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

func run(w io.Writer, seed uint64, every time.Duration, path string) error {
	keep := path != ""
	if !keep {
		dir, err := os.MkdirTemp("", "sluice-quickstart-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		path = filepath.Join(dir, "ledger.db")
	}
	l, err := accounting.OpenBunt(path, accounting.Config{}, accounting.BuntOptions{})
	if err != nil {
		return fmt.Errorf("opening ledger: %w", err)
	}
	defer l.Close()

	// A ledger kept from earlier runs continues: the next day, the next job IDs.
	day0, firstID, runs, err := resume(l)
	if err != nil {
		return err
	}
	if err := addAssociations(l, day0); err != nil {
		return err
	}
	cfg, err := config(l, firstID)
	if err != nil {
		return err
	}
	s, err := scheduler.New(cfg)
	if err != nil {
		return err
	}
	rec, err := ledger.NewRecorder(day0, l, cluster, s, ledger.Options{})
	if err != nil {
		return err
	}
	jobs := workload(seed, day0)
	fmt.Fprintf(w, "Sluice quickstart: %d nodes, %d GPUs, %d jobs from %d users over %s\n", len(s.Nodes()), totalGPUs(s), len(jobs), len(users), day0.Format("Mon 2 Jan 2006"))
	if keep {
		fmt.Fprintf(w, "ledger %s: run %d (usage from earlier runs shapes fair-share)\n\n", path, runs+1)
	} else {
		fmt.Fprintf(w, "ledger in a temporary file (pass -ledger PATH to keep it across runs)\n\n")
	}

	nextSnap := day0.Add(time.Hour)
	sprioShown := false
	var obsErr error
	res, err := sim.Run(s, &sim.SliceSource{Jobs: jobs}, sim.Options{
		OnCycle: func(s *scheduler.Scheduler, c scheduler.Cycle) {
			if err := rec.Observe(c.Now, c); err != nil && obsErr == nil {
				obsErr = err
			}
			if c.Now.Before(nextSnap) {
				return
			}
			squeue(w, s, c)
			if !sprioShown && len(c.Pending) >= 3 {
				fmt.Fprintf(w, "== sprio at %s (weighted factors of the pending jobs)\n", c.Now.Format("15:04"))
				fmt.Fprintln(w, s.Sprio(priority.SprioFormat{}))
				sprioShown = true
				explain(w, s, c, runtimeFraction(l))
			}
			for !nextSnap.After(c.Now) {
				nextSnap = nextSnap.Add(every)
			}
		},
	})
	if err != nil {
		return err
	}
	if obsErr != nil {
		return obsErr
	}
	summary(w, s, res)
	if err := reports(w, l, s, day0, res.End); err != nil {
		return err
	}
	if err := tasksDemo(w, res.End); err != nil {
		return err
	}
	if err := limitHeld(w); err != nil {
		return err
	}
	fmt.Fprintln(w)
	return allocatedIdle(w)
}

// resume reads a kept ledger: the day after its last job, the next job ID,
// and how many days it has seen.
func resume(l accounting.Ledger) (day0 time.Time, firstID scheduler.JobID, runs int, err error) {
	day0 = time.Date(2026, 3, 2, 8, 0, 0, 0, time.UTC)
	var last time.Time
	var maxID accounting.JobID
	err = l.View(func(tx accounting.Tx) error {
		caps, err := tx.Capacities(cluster)
		if err != nil && !errors.Is(err, accounting.ErrNotFound) {
			return err
		}
		runs = len(caps)
		return tx.Jobs(accounting.JobQuery{Cluster: cluster}, func(j accounting.JobRecord) bool {
			maxID = max(maxID, j.ID)
			if j.End.After(last) {
				last = j.End
			}
			return true
		})
	})
	if err != nil {
		return day0, 0, 0, fmt.Errorf("reading ledger: %w", err)
	}
	if !last.IsZero() {
		d := last.Truncate(24 * time.Hour).Add(24*time.Hour + 8*time.Hour)
		if d.After(day0) {
			day0 = d
		}
	}
	return day0, scheduler.JobID(maxID) + 1, runs, nil
}

// assocKeys lists the associations of users, in the order the ledger
// creates them: each account just before its first user.
func assocKeys() []accounting.AssocKey {
	var keys []accounting.AssocKey
	seen := map[string]bool{}
	for _, u := range users {
		if !seen[u.account] {
			seen[u.account] = true
			keys = append(keys, accounting.AssocKey{Cluster: cluster, Account: u.account})
		}
		keys = append(keys, accounting.AssocKey{Cluster: cluster, Account: u.account, User: u.user})
	}
	return keys
}

func addAssociations(l accounting.Ledger, now time.Time) error {
	return l.Update(func(tx accounting.Tx) error {
		for _, k := range assocKeys() {
			if _, err := tx.PutAssoc(now, accounting.Assoc{AssocKey: k}); err != nil {
				return err
			}
		}
		return nil
	})
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

// squeue prints the queue the way `squeue` does, plus GPU indices and,
// for pending jobs, the expected start from the backfill plan
// (`squeue --start`).
func squeue(w io.Writer, s *scheduler.Scheduler, c scheduler.Cycle) {
	fmt.Fprintf(w, "== squeue at %s (%d started this cycle)\n", c.Now.Format("15:04"), len(c.Starts))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "JOBID\tPARTITION\tNAME\tUSER\tACCOUNT\tST\tTIME\tNODES\tNODELIST(REASON)\tGPUS\tSTART")
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
		elapsed, where, devs, start := "0:00", "("+j.Reason.String()+")", "-", "-"
		if j.State == scheduler.JobRunning {
			elapsed = clock(c.Now.Sub(j.StartTime))
			where = strings.Join(j.Alloc.NodeNames(), ",")
			devs = gpuList(j.Alloc)
			if j.Backfilled {
				start = "backfilled"
			}
		} else if !j.ExpectedStart.IsZero() {
			start = j.ExpectedStart.Format("15:04")
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\t%d\t%s\t%s\t%s\n", j.ID, j.Partition, j.Spec.Name, j.Spec.User,
			j.Spec.Account, j.State.Short(), elapsed, max(j.Spec.Nodes, 1), where, devs, start)
	}
	tw.Flush()
	fmt.Fprintln(w)
}

// explain prints why the first job waiting for resources waits, when it
// will start, and what would let it start sooner (each answer verified by
// re-planning).
func explain(w io.Writer, s *scheduler.Scheduler, c scheduler.Cycle, fraction float64) {
	for _, p := range c.Pending {
		if p.Reason != policy.ReasonResources {
			continue
		}
		ex, err := s.Explain(c.Now, p.Job, scheduler.ExplainOptions{Counterfactuals: true, RuntimeFraction: fraction})
		if err != nil {
			fmt.Fprintf(w, "explain job %d: %v\n\n", p.Job, err)
			return
		}
		fmt.Fprintf(w, "== why is job %d pending? (scheduler.Explain)\n%s\n\n", p.Job, strings.TrimRight(ex.String(), "\n"))
		return
	}
}

// runtimeFraction is the mean fraction of their time limit that finished
// jobs in the ledger really ran (1 when there are none yet): how loose the
// users' estimates are, for Explain's early-start range.
func runtimeFraction(l accounting.Ledger) float64 {
	var sum float64
	n := 0
	_ = l.View(func(tx accounting.Tx) error {
		return tx.Jobs(accounting.JobQuery{Cluster: cluster}, func(j accounting.JobRecord) bool {
			if !j.End.IsZero() && !j.Start.IsZero() && j.TimeLimit > 0 {
				sum += min(1, float64(j.End.Sub(j.Start))/float64(j.TimeLimit))
				n++
			}
			return true
		})
	})
	if n == 0 {
		return 1
	}
	return sum / float64(n)
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
	backfilled := 0
	for _, r := range res.Jobs {
		states[r.State]++
		wait += r.Wait()
		gpuSec += float64(r.GPUs) * r.End.Sub(r.Start).Seconds()
		if j, ok := s.Job(r.ID); ok && j.Backfilled {
			backfilled++
		}
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
	fmt.Fprintf(w, "jobs done:        %d (%s), %d started by backfill, %d rejected\n", len(res.Jobs), strings.Join(parts, ", "), backfilled, res.Rejected)
	if len(res.Jobs) > 0 {
		fmt.Fprintf(w, "mean wait:        %s\n", (wait / time.Duration(len(res.Jobs))).Round(time.Second))
	}
	if span > 0 {
		gpus := totalGPUs(s)
		fmt.Fprintf(w, "GPU utilisation:  %.1f%% of %d GPUs over %s\n", 100*gpuSec/(float64(gpus)*span.Seconds()), gpus, span.Round(time.Minute))
	}
	fmt.Fprintln(w)
}

// reports prints what an operator reads from the ledger afterwards:
// sreport's cluster utilisation of GPUs and sshare's fair-share tree.
func reports(w io.Writer, l accounting.Ledger, s *scheduler.Scheduler, from, to time.Time) error {
	factors := map[[2]string]float64{}
	for _, r := range s.Shares() {
		if r.User != "" {
			factors[[2]string{r.Account, r.User}] = r.FairShare
		}
	}
	return l.View(func(tx accounting.Tx) error {
		u, err := accounting.ClusterUtilization(tx, cluster, from, to, to, "gres/gpu")
		if err != nil {
			return err
		}
		fmt.Fprintln(w, "== sreport cluster utilization (GPU hours, from the ledger)")
		if err := accounting.WriteUtilization(w, time.UTC, u); err != nil {
			return err
		}
		tree, err := accounting.ShareTree(tx, cluster, to)
		if err != nil {
			return err
		}
		fmt.Fprintln(w, "\n== sshare (decayed usage from the ledger, fair-share factors from the scheduler)")
		return accounting.WriteShareTree(w, tree, func(a accounting.Assoc) (float64, bool) {
			f, ok := factors[[2]string{a.Account, a.User}]
			return f, ok && a.User != ""
		})
	})
}
