package policy_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/policy"
	"github.com/sluicehq/sluice/topology"
)

// TestPreemptOrderSlurmTakesLowestQOSThenFewestNodes checks the two victim
// orders on the same candidates: the default takes what loses the least
// work; PreemptOrderSlurm takes Slurm's preempt/qos order, the lowest QOS
// priority first, then the fewest nodes, whatever the work lost.
func TestPreemptOrderSlurmTakesLowestQOSThenFewestNodes(t *testing.T) {
	now := t0.Add(10 * time.Hour)
	qos := []policy.QOS{
		{Name: "hi", Priority: 100, Preempt: []string{"lo", "mid"}},
		{Name: "lo", Priority: 10},
		{Name: "mid", Priority: 20},
	}
	// One node is needed; each candidate frees the node(s) it runs on.
	fits := func(vs []policy.Victim) bool { return len(vs) > 0 }
	plan := func(order policy.PreemptOrder, cands []policy.Candidate) []policy.JobID {
		cfg := qosCfg(policy.PreemptCancel, qos...)
		cfg.PreemptOrder = order
		e := newPreemptEnv(t, cfg)
		for i := range cands {
			cands[i].Subject = e.subj("", map[policy.JobID]string{1: "lo", 2: "mid", 3: "lo", 4: "lo"}[cands[i].Job])
		}
		got, ok := e.p.PreemptVictims(now, policy.Preemptor{Subject: e.subj("", "hi"), Nodes: topology.FullNodeSet(4)}, cands, fits)
		require.True(t, ok)
		var ids []policy.JobID
		for _, v := range got.Victims {
			ids = append(ids, v.Job)
		}
		return ids
	}
	byQOS := func() []policy.Candidate {
		return []policy.Candidate{
			{Job: 1, Nodes: []int{0}, GPUs: 8, Start: t0},                                        // lo, 10 h lost
			{Job: 2, Nodes: []int{1}, GPUs: 8, Start: t0, LastCheckpoint: now.Add(-time.Minute)}, // mid, 1 min lost
		}
	}
	assert.Equal(t, []policy.JobID{2}, plan(policy.PreemptOrderLeastLostWork, byQOS()), "least lost work")
	assert.Equal(t, []policy.JobID{1}, plan(policy.PreemptOrderSlurm, byQOS()), "lowest QOS priority")

	bySize := func() []policy.Candidate {
		return []policy.Candidate{
			{Job: 3, Nodes: []int{0, 1}, GPUs: 16, Start: now.Add(-time.Minute)}, // lo, 2 nodes, 16 GPU-min lost
			{Job: 4, Nodes: []int{2}, GPUs: 8, Start: t0},                        // lo, 1 node, 80 GPU-h lost
		}
	}
	assert.Equal(t, []policy.JobID{3}, plan(policy.PreemptOrderLeastLostWork, bySize()))
	assert.Equal(t, []policy.JobID{4}, plan(policy.PreemptOrderSlurm, bySize()), "same QOS: fewest nodes")
}

// TestPreemptOrderSlurmKeepsOnlyNeededVictims checks that Slurm's order
// takes candidates until the preemptor fits and keeps none it does not
// need: here two whole nodes must be freed, the first candidate in order
// is on a node the preemptor cannot use fully, and only the victims that
// free the chosen nodes remain.
func TestPreemptOrderSlurmKeepsOnlyNeededVictims(t *testing.T) {
	now := t0.Add(time.Hour)
	cfg := qosCfg(policy.PreemptCancel, policy.QOS{Name: "hi", Priority: 100, Preempt: []string{"lo"}}, policy.QOS{Name: "lo", Priority: 1})
	cfg.PreemptOrder = policy.PreemptOrderSlurm
	e := newPreemptEnv(t, cfg)
	lo := e.subj("", "lo")
	cands := []policy.Candidate{
		{Job: 1, Subject: lo, Nodes: []int{0}, GPUs: 4, Start: t0},    // node 0 also runs job 2
		{Job: 2, Subject: e.subj("", "hi"), Nodes: []int{0}, GPUs: 4}, // not preemptable
		{Job: 3, Subject: lo, Nodes: []int{1}, GPUs: 8, Start: t0},    // frees node 1
		{Job: 4, Subject: lo, Nodes: []int{2}, GPUs: 8, Start: t0},    // frees node 2
		{Job: 5, Subject: lo, Nodes: []int{3}, GPUs: 8, Start: now},   // frees node 3 (youngest: first among equals)
	}
	// Two nodes must be empty of every job.
	fits := func(vs []policy.Victim) bool {
		gone := map[int]int{}
		for _, v := range vs {
			for _, n := range cands[v.Index].Nodes {
				gone[n]++
			}
		}
		free := 0
		for n, k := range gone {
			if k == map[int]int{0: 2, 1: 1, 2: 1, 3: 1}[n] {
				free++
			}
		}
		return free >= 2
	}
	plan, ok := e.p.PreemptVictims(now, policy.Preemptor{Subject: e.subj("", "hi"), Nodes: topology.FullNodeSet(4)}, cands, fits)
	require.True(t, ok)
	var ids []policy.JobID
	for _, v := range plan.Victims {
		ids = append(ids, v.Job)
	}
	assert.Equal(t, []policy.JobID{5, 3}, ids, "Slurm's order: youngest first among equals, job 1 dropped as not needed")
}

func TestPreemptOrderValidates(t *testing.T) {
	cfg := qosCfg(policy.PreemptCancel, policy.QOS{Name: "lo"})
	cfg.PreemptOrder = policy.PreemptOrderSlurm + 1
	_, err := policy.New(newReg(t), cfg)
	assert.ErrorIs(t, err, policy.ErrInvalidConfig)
	assert.Equal(t, "slurm", policy.PreemptOrderSlurm.String())
	assert.Equal(t, "least-lost-work", policy.PreemptOrderLeastLostWork.String())
}
