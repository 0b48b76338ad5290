package cgroup

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/gres"
)

func dev(major, minor int64) gres.DeviceFile {
	return gres.DeviceFile{Path: "/dev/x", Kind: gres.CharDevice, Major: major, Minor: minor}
}

func rules(p Plan) []string {
	var out []string
	for _, r := range p.Devices {
		out = append(out, r.String())
	}
	return out
}

func TestPlan(t *testing.T) {
	cpus, err := gres.ParseCoreSet("0-3,64")
	require.NoError(t, err)
	managed := []gres.DeviceFile{dev(195, 1), dev(195, 0), dev(195, 2), dev(195, 0), dev(236, 13)}
	cases := []struct {
		name  string
		cfg   Config
		a     gres.Allocation
		dir   string
		mem   string
		mems  string
		rules []string
	}{
		{"deny unallocated", Config{Root: "/sys/fs/cgroup/s", ManagedDevices: managed},
			gres.Allocation{Job: "9", CPUs: cpus, Mems: []int{1, 0, 1}, MemoryBytes: 1 << 30, Devices: []gres.DeviceFile{dev(195, 1), dev(195, 255)}},
			"/sys/fs/cgroup/s/job_9", "1073741824", "0-1",
			[]string{"allow a *:* rwm", "deny c 195:0 rwm", "deny c 195:2 rwm", "deny c 236:13 rwm"}},
		{"any minor covers", Config{Root: "/r", ManagedDevices: managed},
			gres.Allocation{Job: "9", Step: "batch", Devices: []gres.DeviceFile{dev(195, gres.AnyMinor)}},
			"/r/job_9/step_batch", "max", "", []string{"allow a *:* rwm", "deny c 236:13 rwm"}},
		{"nothing managed", Config{Root: "/r"}, gres.Allocation{Job: "1"}, "/r/job_1", "max", "", []string{"allow a *:* rwm"}},
		{"allow listed", Config{Root: "/r", Devices: AllowListed, BaseDevices: []gres.DeviceFile{dev(1, 3)}},
			gres.Allocation{Job: "1", Devices: []gres.DeviceFile{dev(195, 3), dev(1, 3), {Path: "/dev/sda", Kind: gres.BlockDevice, Major: 8, Minor: 0}}},
			"/r/job_1", "max", "", []string{"deny a *:* rwm", "allow b 8:0 rwm", "allow c 1:3 rwm", "allow c 195:3 rwm"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			require.NoError(t, c.cfg.Validate())
			p, err := c.cfg.Plan(c.a)
			require.NoError(t, err)
			assert.Equal(t, c.dir, p.Dir)
			assert.Equal(t, c.mem, p.MemoryMax)
			assert.Equal(t, c.mems, p.CpusetMems)
			assert.Equal(t, c.a.CPUs.String(), p.CpusetCpus)
			assert.Equal(t, c.rules, rules(p))
		})
	}
}

func TestPlanErrors(t *testing.T) {
	cfg := Config{Root: "/r"}
	for _, a := range []gres.Allocation{
		{Job: ""}, {Job: ".."}, {Job: "a/b"}, {Job: "1", Step: "."}, {Job: "1", MemoryBytes: -5},
		{Job: "1", Mems: []int{gres.MaxNUMANode + 1}}, {Job: "1", Devices: []gres.DeviceFile{{Path: "/dev/x", Kind: 'q'}}},
	} {
		_, err := cfg.Plan(a)
		require.ErrorIs(t, err, gres.ErrInvalidAllocation, "%+v", a)
	}
	_, err := cfg.JobDir("1", "a b")
	require.ErrorIs(t, err, gres.ErrInvalidAllocation)
}

func TestConfigValidate(t *testing.T) {
	for _, c := range []Config{
		{}, {Root: "relative"}, {Root: "/"}, {Root: "/a/../b"}, {Root: "/r", Controllers: []string{"cpuset", "cpuset"}},
		{Root: "/r", Controllers: []string{"devices"}}, {Root: "/r", Devices: 7},
		{Root: "/r", ManagedDevices: []gres.DeviceFile{dev(195, gres.AnyMinor)}},
		{Root: "/r", ManagedDevices: []gres.DeviceFile{{Path: "x"}}}, {Root: "/r", BaseDevices: []gres.DeviceFile{{Path: "/dev/x", Major: -1}}},
		{Root: "/r", AllowedSwapPercent: -1}, {Root: "/r", AllowedSwapPercent: math.NaN()}, {Root: "/r", AllowedSwapPercent: math.Inf(1)},
		{Root: "/r", AllowedSwapPercent: 10, UnconstrainedSwap: true},
	} {
		require.ErrorIs(t, c.Validate(), ErrInvalidConfig, "%+v", c)
	}
	require.NoError(t, (&Config{Root: "/sys/fs/cgroup/sluice", Controllers: []string{}}).Validate())
	assert.Equal(t, "deny-unallocated", DenyUnallocated.String())
	assert.Equal(t, "allow-listed", AllowListed.String())
	assert.Equal(t, "DevicePolicy(9)", DevicePolicy(9).String())
	for _, f := range DefaultBaseDevices() {
		require.NoError(t, f.Validate())
	}
}

func TestPlanSwapLimit(t *testing.T) {
	for _, c := range []struct {
		cfg  Config
		mem  int64
		want string
	}{
		{Config{Root: "/r"}, 1 << 30, "0"},
		{Config{Root: "/r"}, 0, "max"},
		{Config{Root: "/r", AllowedSwapPercent: 50}, 1 << 30, "536870912"},
		{Config{Root: "/r", AllowedSwapPercent: 0.5}, 1000, "5"},
		{Config{Root: "/r", AllowedSwapPercent: 250}, 1 << 20, "2621440"},
		{Config{Root: "/r", AllowedSwapPercent: 1000}, math.MaxInt64, "max"},
		{Config{Root: "/r", UnconstrainedSwap: true}, 1 << 30, "max"},
	} {
		require.NoError(t, c.cfg.Validate())
		p, err := c.cfg.Plan(gres.Allocation{Job: "1", MemoryBytes: c.mem})
		require.NoError(t, err)
		assert.Equal(t, c.want, p.MemorySwapMax, "%+v, %d bytes", c.cfg, c.mem)
	}
}

// TestPlanSharedAndMIGDevices: a job holding shards of GPU 1 may open
// GPU 1's file (other jobs share it too), and a job on a MIG instance its
// parent's file and the instance's capability files, nothing else.
func TestPlanSharedAndMIGDevices(t *testing.T) {
	gpu := func(minor int64) gres.DeviceFile {
		return gres.DeviceFile{Path: "/dev/nvidia" + string(rune('0'+minor)), Kind: gres.CharDevice, Major: 195, Minor: minor}
	}
	caps := func(minor int64) gres.DeviceFile {
		return gres.DeviceFile{Path: "/dev/nvidia-caps/nvidia-cap", Kind: gres.CharDevice, Major: 237, Minor: minor}
	}
	disc := gres.Discovery{
		Inventory: gres.Inventory{Devices: []gres.Device{
			{Index: 0, Name: "gpu", NUMA: -1, Socket: -1}, {Index: 1, Name: "gpu", NUMA: -1, Socket: -1},
			{Index: 2, Name: "gpu", Type: "h100_1g.10gb", NUMA: -1, Socket: -1},
		}, Shares: []gres.DeviceShares{{Device: 1, Shards: 4}},
			MIG: []gres.MIGInstance{{Device: 2, Parent: 0, Profile: "1g.10gb", GPUInstance: 9}}},
		Files: [][]gres.DeviceFile{{gpu(0)}, {gpu(1)}, {gpu(0), caps(84), caps(85)}},
	}
	require.NoError(t, disc.Validate())
	cfg := Config{Root: "/r", ManagedDevices: []gres.DeviceFile{gpu(0), gpu(1), caps(84), caps(85)}}
	files, err := disc.FilesFor(gres.ShareDevices([]gres.ShareGrant{{Device: 1, Name: "shard", Count: 2}}))
	require.NoError(t, err)
	p, err := cfg.Plan(gres.Allocation{Job: "7", Devices: files})
	require.NoError(t, err)
	assert.Equal(t, []string{"allow a *:* rwm", "deny c 195:0 rwm", "deny c 237:84 rwm", "deny c 237:85 rwm"}, rules(p))
	files, err = disc.FilesFor([]int{2})
	require.NoError(t, err)
	p, err = cfg.Plan(gres.Allocation{Job: "8", Devices: files})
	require.NoError(t, err)
	assert.Equal(t, []string{"allow a *:* rwm", "deny c 195:1 rwm"}, rules(p))
}
