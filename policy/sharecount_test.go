package policy_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/sluicehq/sluice/policy"
)

// ShareCount follows slurm.conf's OverSubscribe: FORCE shares every
// job's resources, YES only those of jobs that ask (--oversubscribe), 4
// jobs per resource unless a count is given; NO and EXCLUSIVE never
// share, nor does an --exclusive job.
func TestShareCount(t *testing.T) {
	for _, tc := range []struct {
		mode      policy.OverSubscribe
		count     int
		ask, excl bool
		want      int
	}{
		{policy.OverSubscribeForce, 0, false, false, 4},
		{policy.OverSubscribeForce, 2, false, false, 2},
		{policy.OverSubscribeForce, 1, true, false, 1},
		{policy.OverSubscribeForce, 3, true, true, 1},
		{policy.OverSubscribeYes, 0, false, false, 1},
		{policy.OverSubscribeYes, 0, true, false, 4},
		{policy.OverSubscribeYes, 6, true, false, 6},
		{policy.OverSubscribeNo, 0, true, false, 1},
		{policy.OverSubscribeExclusive, 0, true, false, 1},
	} {
		p := policy.Partition{Name: "p", OverSubscribe: tc.mode, OverSubscribeCount: tc.count}
		assert.Equal(t, tc.want, p.ShareCount(tc.ask, tc.excl), "%v:%d ask=%v exclusive=%v", tc.mode, tc.count, tc.ask, tc.excl)
	}
	// ParseOverSubscribe's count feeds it: FORCE:2 shares two jobs per resource.
	mode, n, err := policy.ParseOverSubscribe("FORCE:2")
	assert.NoError(t, err)
	p := policy.Partition{Name: "p", OverSubscribe: mode, OverSubscribeCount: n}
	assert.Equal(t, 2, p.ShareCount(false, false))
}
