package priority

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestQueueOrder(t *testing.T) {
	at := func(sec int) time.Time { return t0.Add(time.Duration(sec) * time.Second) }
	keys := []QueueKey{
		{PartitionTier: 1, Priority: 900, Submit: at(5), JobID: 10, ArrayTaskID: NoArrayTask},
		{PartitionTier: 2, Priority: 100, Submit: at(9), JobID: 11, ArrayTaskID: NoArrayTask},
		{PartitionTier: 1, Priority: 900, Submit: at(4), JobID: 12, ArrayTaskID: NoArrayTask},
		{PartitionTier: 1, Priority: 900, Submit: at(4), JobID: 9, ArrayTaskID: NoArrayTask},
		{PartitionTier: 1, Priority: 950, Submit: at(99), JobID: 13, ArrayTaskID: NoArrayTask},
		{PartitionTier: 1, Priority: 900, Submit: at(4), JobID: 9, ArrayTaskID: 3},
		// Same second, later within it: seconds only, so job ID decides.
		{PartitionTier: 1, Priority: 900, Submit: at(4).Add(900 * time.Millisecond), JobID: 8, ArrayTaskID: NoArrayTask},
	}
	want := []uint64{11, 13, 8, 9, 9, 12, 10}
	r := rand.New(rand.NewPCG(7, 7))
	for range 20 {
		r.Shuffle(len(keys), func(i, j int) { keys[i], keys[j] = keys[j], keys[i] })
		SortQueue(keys)
		var got []uint64
		for _, k := range keys {
			got = append(got, k.JobID)
		}
		require.Equal(t, want, got)
		assert.Equal(t, uint32(3), keys[3].ArrayTaskID, "array task 3 before the non-array record of the same ID")
	}
	for i := range keys {
		assert.Equal(t, 0, CompareQueue(&keys[i], &keys[i]))
		for j := i + 1; j < len(keys); j++ {
			assert.Negative(t, CompareQueue(&keys[i], &keys[j]))
			assert.Positive(t, CompareQueue(&keys[j], &keys[i]))
		}
	}
}

func TestSortQueueFunc(t *testing.T) {
	type pending struct {
		name string
		key  QueueKey
	}
	jobs := []pending{
		{"low", QueueKey{Priority: 1, JobID: 1}},
		{"high", QueueKey{Priority: 5, JobID: 2}},
		{"tier", QueueKey{PartitionTier: 3, Priority: 0, JobID: 3}},
	}
	SortQueueFunc(jobs, func(p *pending) QueueKey { return p.key })
	names := slices.Collect(func(yield func(string) bool) {
		for _, j := range jobs {
			if !yield(j.name) {
				return
			}
		}
	})
	assert.Equal(t, []string{"tier", "high", "low"}, names)
}
