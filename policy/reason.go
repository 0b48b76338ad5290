package policy

import (
	"fmt"
	"strings"
)

// Reason is why a job is pending (or why it ended), with Slurm's names, so
// that a Slurm user reads the same word squeue would print. The zero value
// is ReasonNone: not evaluated yet.
type Reason uint16

// Reason codes. The String of each is the Slurm spelling (see Slurm's
// job_reason_codes documentation); the comment says when Sluice sets it.
const (
	// ReasonNone: the job has not been evaluated by a scheduling cycle yet.
	ReasonNone Reason = iota
	// ReasonPriority: a higher-priority job in the same partition (or
	// the same advance reservation) is blocked, and this job waits behind
	// it.
	ReasonPriority
	// ReasonResources: the job is next in line in its partition but the
	// resources it needs are in use, held back for a blocked job of
	// another partition, or on too few nodes that are up.
	ReasonResources
	// ReasonBeginTime: the job's begin time has not been reached.
	ReasonBeginTime
	// ReasonDependency: a dependency of the job is not yet satisfied.
	ReasonDependency
	// ReasonDependencyNeverSatisfied: a dependency can never be satisfied.
	ReasonDependencyNeverSatisfied
	// ReasonPartitionDown: the job's partition is DOWN (queued, not started).
	ReasonPartitionDown
	// ReasonPartitionInactive: the job's partition is INACTIVE.
	ReasonPartitionInactive
	// ReasonPartitionNodeLimit: the job's node count is outside the
	// partition's MinNodes/MaxNodes, or too few of its nodes are usable.
	ReasonPartitionNodeLimit
	// ReasonPartitionTimeLimit: the job's time limit exceeds the
	// partition's MaxTime.
	ReasonPartitionTimeLimit
	// ReasonReqNodeNotAvail: no node able to hold the job is up (they are
	// down, drained or failed), so it cannot run until one returns; or,
	// in explanations, nodes it fits are reserved for others.
	ReasonReqNodeNotAvail
	// ReasonReservation: the job waits for its advance reservation.
	ReasonReservation
	// ReasonLicenses: a license the job needs is not available.
	ReasonLicenses
	// ReasonJobHeldUser: held by its user.
	ReasonJobHeldUser
	// ReasonJobHeldAdmin: held by an administrator.
	ReasonJobHeldAdmin
	// ReasonBadConstraints: the job can never run as requested.
	ReasonBadConstraints
	// ReasonQOSNotAllowed: the QOS may not be used in this partition or
	// by this association.
	ReasonQOSNotAllowed
	// ReasonAccountNotAllowed: the account may not use this partition.
	ReasonAccountNotAllowed
	// ReasonNodeDown: the job ended because a node it ran on failed.
	ReasonNodeDown
	// ReasonTimeLimit: the job ended because it reached its time limit.
	ReasonTimeLimit
	// ReasonLaunchFailRequeue: the job was requeued because its launch failed.
	ReasonLaunchFailRequeue
	// ReasonPreempted: the job was preempted (ended, or requeued and
	// waiting again) to make room for a job allowed to preempt it.
	ReasonPreempted
	// ReasonReqNodeNotAvailMaint: nodes the job could start on now are
	// held by a MAINT reservation within its time limit. Slurm's reason
	// code is ReqNodeNotAvail with this description, which squeue prints
	// together: "ReqNodeNotAvail, Reserved for maintenance".
	ReasonReqNodeNotAvailMaint
	numBaseReasons
)

var reasonNames = [numBaseReasons]string{
	ReasonNone:                     "None",
	ReasonPriority:                 "Priority",
	ReasonResources:                "Resources",
	ReasonBeginTime:                "BeginTime",
	ReasonDependency:               "Dependency",
	ReasonDependencyNeverSatisfied: "DependencyNeverSatisfied",
	ReasonPartitionDown:            "PartitionDown",
	ReasonPartitionInactive:        "PartitionInactive",
	ReasonPartitionNodeLimit:       "PartitionNodeLimit",
	ReasonPartitionTimeLimit:       "PartitionTimeLimit",
	ReasonReqNodeNotAvail:          "ReqNodeNotAvail",
	ReasonReservation:              "Reservation",
	ReasonLicenses:                 "Licenses",
	ReasonJobHeldUser:              "JobHeldUser",
	ReasonJobHeldAdmin:             "JobHeldAdmin",
	ReasonBadConstraints:           "BadConstraints",
	ReasonQOSNotAllowed:            "QOSNotAllowed",
	ReasonAccountNotAllowed:        "AccountNotAllowed",
	ReasonNodeDown:                 "NodeDown",
	ReasonTimeLimit:                "TimeLimit",
	ReasonLaunchFailRequeue:        "launch_failed_requeued",
	ReasonPreempted:                "Preempted",
	ReasonReqNodeNotAvailMaint:     "ReqNodeNotAvail, Reserved for maintenance",
}

// String returns the Slurm spelling of r.
func (r Reason) String() string {
	switch {
	case r < numBaseReasons:
		return reasonNames[r]
	case r < numReasons:
		return limitReasonNames[r-numBaseReasons]
	}
	return fmt.Sprintf("Reason(%d)", uint16(r))
}

// Blocking reports whether a pending job with this reason holds back
// lower-priority jobs of its partition in a strict-priority pass: one
// that waits for nodes in use (Resources) or reserved for maintenance
// (ReqNodeNotAvail, Reserved for maintenance), as in Slurm's main
// scheduler. Jobs pending for their own constraints (begin time,
// partition limits, dependencies, nodes down) never block others.
func (r Reason) Blocking() bool { return r == ReasonResources || r == ReasonReqNodeNotAvailMaint }

// ParseReason returns the Reason whose Slurm spelling is s (case-insensitive).
func ParseReason(s string) (Reason, error) {
	for r := range numReasons {
		if strings.EqualFold(r.String(), s) {
			return r, nil
		}
	}
	return ReasonNone, fmt.Errorf("policy: %w %q", ErrUnknownReason, s)
}

// IsLimit reports whether r is an accounting-policy limit reason (the
// QOS…, Assoc…, Max…PerAccount family, QOSUsageThreshold and the generic
// QOS/association limit reasons): the job waits for usage to drop or for
// a limit to be raised, not for nodes.
func (r Reason) IsLimit() bool {
	switch {
	case r < numBaseReasons, r >= numReasons:
		return false
	}
	switch r {
	case ReasonInvalidQOS, ReasonInvalidAccount, ReasonJobArrayTaskLimit, ReasonReservationDeleted,
		ReasonReservationInvalid, ReasonPartitionConfig, ReasonJobHoldMaxRequeue, ReasonAllocatedIdle:
		return false
	}
	return true
}

// Reasons returns every defined reason in code order.
func Reasons() []Reason {
	out := make([]Reason, numReasons)
	for i := range out {
		out[i] = Reason(i)
	}
	return out
}
