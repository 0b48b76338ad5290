package backfill

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestCapableCountMatchesScan checks that the shape cache's capable count
// (the allowed nodes among a per-pass set of the nodes whose capacity
// holds the request) is the scan of the allowed nodes, for random
// clusters, requests (empty and exclusive ones included) and allowed
// sets, each request's set reused by later queries of the same pass.
func TestCapableCountMatchesScan(t *testing.T) {
	rng := rand.New(rand.NewPCG(17, 4))
	for range 8 {
		p := largeSetup(t, rng, time.Minute)
		r := &run{planScratch: p.planScratch(), p: p}
		jobs := largeJobs(rng, p, 200)
		for x := range jobs {
			j := &jobs[x]
			if rng.IntN(10) == 0 {
				j.PerNode = make([]int64, len(j.PerNode)) // an empty request
			}
			if rng.IntN(6) == 0 {
				j.PerNode[1] = []int64{64, 100, 128, 129}[rng.IntN(4)]
			}
			var q query
			_, err := p.fillQuery(&q, &Request{Nodes: j.Nodes, PerNode: j.PerNode, Exclusive: j.Exclusive, Allowed: j.Allowed, Duration: j.TimeLimit})
			require.NoError(t, err)
			require.Equal(t, p.capable(&q), r.capableCount(&q), "job %d: %v", x, j.PerNode)
		}
	}
}
