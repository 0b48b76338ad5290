package amd_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/gres"
	"github.com/sluicehq/sluice/gres/amd/amdtest"
	"github.com/sluicehq/sluice/gres/cgroup"
)

// TestCgroupPlan turns an AMD allocation into cgroup device rules: the
// job's render nodes and /dev/kfd are open to it, the other GPUs' render
// nodes are not.
func TestCgroupPlan(t *testing.T) {
	d, _ := fixture(t, amdtest.MI300XCPX())
	disc := discover(t, d)
	files, err := disc.FilesFor([]int{1, 8})
	require.NoError(t, err)
	assert.Equal(t, []gres.DeviceFile{render(129), render(130), {Path: "/dev/kfd", Kind: gres.CharDevice, Major: 235, Minor: 0}}, files)
	a := gres.Allocation{Job: "42", Devices: files}

	deny := cgroup.Config{Root: "/sys/fs/cgroup/sluice", ManagedDevices: disc.DeviceFiles()}
	require.NoError(t, deny.Validate())
	p, err := deny.Plan(a)
	require.NoError(t, err)
	var got []string
	for _, r := range p.Devices {
		got = append(got, r.String())
	}
	assert.Equal(t, []string{"allow a *:* rwm", "deny c 226:128 rwm", "deny c 226:131 rwm", "deny c 226:132 rwm",
		"deny c 226:133 rwm", "deny c 226:134 rwm", "deny c 226:135 rwm", "deny c 226:136 rwm"}, got)

	allow := cgroup.Config{Root: "/sys/fs/cgroup/sluice", Devices: cgroup.AllowListed, BaseDevices: []gres.DeviceFile{}}
	require.NoError(t, allow.Validate())
	p, err = allow.Plan(a)
	require.NoError(t, err)
	got = got[:0]
	for _, r := range p.Devices {
		got = append(got, r.String())
	}
	assert.Equal(t, []string{"deny a *:* rwm", "allow c 226:129 rwm", "allow c 226:130 rwm", "allow c 235:0 rwm"}, got)
}
