package scheduler

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/backfill"
	"github.com/sluicehq/sluice/policy"
)

// An administrative change rebuilds only what it touches: a QOS change
// keeps the shapes, the kept backfill profile and plan, and every job's
// subject until it is read (then rebased to the new policy); a change of
// one partition's nodes drops only that partition's shapes.
func TestAdminChangeRebuildsOnlyWhatItTouches(t *testing.T) {
	var nodes []NodeConfig
	for i := range 4 {
		nodes = append(nodes, NodeConfig{Name: fmt.Sprintf("n%d", i), CPUs: 4, MemoryMiB: 4096})
	}
	s, err := New(Config{
		Nodes:      nodes,
		Partitions: []PartitionConfig{{Name: "a", Default: true}, {Name: "b", Nodes: []string{"n2", "n3"}}},
		Backfill:   &backfill.Config{Mode: backfill.EASY},
		Policy:     &policy.Config{QOS: []policy.QOS{{Name: "normal"}}},
	})
	require.NoError(t, err)
	t0 := fzEpoch
	for i := range 6 {
		_, err := s.Submit(t0, JobSpec{User: "u", Account: "a", Partition: []string{"a", "b"}[i%2], CPUsPerTask: 4, TimeLimit: time.Hour})
		require.NoError(t, err)
	}
	_, err = s.Schedule(t0)
	require.NoError(t, err)
	shapes := map[string]*shape{}
	for k, v := range s.shapes {
		shapes[k] = v
	}
	prof, plan := s.bf.last, s.bf.plan
	require.NotNil(t, prof)

	q, _ := s.Policy().QOS("normal")
	q.Limits.MaxJobsPerUser = new(10)
	require.NoError(t, s.UpdateQOS(t0, q))
	assert.Equal(t, shapes, s.shapes, "shapes kept")
	assert.False(t, s.bf.dirty, "the kept profile stays valid")
	assert.Same(t, prof, s.bf.last)
	assert.Same(t, plan, s.bf.plan)
	for _, j := range s.jobs {
		assert.NotEqual(t, s.pol.gen, j.subjGen, "job %d not rebased before it is read", j.ID)
	}
	_, err = s.Schedule(t0.Add(time.Second))
	require.NoError(t, err)
	for _, j := range s.jobs {
		if j.State == JobPending {
			assert.Equal(t, s.pol.gen, j.subjGen, "job %d rebased when the cycle read it", j.ID)
			assert.NotEmpty(t, s.Policy().Constraints(j.subject), "job %d: a subject of the current policy", j.ID)
		}
	}

	p, _ := s.Partition("b")
	p.Nodes = []string{"n3"}
	require.NoError(t, s.UpdatePartition(t0.Add(time.Second), p))
	for k, v := range shapes {
		if shapeKeyPart(k) == 0 {
			assert.Same(t, v, s.shapes[k], "partition a's shape %q kept", k)
		} else {
			assert.NotSame(t, v, s.shapes[k], "partition b's shape %q rebuilt", k)
		}
	}
	for _, j := range s.jobs {
		if j.part == 1 {
			assert.Equal(t, 1, j.shape.capable.Count(), "job %d sees b's one node", j.ID)
		}
	}
}
