package gres_test

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/gres"
	"github.com/sluicehq/sluice/gres/gpuserver"
)

// socketGPUs is a node of sockets × perSocket GPUs, GPU i on socket
// i/perSocket, whose CPUs are that socket's cpus CPUs.
func socketGPUs(t *testing.T, sockets, cpus, perSocket int) gres.Inventory {
	t.Helper()
	var inv gres.Inventory
	for i := range sockets * perSocket {
		sk := i / perSocket
		c, err := gres.CoreRange(cpus*sk, cpus*sk+cpus-1)
		require.NoError(t, err)
		inv.Devices = append(inv.Devices, gres.Device{Index: i, Name: "gpu", Type: "a100", NUMA: sk, Socket: sk, Cores: c})
	}
	return inv
}

func coreRange(t *testing.T, first, last int) gres.CoreSet {
	t.Helper()
	c, err := gres.CoreRange(first, last)
	require.NoError(t, err)
	return c
}

// Under enforce-binding with a CPU count, Choose takes the best set whose
// devices bind enough CPUs: on 3 sockets × 4 CPUs with 3 GPUs each, two
// GPUs for 5 CPUs come from two sockets (not the better-connected pair on
// one), the NVLink-bridged such pair when there is one, three for 9 CPUs
// one per socket; 9 CPUs cannot be bound by two GPUs; CPUs the job binds
// already (BoundCores) count.
func TestChooseEnforceBindingCoversTheJobsCPUs(t *testing.T) {
	inv := socketGPUs(t, 3, 4, 3)
	s, err := gres.NewNodeDevices(inv)
	require.NoError(t, err)
	all := coreRange(t, 0, 11)
	req := gres.DeviceRequest{Name: "gpu", Count: 2, Cores: all, EnforceBinding: true}
	p, err := s.Choose(req)
	require.NoError(t, err)
	assert.Equal(t, []int{0, 1}, p.Devices, "no CPU count: the same-socket pair")

	req.CPUs = 5
	p, err = s.Choose(req)
	require.NoError(t, err)
	assert.Equal(t, []int{0, 3}, p.Devices, "5 CPUs: two sockets, lowest indices")

	req.CPUs = 9
	_, err = s.Choose(req)
	require.ErrorIs(t, err, gres.ErrInsufficientDevices)
	assert.ErrorContains(t, err, "binding 9 of 12 CPUs")

	req.Count = 3
	p, err = s.Choose(req)
	require.NoError(t, err)
	assert.Equal(t, []int{0, 3, 6}, p.Devices)

	// Without EnforceBinding the count is no constraint.
	p, err = s.Choose(gres.DeviceRequest{Name: "gpu", Count: 2, Cores: all, CPUs: 9})
	require.NoError(t, err)
	assert.Equal(t, []int{0, 1}, p.Devices)

	// Only socket 0's CPUs free: 5 cannot be bound at all.
	_, err = s.Choose(gres.DeviceRequest{Name: "gpu", Count: 2, Cores: coreRange(t, 0, 3), EnforceBinding: true, CPUs: 5})
	assert.ErrorIs(t, err, gres.ErrInsufficientDevices)

	// Socket 0 already bound: one more GPU for 5 CPUs comes from another socket.
	p, err = s.Choose(gres.DeviceRequest{Name: "gpu", Count: 1, Cores: all, EnforceBinding: true, CPUs: 5, BoundCores: coreRange(t, 0, 3)})
	require.NoError(t, err)
	assert.Equal(t, []int{3}, p.Devices)
	_, err = s.Choose(gres.DeviceRequest{Name: "gpu", Count: 1, Cores: all, EnforceBinding: true, CPUs: 5})
	assert.ErrorIs(t, err, gres.ErrInsufficientDevices, "one GPU binds 4 CPUs")

	// An NVLink bridge between GPUs 5 (socket 1) and 7 (socket 2): the
	// best-connected pair that binds 5 CPUs.
	require.NoError(t, inv.SetLink(5, 7, gres.Link{NVLinks: 4}))
	s, err = gres.NewNodeDevices(inv)
	require.NoError(t, err)
	p, err = s.Choose(gres.DeviceRequest{Name: "gpu", Count: 2, Cores: all, EnforceBinding: true, CPUs: 5})
	require.NoError(t, err)
	assert.Equal(t, []int{5, 7}, p.Devices)

	_, err = s.Choose(gres.DeviceRequest{Name: "gpu", Count: 1, CPUs: -1})
	assert.ErrorIs(t, err, gres.ErrInvalidRequest)
}

// Against brute force on random small nodes whose GPUs have random CPU
// sets: Choose succeeds exactly when some eligible set binds the CPUs,
// every set it returns does, and none that does scores better.
func TestChooseEnforceBindingMatchesBruteForce(t *testing.T) {
	rng := rand.New(rand.NewPCG(15, 5))
	for trial := range 400 {
		n := 2 + rng.IntN(9)
		inv := gpuserver.Random(rng, n, false)
		for i := range inv.Devices {
			if inv.Devices[i].Cores.IsEmpty() {
				continue // unknown affinity
			}
			g := rng.IntN(6) // 6 NUMA-like groups of 4 CPUs, some sharing
			inv.Devices[i].Cores = coreRange(t, 4*g, 4*g+3+4*rng.IntN(2))
		}
		s, err := gres.NewNodeDevices(inv)
		require.NoError(t, err)
		for d := range n {
			if rng.IntN(4) == 0 {
				require.NoError(t, s.Allocate([]int{d}))
			}
		}
		var ids []int
		for c := range 24 {
			if rng.IntN(4) != 0 {
				ids = append(ids, c)
			}
		}
		cores, err := gres.CoreSetOf(ids...)
		require.NoError(t, err)
		req := gres.DeviceRequest{Name: "gpu", Count: 1 + rng.IntN(n), Cores: cores, EnforceBinding: true, CPUs: 1 + rng.IntN(20)}
		if rng.IntN(3) == 0 {
			req.BoundCores = coreRange(t, 0, 3)
		}
		eligible := eligibleDevices(s, req)
		bestOK := false
		var best gres.Placement
		forSubsets(eligible, req.Count, func(set []int) {
			if boundCPUs(inv, req, set) < req.CPUs {
				return
			}
			q, err := s.Evaluate(set, req)
			require.NoError(t, err)
			if !bestOK || q.Score.Compare(best.Score) > 0 {
				best, bestOK = q, true
			}
		})
		p, err := s.Choose(req)
		if !bestOK {
			require.ErrorIs(t, err, gres.ErrInsufficientDevices, "trial %d", trial)
			continue
		}
		require.NoError(t, err, "trial %d: %v binds enough", trial, best.Devices)
		assert.GreaterOrEqual(t, boundCPUs(inv, req, p.Devices), req.CPUs, "trial %d", trial)
		assert.Equal(t, 0, p.Score.Compare(best.Score), "trial %d: chose %v %+v, best %v %+v", trial, p.Devices, p.Score, best.Devices, best.Score)
	}
}

// On a node too large for the exact search (64 GPUs on 16 CPU groups),
// the greedy path still returns a set that binds the CPUs.
func TestChooseEnforceBindingLargeNode(t *testing.T) {
	inv := socketGPUs(t, 16, 4, 4)
	s, err := gres.NewNodeDevices(inv)
	require.NoError(t, err)
	for _, tc := range []struct{ count, cpus int }{{8, 20}, {12, 48}, {20, 64}, {30, 33}} {
		req := gres.DeviceRequest{Name: "gpu", Count: tc.count, Cores: coreRange(t, 0, 63), EnforceBinding: true, CPUs: tc.cpus}
		p, err := s.Choose(req)
		require.NoError(t, err, "%+v", tc)
		require.Len(t, p.Devices, tc.count)
		assert.GreaterOrEqual(t, boundCPUs(inv, req, p.Devices), tc.cpus, "%+v: %v", tc, p.Devices)
	}
	_, err = s.Choose(gres.DeviceRequest{Name: "gpu", Count: 8, Cores: coreRange(t, 0, 63), EnforceBinding: true, CPUs: 33})
	assert.ErrorIs(t, err, gres.ErrInsufficientDevices, "8 GPUs bind at most 32 CPUs")
}

// boundCPUs counts, independently of the chooser, the CPUs of req.Cores
// the devices set binds with req.BoundCores (all of Cores when none has a
// known affinity).
func boundCPUs(inv gres.Inventory, req gres.DeviceRequest, set []int) int {
	u := req.BoundCores
	for _, d := range inv.Devices {
		for _, x := range set {
			if d.Index == x {
				u = u.Union(d.Cores)
			}
		}
	}
	if u.IsEmpty() {
		return req.Cores.Count()
	}
	n := 0
	for _, c := range u.AppendTo(nil) {
		if req.Cores.Has(c) {
			n++
		}
	}
	return n
}

// forSubsets calls f with every k-subset of xs (in increasing order of
// positions).
func forSubsets(xs []int, k int, f func([]int)) {
	set := make([]int, 0, k)
	var rec func(start int)
	rec = func(start int) {
		if len(set) == k {
			f(set)
			return
		}
		for i := start; i <= len(xs)-(k-len(set)); i++ {
			set = append(set, xs[i])
			rec(i + 1)
			set = set[:len(set)-1]
		}
	}
	rec(0)
}
