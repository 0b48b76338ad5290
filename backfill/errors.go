package backfill

import "errors"

// Sentinel errors. Errors returned by this package wrap one of these (test
// with errors.Is) and name the offending field and value.
var (
	// ErrInvalidNode reports a bad node index or node state (capacity,
	// free amounts).
	ErrInvalidNode = errors.New("backfill: invalid node")
	// ErrInvalidTime reports a bad time or duration: an end not after its
	// start, a non-positive wall time, a time before the profile's origin
	// where none is allowed.
	ErrInvalidTime = errors.New("backfill: invalid time")
	// ErrInvalidRequest reports a malformed placement request (node count,
	// per-node vector, allowed node set, chooser result).
	ErrInvalidRequest = errors.New("backfill: invalid request")
	// ErrDuplicateID reports an ID that is already held in the profile or
	// appears twice in one input.
	ErrDuplicateID = errors.New("backfill: duplicate ID")
	// ErrUnknownID reports an ID that the profile does not hold.
	ErrUnknownID = errors.New("backfill: unknown ID")
	// ErrOverAllocation reports a reservation that does not fit the free
	// resources of its nodes for its whole interval, or running jobs whose
	// usage exceeds a node's capacity.
	ErrOverAllocation = errors.New("backfill: over-allocation")
	// ErrInvalidConfig reports a planner configuration value out of range,
	// or a profile that does not match the planner's configuration.
	ErrInvalidConfig = errors.New("backfill: invalid config")
	// ErrInvalidJob reports a pending job with a bad field.
	ErrInvalidJob = errors.New("backfill: invalid job")
)
