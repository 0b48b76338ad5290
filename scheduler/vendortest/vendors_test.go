package vendortest_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/gres"
	"github.com/sluicehq/sluice/policy"
	"github.com/sluicehq/sluice/scheduler"
	"github.com/sluicehq/sluice/scheduler/vendortest"
)

var t0 = time.Date(2026, 3, 1, 8, 0, 0, 0, time.UTC)

func cluster(t *testing.T, nodes ...vendortest.Node) *scheduler.Scheduler {
	t.Helper()
	cfg := scheduler.Config{Partitions: []scheduler.PartitionConfig{{Name: "gpu", Default: true, MaxTime: 24 * time.Hour}}}
	for _, n := range nodes {
		cfg.Nodes = append(cfg.Nodes, n.Config)
	}
	s, err := scheduler.New(cfg)
	require.NoError(t, err)
	return s
}

func submit(t *testing.T, s *scheduler.Scheduler, typ string, n int64) scheduler.JobID {
	t.Helper()
	id, err := s.Submit(t0, scheduler.JobSpec{GRESPerNode: []gres.Request{{Name: "gpu", Type: typ, Count: n}}, TimeLimit: time.Hour})
	require.NoError(t, err)
	return id
}

func schedule(t *testing.T, s *scheduler.Scheduler) scheduler.Cycle {
	t.Helper()
	c, err := s.Schedule(t0)
	require.NoError(t, err)
	return c
}

func alloc(t *testing.T, s *scheduler.Scheduler, id scheduler.JobID) scheduler.NodeAlloc {
	t.Helper()
	j, ok := s.Job(id)
	require.True(t, ok)
	require.Equal(t, scheduler.JobRunning, j.State, "job %v", id)
	require.Len(t, j.Alloc.Nodes, 1)
	return j.Alloc.Nodes[0]
}

func reason(c scheduler.Cycle, id scheduler.JobID) policy.Reason {
	for _, p := range c.Pending {
		if p.Job == id {
			return p.Reason
		}
	}
	return policy.ReasonNone
}

// TestMixedVendorByType: on one cluster of an NVIDIA, an AMD and an Intel
// node, a gpu:<type> request lands only on the node of that type, a plain
// gpu:N request lands on any vendor's node, and a type no node has is
// refused.
func TestMixedVendorByType(t *testing.T) {
	nodes, err := vendortest.All(t.TempDir())
	require.NoError(t, err)
	s := cluster(t, nodes...)
	typed := map[scheduler.JobID]vendortest.Node{}
	for _, n := range nodes {
		typed[submit(t, s, n.Type, int64(len(n.Config.Devices.Devices)/2))] = n
	}
	cyc := schedule(t, s)
	require.Len(t, cyc.Starts, 3)
	for id, n := range typed {
		na := alloc(t, s, id)
		assert.Equal(t, n.Config.Name, na.Name, "gpu:%s", n.Type)
		for _, d := range na.Devices {
			assert.Equal(t, n.Type, n.Config.Devices.Devices[d].Type)
		}
	}
	// Half of each node is free: 4 h100, 4 mi300x, 8 Intel tiles. Only
	// the Intel node can hold 8, so the two plain 4-GPU jobs must take the
	// NVIDIA and the AMD node: a plain request runs on any vendor.
	plain := []scheduler.JobID{submit(t, s, "", 8), submit(t, s, "", 4), submit(t, s, "", 4)}
	cyc = schedule(t, s)
	require.Len(t, cyc.Starts, 3)
	used := map[string]bool{}
	for _, id := range plain {
		used[alloc(t, s, id).Name] = true
	}
	assert.Len(t, used, 3, "plain gpu jobs on every vendor's node: %v", used)

	// Everything is taken. Free the NVIDIA job: an Intel tile request
	// still waits for Intel tiles, though four h100 are free; an h100
	// request starts. (Without backfill a waiting job holds back those
	// behind it, so the h100 job goes first.)
	for id, n := range typed {
		if n.Vendor == "nvidia" {
			require.NoError(t, s.Cancel(t0, id))
		}
	}
	h100 := submit(t, s, "h100", 4)
	tile := submit(t, s, "max_1550_tile", 1)
	cyc = schedule(t, s)
	require.Len(t, cyc.Starts, 1)
	assert.Equal(t, h100, cyc.Starts[0].Job)
	assert.Equal(t, policy.ReasonResources, reason(cyc, tile))

	_, err = s.Submit(t0, scheduler.JobSpec{GRESPerNode: []gres.Request{{Name: "gpu", Type: "a100", Count: 1}}})
	require.ErrorIs(t, err, scheduler.ErrUnsatisfiable)
}

// lanes is the total fabric lanes between the devices at positions ps.
func lanes(inv *gres.Inventory, ps []int) int {
	sum := 0
	for a := range ps {
		for b := a + 1; b < len(ps); b++ {
			sum += inv.Link(ps[a], ps[b]).NVLinks
		}
	}
	return sum
}

// bestLanes is the most lanes any k devices of inv have (exhaustive).
func bestLanes(inv *gres.Inventory, k int) int {
	best := 0
	var rec func(start int, ps []int)
	rec = func(start int, ps []int) {
		if len(ps) == k {
			best = max(best, lanes(inv, ps))
			return
		}
		for p := start; p < len(inv.Devices); p++ {
			rec(p+1, append(ps, p))
		}
	}
	rec(0, nil)
	return best
}

// TestSameScenariosEveryVendor runs the same scheduler scenarios on a
// node of each vendor, with health events from the vendor's driver.
func TestSameScenariosEveryVendor(t *testing.T) {
	for _, vendor := range vendortest.Vendors {
		fresh := func(t *testing.T) vendortest.Node {
			n, err := vendortest.New(vendor, t.TempDir(), vendor+"-01")
			require.NoError(t, err)
			return n
		}
		t.Run(vendor+"/BestConnected", func(t *testing.T) {
			n := fresh(t)
			inv := &n.Config.Devices
			s := cluster(t, n)
			for _, k := range []int{2, 4} {
				id := submit(t, s, n.Type, int64(k))
				schedule(t, s)
				devs := alloc(t, s, id).Devices
				require.Len(t, devs, k)
				assert.Equal(t, bestLanes(inv, k), lanes(inv, devs), "%d devices %v: not the best-connected set", k, devs)
				for _, d := range devs {
					assert.Equal(t, inv.Devices[devs[0]].NUMA, inv.Devices[d].NUMA, "%d devices %v: on one NUMA node", k, devs)
				}
				require.NoError(t, s.Cancel(t0, id))
			}
		})
		t.Run(vendor+"/HealthWithholds", func(t *testing.T) {
			n := fresh(t)
			s := cluster(t, n)
			total := len(n.Config.Devices.Devices)
			ev, err := n.Fault(1)
			require.NoError(t, err)
			require.False(t, ev.Healthy)
			require.NotEmpty(t, ev.Reason)
			require.NoError(t, s.SetDeviceHealth(t0, n.Config.Name, ev.Index, ev.Healthy, ev.Reason))
			info, _ := s.Node(n.Config.Name)
			assert.Equal(t, []int{1}, info.UnhealthyDevices)
			all := submit(t, s, n.Type, int64(total))
			cyc := schedule(t, s)
			assert.Empty(t, cyc.Starts, "all %d devices are not available with one unhealthy", total)
			assert.Equal(t, policy.ReasonResources, reason(cyc, all))
			require.NoError(t, s.Cancel(t0, all))
			rest := submit(t, s, n.Type, int64(total-1))
			schedule(t, s)
			assert.NotContains(t, alloc(t, s, rest).Devices, 1)
		})
		t.Run(vendor+"/DrainWhenAllUnhealthy", func(t *testing.T) {
			n := fresh(t)
			s := cluster(t, n)
			var last gres.HealthEvent
			for _, d := range n.Config.Devices.Devices {
				ev, err := n.Fault(d.Index)
				require.NoError(t, err)
				require.Equal(t, d.Index, ev.Index)
				require.NoError(t, s.SetDeviceHealth(t0, n.Config.Name, ev.Index, false, ev.Reason))
				last = ev
			}
			info, _ := s.Node(n.Config.Name)
			assert.Equal(t, scheduler.NodeDrained, info.State)
			assert.Contains(t, info.Reason, last.Reason)
			require.NoError(t, s.SetDeviceHealth(t0.Add(time.Minute), n.Config.Name, 0, true, ""))
			info, _ = s.Node(n.Config.Name)
			assert.Equal(t, scheduler.NodeIdle, info.State)
			assert.Equal(t, []int{0}, info.FreeDevices)
		})
	}
}

// TestFaultUnknownDevice: every vendor's injector refuses a device its
// node does not have.
func TestFaultUnknownDevice(t *testing.T) {
	nodes, err := vendortest.All(t.TempDir())
	require.NoError(t, err)
	for _, n := range nodes {
		_, err := n.Fault(len(n.Config.Devices.Devices) + 3)
		assert.ErrorIs(t, err, gres.ErrUnknownDevice, n.Vendor)
	}
	_, err = vendortest.New("neuron", t.TempDir(), "x")
	assert.ErrorContains(t, err, `unknown vendor "neuron"`)
}
