package policy_test

import (
	"fmt"
	"time"

	"github.com/sluicehq/sluice/gres"
	"github.com/sluicehq/sluice/policy"
)

// A scheduler that checks the same pending job pass after pass compiles
// its request once: the compiled check reads the usage afresh at every
// answer, so it sees the job that started meanwhile, and it stays valid
// until the request, the policy or the usage's layout changes.
func ExamplePolicy_CompileStart() {
	reg, _ := gres.NewRegistry("gres/gpu")
	perUser, _ := policy.ParseTRESLimits(reg, "gres/gpu=8")
	p, _ := policy.New(reg, policy.Config{
		QOS: []policy.QOS{{Name: "gpu", Limits: policy.QOSLimits{MaxTRESPerUser: perUser}}},
	})
	usage := p.NewUsage()
	now := time.Date(2025, 1, 6, 12, 0, 0, 0, time.UTC)
	s, _ := p.Resolve(policy.JobRef{User: "alice", Account: "physics", QOS: "gpu"})
	four, _ := reg.ParseTRES("cpu=16,gres/gpu=4")
	six, _ := reg.ParseTRES("cpu=16,gres/gpu=6")

	req := &policy.Request{Subject: s, TRES: four, PerNode: four, Nodes: 1, TimeLimit: time.Hour}
	sc := p.CompileStart(req, usage)
	fmt.Println("before:", sc.Reason(now))

	_ = usage.AddJob(1, s) // alice starts a 6-GPU job
	_ = usage.StartJob(1, six, 1, now.Add(time.Hour))
	fmt.Println("after:", sc.Reason(now), "- same as CheckStart:", p.CheckStart(now, req, usage).Reason == sc.Reason(now))
	fmt.Println("still valid:", sc.Valid(p, usage) && sc.Matches(req))
	// Output:
	// before: None
	// after: QOSMaxGRESPerUser - same as CheckStart: true
	// still valid: true
}
