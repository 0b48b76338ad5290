package policy_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/sluicehq/sluice/gres"
	"github.com/sluicehq/sluice/policy"
)

// Slots lists the concurrent limits a job counts against with the use
// now; Held gives the counters a running job holds under the same keys,
// so a planner can release what it holds at the job's end.
func ExamplePolicy_Slots() {
	reg, _ := gres.NewRegistry("gres/gpu")
	perUser, _ := policy.ParseTRESLimits(reg, "gres/gpu=8")
	two := 2
	p, _ := policy.New(reg, policy.Config{
		QOS: []policy.QOS{{Name: "gpu", Limits: policy.QOSLimits{MaxTRESPerUser: perUser, Limits: policy.Limits{GrpJobs: &two}}}},
	})
	usage := p.NewUsage()
	s, _ := p.Resolve(policy.JobRef{User: "alice", Account: "physics", QOS: "gpu"})
	v, _ := reg.ParseTRES("cpu=16,gres/gpu=6")
	_ = usage.AddJob(1, s)
	_ = usage.StartJob(1, v, 1, time.Date(2025, 1, 6, 13, 0, 0, 0, time.UTC))

	req := &policy.Request{Subject: s, TRES: v, PerNode: v, Nodes: 1, TimeLimit: time.Hour}
	keys, alloc, _ := usage.Held(1, nil)
	for _, sl := range p.Slots(req, usage, nil) {
		held := int64(0)
		for _, k := range keys {
			switch t := sl.Key.TRES(); {
			case k == sl.Key.Jobs() && t < 0:
				held++
			case k == sl.Key.Jobs():
				held += alloc.At(t)
			}
		}
		fmt.Printf("%s %s: limit %d, used %d (job 1 holds %d), adds %d\n", sl.Blocker.Limit, sl.Blocker.Holder, sl.Limit, sl.Used, held, sl.Add)
	}
	// Output:
	// GrpJobs QOS gpu: limit 2, used 1 (job 1 holds 1), adds 1
	// MaxTRESPerUser user alice: limit 8, used 6 (job 1 holds 6), adds 6
}

// Every concurrent blocker CheckStartAll reports is a Slot over its limit,
// and every Slot over its limit is a concurrent blocker; SlotKeys lists
// the slots' keys.
func TestSlotsMatchCheckStart(t *testing.T) {
	reg, _ := gres.NewRegistry("gres/gpu")
	gpus, _ := policy.ParseTRESLimits(reg, "gres/gpu=4")
	cpus, _ := policy.ParseTRESLimits(reg, "cpu=40")
	one, three := 1, 3
	p, err := policy.New(reg, policy.Config{
		QOS: []policy.QOS{{Name: "normal", Limits: policy.QOSLimits{MaxTRESPerUser: gpus, MaxTRESPerAccount: cpus,
			Limits: policy.Limits{GrpJobs: &three}}}},
		Assocs: []policy.Assoc{{Account: "physics", Limits: policy.AssocLimits{Limits: policy.Limits{GrpJobs: &three}}},
			{User: "alice", Account: "physics", Limits: policy.AssocLimits{MaxJobs: &one}}, {User: "bob", Account: "physics"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	u := p.NewUsage()
	now := time.Date(2025, 1, 6, 9, 0, 0, 0, time.UTC)
	req := func(user, tres string) *policy.Request {
		s, err := p.Resolve(policy.JobRef{User: user, Account: "physics", QOS: "normal"})
		if err != nil {
			t.Fatal(err)
		}
		v, _ := reg.ParseTRES(tres)
		return &policy.Request{Subject: s, TRES: v, PerNode: v, Nodes: 1, TimeLimit: time.Hour}
	}
	for id, r := range []*policy.Request{req("alice", "cpu=16,gres/gpu=2"), req("bob", "cpu=16")} {
		_ = u.AddJob(policy.JobID(id+1), r.Subject)
		_ = u.StartJob(policy.JobID(id+1), r.TRES, 1, now.Add(time.Hour))
	}
	blocked := 0
	for _, r := range []*policy.Request{req("alice", "cpu=4"), req("alice", "cpu=4,gres/gpu=3"), req("bob", "cpu=16"), req("bob", "cpu=1,gres/gpu=4")} {
		over := map[string]bool{}
		for _, sl := range p.Slots(r, u, nil) {
			if sl.Used+sl.Add > sl.Limit {
				over[sl.Blocker.String()] = true
			}
		}
		var keys []policy.CounterKey
		for _, sl := range p.Slots(r, u, nil) {
			keys = append(keys, sl.Key)
		}
		if sk := p.SlotKeys(r, nil); fmt.Sprint(sk) != fmt.Sprint(keys) || len(keys) == 0 {
			t.Errorf("%v: SlotKeys %v, want the keys of Slots %v", r.TRES, sk, keys)
		}
		got := map[string]bool{}
		for _, b := range p.CheckStartAll(now, r, u, nil) {
			if b.Concurrent() {
				got[b.String()] = true
			}
		}
		blocked += len(got)
		if fmt.Sprint(over) != fmt.Sprint(got) {
			t.Errorf("%v: slots over their limits %v, CheckStartAll's concurrent blockers %v", r.TRES, over, got)
		}
	}
	if blocked < 3 {
		t.Errorf("only %d concurrent blockers over the cases, want ≥ 3", blocked)
	}
}
