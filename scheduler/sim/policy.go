package sim

import (
	"errors"
	"fmt"

	"github.com/sluicehq/sluice/scheduler"
)

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
	// delay that reservation.
	EASY Policy = "easy"
	// Conservative is conservative backfilling: every waiting job gets a
	// reservation and a job may start early only if it delays none.
	Conservative Policy = "conservative"
	// Priority is Slurm's multifactor priority order.
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
		cfg.Priority = nil
		return nil
	case EASY, Conservative, Priority:
		return fmt.Errorf("%w: %q", ErrPolicyUnsupported, string(p))
	}
	return fmt.Errorf("%w: %q (want one of fcfs, easy, conservative, priority)", ErrUnknownPolicy, string(p))
}
