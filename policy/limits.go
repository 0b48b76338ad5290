package policy

import (
	"fmt"
	"time"

	"github.com/sluicehq/sluice/gres"
)

// MaxLimitDuration bounds every duration limit and setting (100 years), so
// that minute arithmetic never overflows.
const MaxLimitDuration = 100 * 365 * 24 * time.Hour

// maxJobCount bounds job-count limits.
const maxJobCount = 1 << 31

// Limits are the limit families QOS and associations share (Slurm's
// resource_limits page). Every field's zero value means "not set", and an
// unset limit defers to the next level of the hierarchy (see Policy). Job
// counts are pointers so that a limit of 0 (hold everything) can be told
// from no limit: write new(0), new(20).
type Limits struct {
	// GrpTRES caps the TRES held by all running jobs of the group (the QOS,
	// or the association and its subtree) at any instant.
	GrpTRES TRESLimits
	// GrpTRESMins caps the group's accumulated (decayed) TRES-minutes, as
	// reported to Usage.SetUsed. In Safe mode (Config.SafeLimits) a job
	// starts only if its TRES × time limit also fits the budget.
	GrpTRESMins TRESLimits
	// GrpTRESRunMins caps the sum over running jobs of TRES × remaining
	// time limit, plus this job's TRES × time limit.
	GrpTRESRunMins TRESLimits
	// GrpJobs caps the number of running jobs of the group.
	GrpJobs *int
	// GrpSubmitJobs caps the number of pending plus running jobs of the
	// group; a submission past it is rejected.
	GrpSubmitJobs *int
	// GrpWall caps the group's accumulated (decayed) wall-clock minutes of
	// jobs, as reported to Usage.SetUsed. Zero is unset.
	GrpWall time.Duration
	// MaxTRESPerJob caps each job's TRES (node counts included:
	// MaxTRESPerJob=node=4 is Slurm's MaxNodes).
	MaxTRESPerJob TRESLimits
	// MaxTRESPerNode caps what a job may use on each of its nodes. The
	// node TRES is not allowed here.
	MaxTRESPerNode TRESLimits
	// MaxTRESMinsPerJob caps each job's TRES × time limit (in minutes).
	MaxTRESMinsPerJob TRESLimits
	// MaxWall caps each job's time limit (Slurm's MaxWallDurationPerJob).
	// Zero is unset.
	MaxWall time.Duration
}

// QOSLimits are a QOS's limits: the shared families plus the per-user and
// per-account ones only a QOS has.
type QOSLimits struct {
	Limits
	// MaxTRESPerUser caps the TRES held by one user's running jobs in the
	// QOS.
	MaxTRESPerUser TRESLimits
	// MaxTRESPerAccount caps the TRES held by one account's running jobs in
	// the QOS (jobs charged to that account; sub-accounts are separate).
	MaxTRESPerAccount TRESLimits
	// MaxJobsPerUser caps one user's running jobs in the QOS (sacctmgr's
	// MaxJobs/MaxJobsPU). It shadows the association's MaxJobs.
	MaxJobsPerUser *int
	// MaxJobsPerAccount caps one account's running jobs in the QOS.
	MaxJobsPerAccount *int
	// MaxSubmitJobsPerUser caps one user's pending plus running jobs in the
	// QOS; it shadows the association's MaxSubmitJobs.
	MaxSubmitJobsPerUser *int
	// MaxSubmitJobsPerAccount caps one account's pending plus running jobs
	// in the QOS.
	MaxSubmitJobsPerAccount *int
	// MinTRESPerJob is the least TRES a job of the QOS must ask for.
	MinTRESPerJob TRESLimits
}

// AssocLimits are an association's limits: the shared families plus the
// per-association job counts. Grp limits of an account association cover
// its whole subtree; Max limits not set on a user association are
// inherited from the closest ancestor that sets them (Slurm's rule for new
// associations).
type AssocLimits struct {
	Limits
	// MaxJobs caps the user association's running jobs.
	MaxJobs *int
	// MaxSubmitJobs caps the user association's pending plus running jobs.
	MaxSubmitJobs *int
}

func validCount(field string, p *int) error {
	if p != nil && (*p < 0 || *p > maxJobCount) {
		return fmt.Errorf("%s %d out of range [0, %d]", field, *p, maxJobCount)
	}
	return nil
}

func validDuration(field string, d time.Duration) error {
	if d < 0 || d > MaxLimitDuration {
		return fmt.Errorf("%s %v out of range [0, %v]", field, d, MaxLimitDuration)
	}
	return nil
}

func (l *Limits) validate() error {
	for _, c := range []struct {
		f string
		p *int
	}{{"GrpJobs", l.GrpJobs}, {"GrpSubmitJobs", l.GrpSubmitJobs}} {
		if err := validCount(c.f, c.p); err != nil {
			return err
		}
	}
	if err := validDuration("GrpWall", l.GrpWall); err != nil {
		return err
	}
	if err := validDuration("MaxWall", l.MaxWall); err != nil {
		return err
	}
	if _, ok := l.MaxTRESPerNode.Get(gres.Node); ok {
		return fmt.Errorf("MaxTRESPerNode: node is not a per-node TRES (use MaxTRESPerJob=node=N)")
	}
	return nil
}

// Validate checks the limits and returns an error naming the first bad
// field.
func (l *QOSLimits) Validate() error {
	if err := l.Limits.validate(); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	for _, c := range []struct {
		f string
		p *int
	}{{"MaxJobsPerUser", l.MaxJobsPerUser}, {"MaxJobsPerAccount", l.MaxJobsPerAccount},
		{"MaxSubmitJobsPerUser", l.MaxSubmitJobsPerUser}, {"MaxSubmitJobsPerAccount", l.MaxSubmitJobsPerAccount}} {
		if err := validCount(c.f, c.p); err != nil {
			return fmt.Errorf("%w: %w", ErrInvalidConfig, err)
		}
	}
	for id, lo := range l.MinTRESPerJob.All() {
		if hi, ok := l.MaxTRESPerJob.Get(id); ok && lo > hi {
			return fmt.Errorf("%w: MinTRESPerJob %d above MaxTRESPerJob %d for TRES %d: no job could run", ErrInvalidConfig, lo, hi, id)
		}
	}
	return nil
}

// Validate checks the limits and returns an error naming the first bad
// field.
func (l *AssocLimits) Validate() error {
	if err := l.Limits.validate(); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	for _, c := range []struct {
		f string
		p *int
	}{{"MaxJobs", l.MaxJobs}, {"MaxSubmitJobs", l.MaxSubmitJobs}} {
		if err := validCount(c.f, c.p); err != nil {
			return fmt.Errorf("%w: %w", ErrInvalidConfig, err)
		}
	}
	return nil
}
