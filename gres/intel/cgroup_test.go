//go:build linux

package intel_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/gres"
	"github.com/sluicehq/sluice/gres/cgroup"
	"github.com/sluicehq/sluice/gres/intel"
	"github.com/sluicehq/sluice/gres/intel/inteltest"
)

// TestCgroupPlan: the cgroup driver confines a job given one Max 1550
// tile to its card's DRM minors (card4, renderD131), denying every other
// card's under the default policy.
func TestCgroupPlan(t *testing.T) {
	t.Parallel()
	_, disc, _ := discover(t, inteltest.Max1550Node(), intel.Options{})
	files, err := disc.FilesFor([]int{7}) // card4 (the fourth GPU), tile 1
	require.NoError(t, err)
	cfg := cgroup.Config{Root: "/sys/fs/cgroup/sluice", ManagedDevices: disc.DeviceFiles()}
	p, err := cfg.Plan(gres.Allocation{Job: "42", Devices: files})
	require.NoError(t, err)
	require.Len(t, p.Devices, 1+14, "allow all, then deny the 7 other cards' card and render minors")
	assert.Equal(t, "allow a *:* rwm", p.Devices[0].String())
	for _, r := range p.Devices[1:] {
		assert.False(t, r.Allow)
		assert.NotContains(t, []int64{4, 131}, r.Minor, "the job's own card and render node stay allowed")
	}
	cfg.Devices = cgroup.AllowListed
	p, err = cfg.Plan(gres.Allocation{Job: "42", Devices: files})
	require.NoError(t, err)
	var allowed []string
	for _, r := range p.Devices {
		if r.Allow && r.Major == 226 {
			allowed = append(allowed, r.String())
		}
	}
	assert.Equal(t, []string{"allow c 226:4 rwm", "allow c 226:131 rwm"}, allowed)
}
