package sim

import (
	"errors"
	"fmt"
	"time"

	"github.com/sluicehq/sluice/backfill"
	"github.com/sluicehq/sluice/priority"
	"github.com/sluicehq/sluice/scheduler"
)

// priorityCalcPeriod is Slurm's PriorityCalcPeriod default.
const priorityCalcPeriod = 5 * time.Minute

// classicWindow is the backfill window of the classic policies: the
// planner's largest (30 days), so that the jobs that should get a
// reservation always do (the textbook algorithms have no window).
const classicWindow = 30 * 24 * time.Hour

// EstimateOnce is the scheduler's EstimateInterval under EASY: the
// window's length, so that a pending job's expected start is computed
// once, in its first cycle, and again only when it comes without the job
// starting. The simulation reports first estimates (ETAStats) and nothing
// of later ones, and every decision is the same whatever the interval, so
// the results are those of estimates refreshed in every pass — without
// the search for every waiting job's start in every cycle. Set the
// scheduler's EstimateInterval to 0 after Apply to refresh them all.
const EstimateOnce = classicWindow

// Policy names a scheduling policy of the simulation literature, as the
// simulate command spells it. Apply maps it onto the scheduler's
// configuration: the simulator itself never schedules.
type Policy string

// Policies.
const (
	// FCFS is strict first come, first served: the queue in submit order,
	// and nothing starts ahead of a job that waits for resources (the
	// scheduler's default: no priority, no backfill).
	FCFS Policy = "fcfs"
	// EASY is EASY backfilling: FCFS order, a reservation for the first
	// job that cannot start, and any later job may start if it does not
	// delay that reservation (the scheduler's EASY backfill with k = 1, a
	// 1 s resolution and a 30-day window, so planning is exact; expected
	// starts computed once per job, see EstimateOnce).
	EASY Policy = "easy"
	// Conservative is conservative backfilling: every waiting job gets a
	// reservation and a job may start early only if it delays none (1 s
	// resolution, 30-day window). Reservations take the lowest-index
	// nodes that fit, not busy nodes first (bf_busy_nodes, which EASY
	// uses): the scheduler re-plans at every cycle, and a busy-first
	// choice depends on which nodes are busy at the cycle's instant, so
	// a later cycle books other nodes than an earlier one did and can
	// push a promised start back (on KTH-SP2 with exact run times, 10 %
	// of the jobs started after their first estimate, by up to hours).
	// Lowest-index reservations are reproduced from one cycle to the
	// next, so with exact run times every job starts exactly when it was
	// first promised (the test TestETAExactConservativeIsZero).
	Conservative Policy = "conservative"
	// Priority is Slurm's multifactor priority order, with the weights
	// of a typical site: PriorityWeightFairshare 10000, PriorityWeightAge
	// 1000 (PriorityMaxAge 7 days), PriorityWeightJobSize 1000 (larger
	// jobs first, Slurm's default), the other weights 0; fair-share from a
	// FairShare ledger of the simulation's own usage (half-life 7 days),
	// priorities recomputed every 5 minutes (PriorityCalcPeriod) with a
	// scheduling cycle at each recomputation while jobs wait; and Slurm's
	// backfill with its defaults (every tested job reserved, bf_window 1
	// day, bf_resolution 60 s): the usual configuration of a Slurm site.
	Priority Policy = "priority"
)

// Policies lists the policies Apply knows, in the order the simulate
// command documents them.
func Policies() []Policy { return []Policy{FCFS, EASY, Conservative, Priority} }

// ErrUnknownPolicy reports a policy name Apply does not know.
var ErrUnknownPolicy = errors.New("sim: unknown policy")

// ErrPolicyUnsupported reports a known policy that the scheduler cannot
// run yet.
var ErrPolicyUnsupported = errors.New("sim: policy not yet supported by the scheduler")

// Apply configures cfg (and, for policies that need the simulator's help,
// opt) for policy p. It returns ErrUnknownPolicy for a name it does not
// know.
func (p Policy) Apply(cfg *scheduler.Config, opt *Options) error {
	switch p {
	case FCFS:
		cfg.Priority, cfg.Backfill = nil, nil
		return nil
	case EASY:
		cfg.Priority = nil
		cfg.Backfill = &backfill.Config{Mode: backfill.EASY, Reservations: 1, Window: classicWindow, Resolution: time.Second, BusyNodes: true}
		cfg.EstimateInterval = EstimateOnce
		return nil
	case Conservative:
		cfg.Priority = nil
		cfg.Backfill = &backfill.Config{Mode: backfill.Conservative, Window: classicWindow, Resolution: time.Second}
		return nil
	case Priority:
		fs, err := NewFairShare(DefaultHalfLife)
		if err != nil {
			return err
		}
		cfg.Priority = &scheduler.PriorityConfig{
			Engine: priority.Config{
				Weights: priority.Weights{Age: 1000, FairShare: 10000, JobSize: 1000},
			},
			CalcPeriod: priorityCalcPeriod,
			FairShare:  fs,
		}
		cfg.Backfill = &backfill.Config{}
		opt.FairShare = fs
		opt.Interval = priorityCalcPeriod
		return nil
	}
	return fmt.Errorf("%w: %q (want one of fcfs, easy, conservative, priority)", ErrUnknownPolicy, string(p))
}
