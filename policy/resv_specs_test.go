package policy_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/policy"
	"github.com/sluicehq/sluice/topology"
)

// TestReservationSpecsRoundTrip carries reservations over with Specs and
// RestoreSpecs: the copy lists the same reservations, and an Update that
// keeps a NodeCount reservation's nodes on the original keeps them on the
// copy too (All and Add would have turned it into a reservation of named
// nodes, whose Update chooses again).
func TestReservationSpecsRoundTrip(t *testing.T) {
	ff := &firstFree{}
	b := policy.NewReservations(nNodes)
	require.NoError(t, b.Add(resv("named", t0, time.Hour, ns(0, 1), 0), nil))
	counted := policy.Reservation{Name: "counted", Start: t0, Duration: 2 * time.Hour, NodeCount: 3, Users: []string{"bob"}}
	require.NoError(t, b.Add(counted, ff.choose))
	c := policy.NewReservations(nNodes)
	require.NoError(t, c.RestoreSpecs(b.Specs()))
	require.Equal(t, b.All(), c.All())
	require.Equal(t, b.Specs(), c.Specs())

	// A chooser that would pick other nodes: the update keeps the ones held.
	last := func(_ *policy.Reservation, count int, exclude topology.NodeSet) (topology.NodeSet, error) {
		out := topology.NewNodeSet(nNodes)
		for i := nNodes - 1; i >= 0 && out.Count() < count; i-- {
			if !exclude.Has(i) {
				out.Add(i)
			}
		}
		return out, nil
	}
	longer := counted
	longer.Duration = 3 * time.Hour
	require.NoError(t, b.Update(longer, last))
	require.NoError(t, c.Update(longer, last))
	rb, _ := b.Get("counted")
	rc, _ := c.Get("counted")
	require.Equal(t, rb.Nodes.AppendTo(nil), rc.Nodes.AppendTo(nil))

	require.Error(t, c.RestoreSpecs(b.Specs()), "RestoreSpecs into a set that is not empty")
	d := policy.NewReservations(nNodes)
	overlap := b.Specs()
	overlap[0].Nodes = ns(0, 5) // "counted" (sorted first) on node 0, which "named" holds at the same time
	require.ErrorIs(t, d.RestoreSpecs(overlap), policy.ErrReservationOverlap)
	require.Zero(t, d.Len(), "a failed RestoreSpecs leaves the set empty")
}
