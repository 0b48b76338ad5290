package policy

import "errors"

// Sentinel errors. Every error this package returns wraps one of them (use
// errors.Is) and names the offending entity, field or value.
var (
	// ErrInvalidConfig reports a QOS, association, partition, reservation
	// or cluster setting that Validate rejects.
	ErrInvalidConfig = errors.New("invalid policy config")
	// ErrUnknownQOS reports a name that is not a configured QOS.
	ErrUnknownQOS = errors.New("unknown QOS")
	// ErrUnknownPartition reports a name that is not a configured partition.
	ErrUnknownPartition = errors.New("unknown partition")
	// ErrUnknownAccount reports an account, or a user/account pair, with no
	// association.
	ErrUnknownAccount = errors.New("unknown account or association")
	// ErrUnknownReservation reports a name that is not a reservation.
	ErrUnknownReservation = errors.New("unknown reservation")
	// ErrUnknownReason reports a string that is not a Slurm reason.
	ErrUnknownReason = errors.New("unknown reason")
	// ErrUnknownJob reports a job the caller's records do not hold (a
	// dependency on a job that never existed, a usage update for a job
	// never added).
	ErrUnknownJob = errors.New("unknown job")
	// ErrDuplicateJob reports a job added twice to the same counters.
	ErrDuplicateJob = errors.New("job already counted")
	// ErrNotAllowed reports an account, QOS or user that may not use a
	// partition, QOS or reservation.
	ErrNotAllowed = errors.New("not allowed")
	// ErrLimit reports a job rejected at submission by a limit (a
	// MaxSubmit*/GrpSubmitJobs limit, or any limit of a QOS with
	// DenyOnLimit). The error is a *LimitError carrying the Blocker.
	ErrLimit = errors.New("job violates a limit")
	// ErrCyclicPreempt reports QOS Preempt lists that form a cycle.
	ErrCyclicPreempt = errors.New("cyclic QOS preempt lists")
	// ErrReservationOverlap reports two reservations that share nodes at
	// the same time while neither has the OVERLAP or MAINT flag.
	ErrReservationOverlap = errors.New("reservations overlap")
	// ErrNoNodes reports a reservation by node count for which the
	// caller's node chooser found too few nodes.
	ErrNoNodes = errors.New("not enough nodes")
	// ErrNodesBusy reports a reservation on nodes where jobs still run
	// when its window opens, without the IGNORE_JOBS flag (Slurm's
	// "Requested nodes are busy").
	ErrNodesBusy = errors.New("requested nodes are busy")
	// ErrSyntax reports a malformed string (dependency, array, duration,
	// flag or TRES-limit list).
	ErrSyntax = errors.New("syntax error")
	// ErrTooLarge reports an input or expansion beyond the documented
	// bounds (array index past MaxArraySize, too many reservation windows).
	ErrTooLarge = errors.New("too large")
	// ErrInvalidRequest reports a job request with impossible values
	// (negative counts, a vector from another registry).
	ErrInvalidRequest = errors.New("invalid request")
)
