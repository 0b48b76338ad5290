package priority

import (
	"cmp"
	"slices"
	"time"
)

// NoArrayTask is QueueKey.ArrayTaskID for a job that is not an array task.
const NoArrayTask = ^uint32(0)

// QueueKey holds what Slurm's job queue is ordered by (sort_job_queue2),
// after the scheduler's own earlier keys (preemptors first, jobs in
// reservations first), which belong to the scheduler and policy packages.
type QueueKey struct {
	// PartitionTier is the partition's PriorityTier; higher goes first.
	PartitionTier uint16
	// Priority is the job's priority for this partition; higher goes first.
	Priority uint32
	// Submit is the submit time, compared in whole seconds as Slurm stores
	// it; earlier goes first.
	Submit time.Time
	// JobID is the job ID, or the array master's ID for an array task;
	// lower goes first.
	JobID uint64
	// ArrayTaskID is the array task ID (NoArrayTask for other jobs); lower
	// goes first.
	ArrayTaskID uint32
}

// CompareQueue orders two queue entries as Slurm evaluates them: partition
// PriorityTier descending, then priority descending, then submit time
// (whole seconds) ascending, then job ID ascending, then array task ID
// ascending. It returns a negative number when a goes first, 0 when the
// keys are equal, positive otherwise. Distinct jobs never compare equal, so
// the order is total and deterministic.
func CompareQueue(a, b *QueueKey) int {
	if c := cmp.Compare(b.PartitionTier, a.PartitionTier); c != 0 {
		return c
	}
	if c := cmp.Compare(b.Priority, a.Priority); c != 0 {
		return c
	}
	if c := cmp.Compare(a.Submit.Unix(), b.Submit.Unix()); c != 0 {
		return c
	}
	if c := cmp.Compare(a.JobID, b.JobID); c != 0 {
		return c
	}
	return cmp.Compare(a.ArrayTaskID, b.ArrayTaskID)
}

// SortQueue sorts keys into evaluation order (see CompareQueue). Equal
// keys keep their relative order.
func SortQueue(keys []QueueKey) {
	SortQueueFunc(keys, func(k *QueueKey) QueueKey { return *k })
}

// SortQueueFunc sorts any slice into evaluation order (see CompareQueue),
// reading each element's QueueKey through key once. It is stable, so
// elements with equal keys (the same job listed twice) keep their order.
// It allocates O(len(items)) scratch space.
func SortQueueFunc[T any](items []T, key func(*T) QueueKey) {
	if len(items) < 2 {
		return
	}
	pk := make([]packedKey, len(items))
	for i := range items {
		k := key(&items[i])
		pk[i] = packedKey{
			// Complemented, so ascending order puts higher tiers and
			// priorities first.
			hi:   ^(uint64(k.PartitionTier)<<32 | uint64(k.Priority)),
			sec:  k.Submit.Unix(),
			id:   k.JobID,
			task: k.ArrayTaskID,
			idx:  i,
		}
	}
	slices.SortFunc(pk, func(a, b packedKey) int {
		switch {
		case a.hi != b.hi:
			return cmp.Compare(a.hi, b.hi)
		case a.sec != b.sec:
			return cmp.Compare(a.sec, b.sec)
		case a.id != b.id:
			return cmp.Compare(a.id, b.id)
		case a.task != b.task:
			return cmp.Compare(a.task, b.task)
		}
		return cmp.Compare(a.idx, b.idx)
	})
	sorted := make([]T, len(items))
	for i, p := range pk {
		sorted[i] = items[p.idx]
	}
	copy(items, sorted)
}

// packedKey is a QueueKey flattened for fast comparison.
type packedKey struct {
	hi   uint64
	sec  int64
	id   uint64
	task uint32
	idx  int
}
