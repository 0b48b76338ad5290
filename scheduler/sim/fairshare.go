package sim

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/sluicehq/sluice/priority"
	"github.com/sluicehq/sluice/scheduler"
)

// DefaultHalfLife is Slurm's PriorityDecayHalfLife default (7 days), the
// scheduler's DefaultDecayHalfLife.
const DefaultHalfLife = scheduler.DefaultDecayHalfLife

// RootAccount names the root of the association tree FairShare builds.
const RootAccount = "root"

// FairShare is the fair-share usage ledger of a simulation: a
// scheduler.FairShareSource whose association tree is built from the jobs
// the simulation submits, and whose usage is what their runs consumed,
// decayed with a half-life as Slurm's PriorityDecayHalfLife does.
//
// The tree is flat and even: every account (JobSpec.Account) is a child of
// RootAccount with one share, every user (JobSpec.User) one share in each
// account it submits to. Usage is charged continuously while a job runs,
// at the rate of its allocated CPUs (CPU-seconds: Slurm's billing when no
// TRESBillingWeights are set). Jobs without a user or an account are not
// in the tree (their fair-share factor is 0).
//
// Give one FairShare to both the scheduler's PriorityConfig and
// Options.FairShare of a single Run; Policy.Apply does this for the
// Priority policy.
type FairShare struct {
	halfLife time.Duration
	assocs   []*usage // the user associations, in (account, user) order
	running  map[scheduler.JobID]charge
	tree     []priority.Association // FairShareTree's result, reused
}

type assocKey struct{ account, user string }

// charge is what a running job adds to its association's usage rate.
type charge struct {
	u    *usage
	rate float64 // CPUs
}

// usage is one user association's decayed usage as of at, with the rate
// (CPUs) at which it grows while its jobs run.
type usage struct {
	key   assocKey
	value float64
	at    time.Time
	rate  float64
}

// ErrInvalidFairShare reports a FairShare that cannot be built.
var ErrInvalidFairShare = errors.New("sim: invalid fair-share configuration")

// NewFairShare returns an empty ledger decaying usage with halfLife (0
// means DefaultHalfLife).
func NewFairShare(halfLife time.Duration) (*FairShare, error) {
	if halfLife < 0 || halfLife > scheduler.MaxTimeLimit {
		return nil, fmt.Errorf("%w: half-life %v out of range", ErrInvalidFairShare, halfLife)
	}
	if halfLife == 0 {
		halfLife = DefaultHalfLife
	}
	return &FairShare{halfLife: halfLife, running: map[scheduler.JobID]charge{}}, nil
}

// advance brings u to now: its value decays and grows by what its
// running jobs consumed since u.at, decayed to now.
func (f *FairShare) advance(u *usage, now time.Time) {
	if !now.After(u.at) {
		return
	}
	if u.rate == 0 && u.value == 0 {
		u.at = now
		return
	}
	h := f.halfLife.Seconds()
	dt := now.Sub(u.at).Seconds()
	d := math.Exp2(-dt / h)
	u.value = u.value*d + u.rate*h/math.Ln2*(1-d)
	u.at = now
}

func (f *FairShare) submitted(now time.Time, spec scheduler.JobSpec) {
	k, ok := keyOf(spec)
	if !ok {
		return
	}
	f.lookup(k, now)
}

// lookup returns k's usage, adding the association when it is new.
func (f *FairShare) lookup(k assocKey, now time.Time) *usage {
	i, found := slices.BinarySearchFunc(f.assocs, k, compareKey)
	if found {
		return f.assocs[i]
	}
	u := &usage{key: k, at: now}
	f.assocs = slices.Insert(f.assocs, i, u)
	return u
}

// compareKey orders associations by account, then user.
func compareKey(u *usage, k assocKey) int {
	if c := strings.Compare(u.key.account, k.account); c != 0 {
		return c
	}
	return strings.Compare(u.key.user, k.user)
}

func (f *FairShare) started(now time.Time, id scheduler.JobID, spec scheduler.JobSpec, cpus int64) {
	k, ok := keyOf(spec)
	if !ok {
		return
	}
	u := f.lookup(k, now)
	f.advance(u, now)
	u.rate += float64(cpus)
	f.running[id] = charge{u: u, rate: float64(cpus)}
}

func (f *FairShare) ended(now time.Time, id scheduler.JobID) {
	c, ok := f.running[id]
	if !ok {
		return
	}
	f.advance(c.u, now)
	c.u.rate = max(c.u.rate-c.rate, 0)
	delete(f.running, id)
}

func keyOf(spec scheduler.JobSpec) (assocKey, bool) {
	if spec.User == "" || spec.Account == "" || spec.Account == RootAccount {
		return assocKey{}, false
	}
	return assocKey{account: spec.Account, user: spec.User}, true
}

// FairShareTree returns the association tree with every association's
// decayed usage (its subtree's, in CPU-seconds) as of now, accounts and
// users in name order. It implements scheduler.FairShareSource; the slice
// is reused by the next call.
func (f *FairShare) FairShareTree(now time.Time) ([]priority.Association, error) {
	assocs := f.assocs
	out := append(f.tree[:0], priority.Association{Account: RootAccount, Shares: 1})
	for i := 0; i < len(assocs); {
		acct := assocs[i].key.account
		ai := len(out)
		out = append(out, priority.Association{Account: acct, Parent: RootAccount, Shares: 1})
		for ; i < len(assocs) && assocs[i].key.account == acct; i++ {
			u := assocs[i]
			f.advance(u, now)
			v := u.value
			out = append(out, priority.Association{Account: acct, User: u.key.user, Shares: 1, Usage: v})
			out[ai].Usage += v
			out[0].Usage += v
		}
	}
	f.tree = out
	return out, nil
}
