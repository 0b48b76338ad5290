package explaintest_test

import (
	"fmt"
	"time"

	"github.com/sluicehq/sluice/backfill"
	"github.com/sluicehq/sluice/gres"
	"github.com/sluicehq/sluice/internal/clustertest"
	"github.com/sluicehq/sluice/scheduler"
	"github.com/sluicehq/sluice/scheduler/explaintest"
)

// Record the events, explain a pending job, and check each of its answers
// by replaying the events with the answer's change applied.
func Example() {
	cfg := clustertest.Mixed4()
	cfg.Backfill = &backfill.Config{Mode: backfill.Conservative, Resolution: time.Second}
	s, err := scheduler.New(cfg)
	if err != nil {
		panic(err)
	}
	log := &explaintest.Log{}
	s.SetEventLog(log)
	now := clustertest.Epoch
	gpus := func(n int64) []gres.Request { return []gres.Request{{Name: "gpu", Count: n}} }
	// The whole cluster is busy for 2 h; one more job waits.
	_, _ = s.Submit(now, scheduler.JobSpec{Nodes: 4, GRESPerNode: gpus(8), TimeLimit: 2 * time.Hour})
	id, _ := s.Submit(now, scheduler.JobSpec{GRESPerNode: gpus(8), TimeLimit: 3 * time.Hour})
	if _, err := s.Schedule(now); err != nil {
		panic(err)
	}
	ex, err := s.Explain(now, id, scheduler.ExplainOptions{Counterfactuals: true})
	if err != nil {
		panic(err)
	}
	for _, a := range explaintest.Answers(ex) {
		v, err := explaintest.Check(cfg, log.Entries(), a, explaintest.Options{})
		if err != nil {
			panic(err)
		}
		fmt.Printf("%s: promised +%s (promise %t), started +%s: %s\n", a.Kind(), a.Start.Sub(now), a.Bound, v.Actual.Sub(now), v.Outcome)
	}
	// Output:
	// estimate: promised +2h0m0s (promise true), started +2h0m0s: held
}
