package policy_test

import (
	"fmt"
	"time"

	"github.com/sluicehq/sluice/gres"
	"github.com/sluicehq/sluice/policy"
)

// A QOS with a per-user GPU limit: the second job of alice pends with
// Slurm's reason, and the Blocker says which limit, where, and by how much.
func Example() {
	reg, _ := gres.NewRegistry("gres/gpu:h100")
	perUser, _ := policy.ParseTRESLimits(reg, "gres/gpu=8")
	p, err := policy.New(reg, policy.Config{
		QOS:        []policy.QOS{{Name: "gpu", Limits: policy.QOSLimits{MaxTRESPerUser: perUser}}},
		Partitions: []policy.Partition{{Name: "batch", MaxTime: 24 * time.Hour}},
	})
	if err != nil {
		panic(err)
	}
	usage := p.NewUsage()
	now := time.Date(2025, 1, 6, 9, 0, 0, 0, time.UTC)

	job := func(gpus string) *policy.Request {
		s, _ := p.Resolve(policy.JobRef{User: "alice", Account: "physics", Partition: "batch", QOS: "gpu"})
		v, _ := reg.ParseTRES("cpu=16,gres/gpu=" + gpus)
		return &policy.Request{Subject: s, TRES: v, PerNode: v, Nodes: 1, TimeLimit: 4 * time.Hour}
	}
	first := job("6")
	if err := p.CheckSubmit(first, usage); err != nil {
		panic(err)
	}
	fmt.Println("first:", p.CheckStart(now, first, usage))
	_ = usage.AddJob(1, first.Subject)
	_ = usage.StartJob(1, first.TRES, first.Nodes, now.Add(first.TimeLimit))

	second := job("4")
	b := p.CheckStart(now, second, usage)
	fmt.Println("second:", b.Reason)
	fmt.Println(b)
	// Output:
	// first: None
	// second: QOSMaxGRESPerUser
	// QOSMaxGRESPerUser: job QOS gpu MaxTRESPerUser gres/gpu=8; user alice uses 6, job adds 4
}

// Victim choice counts the work preemption destroys: the job that
// checkpointed a minute ago is preempted, not the one that never did.
func ExamplePolicy_PreemptVictims() {
	reg, _ := gres.NewRegistry()
	p, _ := policy.New(reg, policy.Config{
		PreemptType: policy.PreemptQOS, PreemptMode: policy.PreemptRequeue,
		QOS: []policy.QOS{{Name: "urgent", Preempt: []string{"standby"}}, {Name: "standby"}},
	})
	urgent, _ := p.Resolve(policy.JobRef{User: "ops", Account: "ops", QOS: "urgent"})
	standby, _ := p.Resolve(policy.JobRef{User: "bob", Account: "lab", QOS: "standby"})
	now := time.Date(2025, 1, 6, 12, 0, 0, 0, time.UTC)
	cands := []policy.Candidate{
		{Job: 10, Subject: standby, Nodes: []int{0}, GPUs: 8, Start: now.Add(-6 * time.Hour), Requeue: true},
		{Job: 11, Subject: standby, Nodes: []int{1}, GPUs: 8, Start: now.Add(-6 * time.Hour), LastCheckpoint: now.Add(-time.Minute), Requeue: true},
	}
	// The urgent job needs one whole node.
	fits := func(vs []policy.Victim) bool { return len(vs) >= 1 }
	plan, ok := p.PreemptVictims(now, policy.Preemptor{Subject: urgent}, cands, fits)
	fmt.Println(ok, plan.Victims[0].Job, plan.Victims[0].Action, plan.LostGPUSeconds)
	// Output: true 11 REQUEUE 480
}

func ExampleParseDependency() {
	d, _ := policy.ParseDependency("afterok:12:13,afterany:14")
	done := map[policy.JobID]policy.Outcome{12: policy.OutcomeCompleted, 13: policy.OutcomeFailed, 14: policy.OutcomeRunning}
	state, why := d.Evaluate(policy.JobLookup(func(j policy.JobID) (policy.Outcome, bool) { o, ok := done[j]; return o, ok }), true)
	fmt.Println(state == policy.DepNever, why.Reason, why.Detail)
	// Output: true DependencyNeverSatisfied job 13 is FAILED
}
