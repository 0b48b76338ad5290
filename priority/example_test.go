package priority_test

import (
	"fmt"
	"time"

	"github.com/sluicehq/sluice/priority"
)

// Example computes fair-share over a small association tree, the priority
// breakdown of three pending jobs, their queue order and an sprio table.
func Example() {
	tree, err := priority.NewTree([]priority.Association{
		{Account: "root"},
		{Account: "physics", Parent: "root", Shares: 60},
		{Account: "physics", User: "alice", Shares: 1, Usage: 7200},
		{Account: "physics", User: "bob", Shares: 1, Usage: 0},
		{Account: "chem", Parent: "root", Shares: 40},
		{Account: "chem", User: "carol", Shares: 1, Usage: 3600},
	}, priority.TreeOptions{})
	if err != nil {
		panic(err)
	}
	fmt.Print(tree.Format(priority.ShareFormat{Long: true}))

	engine, err := priority.NewEngine(priority.Config{
		Weights: priority.Weights{Age: 1000, FairShare: 10000, JobSize: 1000},
	}, priority.Cluster{Nodes: 100, CPUs: 12800})
	if err != nil {
		panic(err)
	}
	now := time.Date(2026, 3, 2, 12, 0, 0, 0, time.UTC)
	type pending struct {
		id   uint64
		user string
		acct string
		wait time.Duration
		n    uint32
	}
	var rows []priority.SprioRow
	var keys []priority.QueueKey
	for _, p := range []pending{
		{101, "alice", "physics", 48 * time.Hour, 10},
		{102, "bob", "physics", time.Hour, 1},
		{103, "carol", "chem", 24 * time.Hour, 50},
	} {
		i, _ := tree.Lookup(p.acct, p.user)
		job := priority.Job{
			ID:          p.id,
			Submit:      now.Add(-p.wait),
			AccrueStart: now.Add(-p.wait),
			Nodes:       p.n,
			FairShare:   tree.Factor(i),
		}
		b, err := engine.Compute(now, &job)
		if err != nil {
			panic(err)
		}
		rows = append(rows, priority.SprioRow{JobID: p.id, Partition: "batch", Breakdown: &b})
		keys = append(keys, priority.QueueKey{Priority: b.Priority, Submit: job.Submit, JobID: p.id})
	}
	priority.SortQueue(keys)
	for _, k := range keys {
		fmt.Printf("job %d priority %d\n", k.JobID, k.Priority)
	}
	fmt.Print(engine.FormatSprio(rows, priority.SprioFormat{}))
	// Output:
	// Account                    User  RawShares  NormShares    RawUsage   NormUsage  EffectvUsage  FairShare    LevelFS
	// -------------------- ---------- ---------- ----------- ----------- ----------- ------------- ---------- ----------
	// root                                          0.000000       10800                  1.000000
	//  chem                                   40    0.400000        3600    0.333333      0.333333              1.200000
	//   chem                    carol          1    1.000000        3600    0.333333      1.000000   1.000000   1.000000
	//  physics                                60    0.600000        7200    0.666667      0.666667              0.900000
	//   physics                 alice          1    0.500000        7200    0.666667      1.000000   0.333333   0.500000
	//   physics                   bob          1    0.500000           0    0.000000      0.000000   0.666667        inf
	// job 103 priority 10642
	// job 102 priority 6682
	// job 101 priority 3719
	//           JOBID PARTITION   PRIORITY       SITE        AGE  FAIRSHARE    JOBSIZE
	//             101 batch           3719          0        286       3333        100
	//             102 batch           6682          0          6       6667         10
	//             103 batch          10642          0        143      10000        500
}
