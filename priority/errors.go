package priority

import "errors"

// Sentinel errors; test for them with errors.Is. Every error this package
// returns wraps one of these (or gres.ErrUnknownTRES for TRES names) and
// names the offending field, association or job.
var (
	// ErrInvalidConfig reports a bad Config, Cluster or TreeOptions field.
	ErrInvalidConfig = errors.New("invalid priority configuration")
	// ErrInvalidJob reports a Job whose facts are out of range.
	ErrInvalidJob = errors.New("invalid job priority input")
	// ErrInvalidTree reports an association tree that cannot be used:
	// no or several roots, a missing parent, a cycle, a duplicate name, or a
	// user association used as a parent.
	ErrInvalidTree = errors.New("invalid association tree")
	// ErrInvalidShares reports raw shares outside [0, MaxShares].
	ErrInvalidShares = errors.New("invalid shares")
	// ErrInvalidUsage reports usage that is negative, NaN or infinite, or a
	// per-TRES usage vector that does not fit the registry.
	ErrInvalidUsage = errors.New("invalid usage")
	// ErrUnknownAssociation reports an association index that is out of range.
	ErrUnknownAssociation = errors.New("unknown association")
	// ErrSyntax reports malformed PriorityFlags or PriorityWeightTRES text.
	ErrSyntax = errors.New("syntax error")
)
