package backfill

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/sluicehq/sluice/gres"
	"github.com/sluicehq/sluice/topology"
	"github.com/stretchr/testify/require"
)

// requiredChooser takes every node of req and then the lowest others of
// the candidates; nil when a node of req is not a candidate. It is the
// reference for Request.Required: a search told the required nodes must
// give the same answer as one whose chooser alone enforces them.
func requiredChooser(req []int) NodeChooser {
	return func(F topology.NodeSet, n int) []int {
		out := make([]int, 0, n)
		for _, i := range req {
			if !F.Has(i) {
				return nil
			}
			out = append(out, i)
		}
		for i := F.Next(0); i >= 0 && len(out) < n; i = F.Next(i + 1) {
			if !slices.Contains(req, i) {
				out = append(out, i)
			}
		}
		if len(out) < n {
			return nil
		}
		return out
	}
}

// TestRequiredMatchesChooser compares searches with Required (which start
// where every required node can hold the request) with searches whose
// chooser alone refuses choices without them, on random profiles with
// reservations: the same status, start and nodes.
func TestRequiredMatchesChooser(t *testing.T) {
	forEachRandomProfile(t, 300, 60, 733, func(t *testing.T, rng *rand.Rand, p *Profile, m *naive) {
		nextID := JobID(7000)
		for step := range 30 {
			if rng.IntN(3) == 0 {
				p = runOps(t, rng, p, m, 1, &nextID)
			}
			r := randomSearchRequest(rng, p, m, 1+rng.IntN(p.n))
			n, req, d := r.Nodes, r.PerNode, r.Duration
			need := rng.Perm(p.n)[:1+rng.IntN(n)]
			r.Chooser = requiredChooser(need)
			want, err := p.EarliestFit(r)
			require.NoError(t, err)
			r.Required = need
			got, err := p.EarliestFit(r)
			require.NoError(t, err)
			require.Equal(t, want, got, "step %d (n=%d req=%v required=%v d=%v)", step, n, req, need, d)
			// Without a chooser (the scan at a start then stops at the
			// lowest other nodes) the answer is the reference chooser's,
			// its nodes ascending.
			r.Chooser = nil
			got, err = p.EarliestFit(r)
			require.NoError(t, err)
			if want.Status == FitFound {
				slices.Sort(want.Nodes)
			}
			require.Equal(t, want, got, "step %d (default chooser, n=%d required=%v)", step, n, need)
		}
	})
}

// TestRequiredInvalid refuses required nodes outside the profile and
// duplicates.
func TestRequiredInvalid(t *testing.T) {
	p, err := NewProfile(time.Unix(1_700_000_000, 0), []NodeState{{Capacity: gres.Vector{4}}, {Capacity: gres.Vector{4}}}, nil, ProfileOptions{})
	require.NoError(t, err)
	for _, req := range [][]int{{2}, {-1}, {0, 0}, {0, 1, 2}} {
		_, err := p.EarliestFit(Request{Nodes: 2, PerNode: gres.Vector{1}, Duration: time.Minute, Required: req})
		require.ErrorIs(t, err, ErrInvalidRequest, "%v", req)
	}
}

// randomSearchRequest draws a request for n nodes on profile p (model m): a
// per-node amount of 0 to 2 of each resource, exclusive one time in
// four, a duration of up to 6 grid slots, and one time in three each an
// earliest and a latest start.
func randomSearchRequest(rng *rand.Rand, p *Profile, m *naive, n int) Request {
	req := make([]int64, p.a)
	for j := range req {
		req[j] = int64(rng.IntN(3))
	}
	d := 1 + rng.Int64N(6*m.res)
	r := Request{Nodes: n, PerNode: expandTo(p, req), Exclusive: rng.IntN(4) == 0, Duration: time.Duration(d) * time.Second}
	if rng.IntN(3) == 0 {
		r.Earliest = time.Unix(m.origin+rng.Int64N(4*m.res), 0)
	}
	if rng.IntN(3) == 0 {
		r.Latest = time.Unix(m.origin+rng.Int64N(8*m.res), 0)
	}
	return r
}
