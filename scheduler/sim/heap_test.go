package sim

import (
	"container/heap"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/scheduler"
)

// refQueue is the event queue as container/heap orders it, the reference
// eventQueue's own push and pop must follow step for step.
type refQueue []event

func (q refQueue) Len() int           { return len(q) }
func (q refQueue) Less(i, j int) bool { return eventQueue(q).less(i, j) }
func (q refQueue) Swap(i, j int)      { q[i], q[j] = q[j], q[i] }
func (q *refQueue) Push(x any)        { *q = append(*q, x.(event)) }
func (q *refQueue) Pop() any {
	old := *q
	e := old[len(old)-1]
	*q = old[:len(old)-1]
	return e
}

// TestEventQueueMatchesContainerHeap checks that events come out of
// eventQueue exactly as out of container/heap, ties included: events
// equal in (time, job, kind) that differ only in gen (a job's end events
// of different runs) must keep the order the simulator has always seen.
func TestEventQueueMatchesContainerHeap(t *testing.T) {
	base := time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC)
	for seed := range uint64(20) {
		rng := rand.New(rand.NewPCG(seed, 7))
		var q eventQueue
		var ref refQueue
		for step := range 1000 {
			if rng.IntN(3) != 0 || q.Len() == 0 {
				// few distinct times, jobs and kinds: many ties
				e := event{
					at:   base.Add(time.Duration(rng.IntN(8)) * time.Second),
					id:   scheduler.JobID(1 + rng.IntN(4)),
					kind: eventKind(rng.IntN(4)),
					gen:  uint32(step),
				}
				q.push(e)
				heap.Push(&ref, e)
				continue
			}
			got, want := q.pop(), heap.Pop(&ref).(event)
			require.Equal(t, want, got, "seed %d step %d", seed, step)
			require.Equal(t, []event(ref), []event(q), "seed %d step %d", seed, step)
		}
		for q.Len() > 0 {
			require.Equal(t, heap.Pop(&ref).(event), q.pop(), "seed %d drain", seed)
		}
		require.Zero(t, ref.Len())
	}
}
