package policy_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/policy"
	"github.com/sluicehq/sluice/topology"
)

type preemptEnv struct {
	t *testing.T
	p *policy.Policy
}

func newPreemptEnv(t *testing.T, cfg policy.Config) *preemptEnv {
	p, err := policy.New(newReg(t), cfg)
	require.NoError(t, err)
	return &preemptEnv{t: t, p: p}
}

func (e *preemptEnv) subj(part, qos string) policy.Subject {
	s, err := e.p.Resolve(policy.JobRef{User: "u", Account: "a", Partition: part, QOS: qos})
	require.NoError(e.t, err)
	return s
}

func qosCfg(mode policy.PreemptMode, qs ...policy.QOS) policy.Config {
	return policy.Config{PreemptType: policy.PreemptQOS, PreemptMode: mode, QOS: qs}
}

// One case per preemption mode, rule and exemption.
func TestPreemptable(t *testing.T) {
	now := t0.Add(10 * time.Hour)
	started := t0 // ran 10 h
	hi := policy.QOS{Name: "hi", Priority: 100, Preempt: []string{"lo"}}
	lo := policy.QOS{Name: "lo", Priority: 1}
	cases := []struct {
		name      string
		cfg       policy.Config
		preQOS    string
		victimQOS string
		prePrio   uint32
		vicPrio   uint32
		requeue   bool
		start     time.Time
		want      policy.PreemptAction
		grace     time.Duration
	}{
		{name: "CANCEL", cfg: qosCfg(policy.PreemptCancel, hi, lo), preQOS: "hi", victimQOS: "lo", want: policy.ActionCancel},
		{name: "REQUEUE requeueable", cfg: qosCfg(policy.PreemptRequeue, hi, lo), preQOS: "hi", victimQOS: "lo", requeue: true, want: policy.ActionRequeue},
		{name: "REQUEUE not requeueable cancels", cfg: qosCfg(policy.PreemptRequeue, hi, lo), preQOS: "hi", victimQOS: "lo", want: policy.ActionCancel},
		{name: "SUSPEND", cfg: qosCfg(policy.PreemptSuspend|policy.PreemptGang, hi, lo), preQOS: "hi", victimQOS: "lo", want: policy.ActionSuspend},
		{name: "victim QOS OFF", cfg: qosCfg(policy.PreemptCancel, hi, policy.QOS{Name: "lo", PreemptMode: policy.PreemptOff}), preQOS: "hi", victimQOS: "lo"},
		{name: "victim QOS mode overrides cluster", cfg: qosCfg(policy.PreemptCancel, hi, policy.QOS{Name: "lo", PreemptMode: policy.PreemptRequeue}),
			preQOS: "hi", victimQOS: "lo", requeue: true, want: policy.ActionRequeue},
		{name: "GraceTime", cfg: qosCfg(policy.PreemptCancel, hi, policy.QOS{Name: "lo", GraceTime: 5 * time.Minute}), preQOS: "hi", victimQOS: "lo",
			want: policy.ActionCancel, grace: 5 * time.Minute},
		{name: "not in Preempt list", cfg: qosCfg(policy.PreemptCancel, hi, lo), preQOS: "lo", victimQOS: "hi"},
		{name: "same QOS without WITHIN", cfg: qosCfg(policy.PreemptCancel, hi, lo), preQOS: "lo", victimQOS: "lo", prePrio: 10, vicPrio: 1},
		{name: "WITHIN higher job priority", cfg: qosCfg(policy.PreemptCancel, hi, policy.QOS{Name: "lo", PreemptMode: policy.PreemptWithin}),
			preQOS: "lo", victimQOS: "lo", prePrio: 10, vicPrio: 1, want: policy.ActionCancel},
		{name: "WITHIN lower job priority", cfg: qosCfg(policy.PreemptCancel, hi, policy.QOS{Name: "lo", PreemptMode: policy.PreemptWithin}),
			preQOS: "lo", victimQOS: "lo", prePrio: 1, vicPrio: 10},
		{name: "PRIORITY refuses a lower job priority", cfg: qosCfg(policy.PreemptCancel|policy.PreemptPriority, hi, lo),
			preQOS: "hi", victimQOS: "lo", prePrio: 1, vicPrio: 10},
		{name: "PRIORITY allows a higher job priority", cfg: qosCfg(policy.PreemptCancel|policy.PreemptPriority, hi, lo),
			preQOS: "hi", victimQOS: "lo", prePrio: 10, vicPrio: 1, want: policy.ActionCancel},
		{name: "PreemptExemptTime global", cfg: func() policy.Config {
			c := qosCfg(policy.PreemptCancel, hi, lo)
			c.PreemptExemptTime = 11 * time.Hour
			return c
		}(), preQOS: "hi", victimQOS: "lo"},
		{name: "PreemptExemptTime of the QOS", cfg: qosCfg(policy.PreemptCancel, hi, policy.QOS{Name: "lo", PreemptExemptTime: time.Hour}),
			preQOS: "hi", victimQOS: "lo", start: now.Add(-30 * time.Minute)},
		{name: "PreemptExemptTime passed", cfg: qosCfg(policy.PreemptCancel, hi, policy.QOS{Name: "lo", PreemptExemptTime: time.Hour}),
			preQOS: "hi", victimQOS: "lo", start: now.Add(-2 * time.Hour), want: policy.ActionCancel},
		{name: "preempt/none", cfg: policy.Config{QOS: []policy.QOS{hi, lo}}, preQOS: "hi", victimQOS: "lo"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := newPreemptEnv(t, c.cfg)
			st := c.start
			if st.IsZero() {
				st = started
			}
			pre := policy.Preemptor{Subject: e.subj("", c.preQOS), Priority: c.prePrio}
			cand := policy.Candidate{Job: 1, Subject: e.subj("", c.victimQOS), Priority: c.vicPrio, Nodes: []int{0}, GPUs: 8, CPUs: 64,
				Start: st, Requeue: c.requeue}
			v, ok := e.p.Preemptable(now, &pre, &cand)
			assert.Equal(t, c.want != policy.ActionNone, ok)
			if !ok {
				return
			}
			assert.Equal(t, c.want, v.Action)
			assert.Equal(t, c.grace, v.Grace)
			assert.Equal(t, now.Add(c.grace), v.KillAt)
			if c.want == policy.ActionSuspend {
				assert.Zero(t, v.LostGPUSeconds, "suspension loses no work")
			} else {
				assert.InDelta(t, 8*(now.Add(c.grace).Sub(st)).Seconds(), v.LostGPUSeconds, 1e-6)
			}
		})
	}
}

func TestPreemptPartitionPrio(t *testing.T) {
	e := newPreemptEnv(t, policy.Config{PreemptType: policy.PreemptPartitionPrio, PreemptMode: policy.PreemptRequeue,
		Partitions: []policy.Partition{{Name: "high", PriorityTier: 10}, {Name: "low", PriorityTier: 1, GraceTime: time.Minute},
			{Name: "low2", PriorityTier: 1}, {Name: "frozen", PreemptMode: policy.PreemptOff}}})
	now := t0.Add(time.Hour)
	pre := policy.Preemptor{Subject: e.subj("high", "")}
	v, ok := e.p.Preemptable(now, &pre, &policy.Candidate{Subject: e.subj("low", ""), Start: t0, Requeue: true})
	require.True(t, ok)
	assert.Equal(t, policy.ActionRequeue, v.Action)
	assert.Equal(t, time.Minute, v.Grace)
	_, ok = e.p.Preemptable(now, &policy.Preemptor{Subject: e.subj("low2", "")}, &policy.Candidate{Subject: e.subj("low", ""), Start: t0})
	assert.False(t, ok, "equal tiers never preempt")
	_, ok = e.p.Preemptable(now, &pre, &policy.Candidate{Subject: e.subj("frozen", ""), Start: t0})
	assert.False(t, ok, "partition PreemptMode OFF")
}

func TestPreemptExemptTimePartitionQOS(t *testing.T) {
	// The partition QOS's PreemptExemptTime beats the job QOS's, unless the
	// job QOS has OverPartQOS.
	for _, over := range []bool{false, true} {
		var fl policy.QOSFlags
		if over {
			fl = policy.QOSOverPartQOS
		}
		e := newPreemptEnv(t, policy.Config{PreemptType: policy.PreemptQOS, PreemptMode: policy.PreemptCancel,
			QOS: []policy.QOS{{Name: "hi", Preempt: []string{"lo"}}, {Name: "lo", PreemptExemptTime: time.Hour, Flags: fl},
				{Name: "pq", PreemptExemptTime: 3 * time.Hour}},
			Partitions: []policy.Partition{{Name: "p", QOS: "pq"}}})
		pre := policy.Preemptor{Subject: e.subj("p", "hi")}
		c := policy.Candidate{Subject: e.subj("p", "lo"), Start: t0}
		_, ok := e.p.Preemptable(t0.Add(2*time.Hour), &pre, &c)
		assert.Equal(t, over, ok, "OverPartQOS=%v", over)
	}
}

func TestLostWork(t *testing.T) {
	c := policy.Candidate{GPUs: 4, CPUs: 32, Start: t0}
	g, cpu := c.LostWork(t0.Add(time.Hour))
	assert.Equal(t, 4*3600.0, g)
	assert.Equal(t, 32*3600.0, cpu)
	c.LastCheckpoint = t0.Add(50 * time.Minute)
	g, _ = c.LostWork(t0.Add(time.Hour))
	assert.Equal(t, 4*600.0, g, "since the reported checkpoint")
	c.LastCheckpoint = time.Time{}
	c.CheckpointInterval = 25 * time.Minute
	g, _ = c.LostWork(t0.Add(time.Hour))
	assert.Equal(t, 4*600.0, g, "since the checkpoint implied at 50 min")
	g, _ = c.LostWork(t0.Add(-time.Hour))
	assert.Zero(t, g)
}

// cluster is a toy cluster for victim choice: nodes with 8 GPUs, jobs on
// them, and fits functions the scheduler would supply.
type cluster struct {
	nodeJobs [][]int // candidate indices per node
	cands    []policy.Candidate
	gpusUsed []int64
}

func (c *cluster) add(cd policy.Candidate) {
	i := len(c.cands)
	c.cands = append(c.cands, cd)
	for _, n := range cd.Nodes {
		c.nodeJobs[n] = append(c.nodeJobs[n], i)
		c.gpusUsed[n] += cd.GPUs / int64(len(cd.Nodes))
	}
}

// wholeNodes fits when k nodes of allowed are empty once victims are gone
// (suspended victims keep their GPUs, so they never empty a node).
func (c *cluster) wholeNodes(k int, allowed topology.NodeSet) func([]policy.Victim) bool {
	gone := make([]bool, len(c.cands))
	return func(vs []policy.Victim) bool {
		clear(gone)
		for _, v := range vs {
			if v.Action != policy.ActionSuspend {
				gone[v.Index] = true
			}
		}
		free := 0
		for n, js := range c.nodeJobs {
			if allowed.Len() > 0 && !allowed.Has(n) {
				continue
			}
			empty := true
			for _, j := range js {
				empty = empty && gone[j]
			}
			if empty {
				free++
			}
		}
		return free >= k
	}
}

// gpusOnOneNode fits when some node has g free GPUs once victims are gone.
func (c *cluster) gpusOnOneNode(g int64) func([]policy.Victim) bool {
	return func(vs []policy.Victim) bool {
		freed := make(map[int]int64)
		for _, v := range vs {
			if v.Action == policy.ActionSuspend {
				continue
			}
			cd := c.cands[v.Index]
			for _, n := range cd.Nodes {
				freed[n] += cd.GPUs / int64(len(cd.Nodes))
			}
		}
		for n := range c.nodeJobs {
			if 8-c.gpusUsed[n]+freed[n] >= g {
				return true
			}
		}
		return false
	}
}

func TestPreemptVictimsCheapest(t *testing.T) {
	e := newPreemptEnv(t, qosCfg(policy.PreemptRequeue, policy.QOS{Name: "hi", Priority: 10, Preempt: []string{"lo", "mid"}},
		policy.QOS{Name: "lo", Priority: 1}, policy.QOS{Name: "mid", Priority: 5}))
	now := t0.Add(10 * time.Hour)
	c := &cluster{nodeJobs: make([][]int, 4), gpusUsed: make([]int64, 4)}
	lo, mid := e.subj("", "lo"), e.subj("", "mid")
	// node 0: two 4-GPU jobs, one checkpointed a minute ago (cheap), one never (expensive).
	c.add(policy.Candidate{Job: 1, Subject: lo, Nodes: []int{0}, GPUs: 4, CPUs: 8, Start: t0, LastCheckpoint: now.Add(-time.Minute), Requeue: true})
	c.add(policy.Candidate{Job: 2, Subject: lo, Nodes: []int{0}, GPUs: 4, CPUs: 8, Start: t0})
	// node 1: one 8-GPU job started 2 h ago.
	c.add(policy.Candidate{Job: 3, Subject: mid, Nodes: []int{1}, GPUs: 8, CPUs: 16, Start: now.Add(-2 * time.Hour)})
	// node 2: a 4-GPU job checkpointing every 10 min (lost ≤ 10 min) + 4 free GPUs.
	c.add(policy.Candidate{Job: 4, Subject: lo, Nodes: []int{2}, GPUs: 4, CPUs: 8, Start: t0, CheckpointInterval: 10 * time.Minute})
	// node 3: a job of the preemptor's own QOS (not preemptable).
	c.add(policy.Candidate{Job: 5, Subject: e.subj("", "hi"), Nodes: []int{3}, GPUs: 8, CPUs: 8, Start: t0})
	pre := policy.Preemptor{Subject: e.subj("", "hi"), Priority: 10}

	// 4 GPUs on one node: node 2 has 4 free already → no victims.
	plan, ok := e.p.PreemptVictims(now, pre, c.cands, c.gpusOnOneNode(4))
	require.True(t, ok)
	assert.Empty(t, plan.Victims)
	// 8 GPUs on one node: cheapest is job 1 (1 min × 4 GPUs)? No — freeing job 1 leaves node 0 at 4 used.
	// Job 4 (≤ 10 min lost) frees node 2 entirely.
	plan, ok = e.p.PreemptVictims(now, pre, c.cands, c.gpusOnOneNode(8))
	require.True(t, ok)
	require.Len(t, plan.Victims, 1)
	assert.Equal(t, policy.JobID(4), plan.Victims[0].Job)
	assert.Equal(t, policy.ActionCancel, plan.Victims[0].Action, "not requeueable → cancelled")
	// Two whole nodes: node 2 (job 4) and node 0 (jobs 1+2: 4×60 s + 4×10 h) vs node 1 (job 3: 8×2 h) → node 1 is cheaper than node 0.
	plan, ok = e.p.PreemptVictims(now, pre, c.cands, c.wholeNodes(2, topology.NodeSet{}))
	require.True(t, ok)
	var jobs []policy.JobID
	for _, v := range plan.Victims {
		jobs = append(jobs, v.Job)
	}
	assert.ElementsMatch(t, []policy.JobID{4, 3}, jobs)
	assert.InDelta(t, 8*7200, plan.LostGPUSeconds, 1e-6, "job 4 checkpointed exactly now (every 10 min since t0)")
	// Three whole nodes need node 0 too; node 3 is never freed.
	plan, ok = e.p.PreemptVictims(now, pre, c.cands, c.wholeNodes(3, topology.NodeSet{}))
	require.True(t, ok)
	assert.Len(t, plan.Victims, 4)
	_, ok = e.p.PreemptVictims(now, pre, c.cands, c.wholeNodes(4, topology.NodeSet{}))
	assert.False(t, ok, "node 3 runs an unpreemptable job")
	// Restricted to nodes {0, 3}: only node 0's jobs are candidates.
	plan, ok = e.p.PreemptVictims(now, pre, c.cands, c.wholeNodes(1, topology.NodeSetOf(4, 0, 3)))
	require.True(t, ok)
	assert.Len(t, plan.Victims, 2)
}

func TestPreemptVictimsTiesSlurmOrder(t *testing.T) {
	// Equal lost work: the lower QOS priority goes first, then fewer nodes.
	e := newPreemptEnv(t, qosCfg(policy.PreemptCancel, policy.QOS{Name: "hi", Priority: 10, Preempt: []string{"lo", "mid"}},
		policy.QOS{Name: "lo", Priority: 1}, policy.QOS{Name: "mid", Priority: 5}))
	now := t0.Add(time.Hour)
	c := &cluster{nodeJobs: make([][]int, 3), gpusUsed: make([]int64, 3)}
	c.add(policy.Candidate{Job: 1, Subject: e.subj("", "mid"), Nodes: []int{0}, GPUs: 8, Start: t0})
	c.add(policy.Candidate{Job: 2, Subject: e.subj("", "lo"), Nodes: []int{1}, GPUs: 8, Start: t0})
	c.add(policy.Candidate{Job: 3, Subject: e.subj("", "lo"), Nodes: []int{2}, GPUs: 8, Start: t0})
	pre := policy.Preemptor{Subject: e.subj("", "hi")}
	plan, ok := e.p.PreemptVictims(now, pre, c.cands, c.gpusOnOneNode(8))
	require.True(t, ok)
	require.Len(t, plan.Victims, 1)
	assert.Equal(t, policy.JobID(2), plan.Victims[0].Job, "lowest QOS priority, then lowest job ID")
	assert.Equal(t, now, plan.ReadyAt)
}

func TestPreemptGraceReadyAt(t *testing.T) {
	e := newPreemptEnv(t, qosCfg(policy.PreemptCancel, policy.QOS{Name: "hi", Preempt: []string{"lo"}}, policy.QOS{Name: "lo", GraceTime: 2 * time.Minute}))
	c := &cluster{nodeJobs: make([][]int, 1), gpusUsed: make([]int64, 1)}
	c.add(policy.Candidate{Job: 1, Subject: e.subj("", "lo"), Nodes: []int{0}, GPUs: 8, Start: t0})
	plan, ok := e.p.PreemptVictims(t0.Add(time.Hour), policy.Preemptor{Subject: e.subj("", "hi")}, c.cands, c.gpusOnOneNode(8))
	require.True(t, ok)
	assert.Equal(t, t0.Add(time.Hour+2*time.Minute), plan.ReadyAt, "the preemptor starts when the grace time is over")
	assert.InDelta(t, 8*(62*time.Minute).Seconds(), plan.LostGPUSeconds, 1e-6, "work is lost at the kill, after the grace time")
}

// TestPropertyPreemptMinimalAndExempt: on random clusters and preemptors,
// the plan fits, removing any one victim makes it not fit, and no victim
// is exempt or unpreemptable.
func TestPropertyPreemptMinimalAndExempt(t *testing.T) {
	withVictims := 0
	defer func() {
		if withVictims < 10 {
			t.Errorf("only %d of the random cases needed victims", withVictims)
		}
	}()
	for seed := range uint64(30) {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			rng := newRand(seed)
			e := newPreemptEnv(t, policy.Config{PreemptType: policy.PreemptQOS, PreemptMode: policy.PreemptRequeue,
				QOS: []policy.QOS{{Name: "hi", Priority: 10, Preempt: []string{"lo", "mid"}}, {Name: "lo", PreemptExemptTime: 30 * time.Minute},
					{Name: "mid", PreemptMode: policy.PreemptSuspend}, {Name: "keep"}}})
			now := t0.Add(10 * time.Hour)
			nn := 12 + rng.IntN(20)
			c := &cluster{nodeJobs: make([][]int, nn), gpusUsed: make([]int64, nn)}
			qs := []policy.Subject{e.subj("", "lo"), e.subj("", "mid"), e.subj("", "keep"), e.subj("", "lo")}
			id := policy.JobID(1)
			for n := range nn {
				for c.gpusUsed[n] < 8 {
					g := []int64{1, 2, 4}[rng.IntN(3)]
					for c.gpusUsed[n]+g > 8 {
						g /= 2
					}
					nodes := []int{n}
					if rng.IntN(8) == 0 && n+1 < nn && c.gpusUsed[n+1]+g <= 8 {
						nodes = append(nodes, n+1)
					}
					c.add(policy.Candidate{Job: id, Subject: qs[rng.IntN(len(qs))], Nodes: nodes, GPUs: g * int64(len(nodes)), CPUs: 8 * g,
						Start: now.Add(-time.Duration(rng.IntN(600)) * time.Minute), CheckpointInterval: time.Duration(rng.IntN(3)) * 20 * time.Minute})
					id++
				}
			}
			pre := policy.Preemptor{Subject: e.subj("", "hi"), Priority: 10}
			var fits func([]policy.Victim) bool
			if rng.IntN(2) == 0 {
				fits = c.wholeNodes(1+rng.IntN(4), topology.NodeSet{})
			} else {
				fits = c.gpusOnOneNode(int64(1 + rng.IntN(8)))
			}
			plan, ok := e.p.PreemptVictims(now, pre, c.cands, fits)
			if ok && len(plan.Victims) > 0 {
				withVictims++
			}
			if !ok {
				// Then even every preemptable candidate together does not fit.
				var all []policy.Victim
				for i := range c.cands {
					if v, can := e.p.Preemptable(now, &pre, &c.cands[i]); can {
						v.Index = i
						all = append(all, v)
					}
				}
				require.False(t, fits(all))
				return
			}
			require.True(t, fits(plan.Victims), "the plan fits")
			for i, v := range plan.Victims {
				cd := &c.cands[v.Index]
				require.Equal(t, cd.Job, v.Job)
				w, can := e.p.Preemptable(now, &pre, cd)
				require.True(t, can, "victim %d is preemptable (not exempt)", v.Job)
				if cd.Subject.Ref().QOS == "lo" {
					require.GreaterOrEqual(t, now.Sub(cd.Start), 30*time.Minute, "exempt jobs are never chosen")
				}
				require.Equal(t, w.Action, v.Action)
				rest := append(append([]policy.Victim{}, plan.Victims[:i]...), plan.Victims[i+1:]...)
				require.False(t, fits(rest), "victim %d is not needed", v.Job)
			}
			var g float64
			for _, v := range plan.Victims {
				g += v.LostGPUSeconds
			}
			assert.InDelta(t, g, plan.LostGPUSeconds, 1e-6)
		})
	}
}

func TestPreemptVictimsBadNodeIndices(t *testing.T) {
	e := newPreemptEnv(t, qosCfg(policy.PreemptCancel, policy.QOS{Name: "hi", Preempt: []string{"lo"}}, policy.QOS{Name: "lo"}))
	cands := []policy.Candidate{
		{Job: 1, Subject: e.subj("", "lo"), Nodes: []int{-5, 1 << 40}, GPUs: 1, Start: t0},
		{Job: 2, Subject: e.subj("", "lo"), Nodes: []int{3}, GPUs: 1, Start: t0},
	}
	plan, ok := e.p.PreemptVictims(t0.Add(time.Hour), policy.Preemptor{Subject: e.subj("", "hi")}, cands,
		func(vs []policy.Victim) bool { return len(vs) > 0 })
	require.True(t, ok)
	require.Len(t, plan.Victims, 1)
	assert.Equal(t, policy.JobID(2), plan.Victims[0].Job, "a job on no valid node frees nothing placeable")
}
