package sim_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/scheduler/sim"
)

const gpuWorkload = `# a GPU workload
job,util,stall_s,phases
1,85
2,40,120
3,,600,0.5:90 1:0

"4", 37.25 ,,
5,,,0.1:0 0.2:50 0.9:99.99 1:100
`

func TestReadProfiles(t *testing.T) {
	p, err := sim.ReadProfiles(strings.NewReader(gpuWorkload))
	require.NoError(t, err)
	half := sim.Profile{StallSeconds: 600, Phases: [sim.MaxPhases]sim.Phase{{End: 5000, Util: 9000}, {End: 10000, Util: 0}}}
	stall := sim.ConstantProfile(40)
	stall.StallSeconds = 120
	assert.Equal(t, sim.Profiles{
		"1": sim.ConstantProfile(85),
		"2": stall,
		"3": half,
		"4": sim.ConstantProfile(37.25),
		"5": {Phases: [sim.MaxPhases]sim.Phase{{1000, 0}, {2000, 5000}, {9000, 9999}, {10000, 10000}}},
	}, p)

	var buf bytes.Buffer
	require.NoError(t, sim.WriteProfiles(&buf, p))
	assert.Equal(t, "job,util,stall_s,phases\n1,,0,1:85\n2,,120,1:40\n3,,600,0.5:90 1:0\n4,,0,1:37.25\n5,,0,0.1:0 0.2:50 0.9:99.99 1:100\n", buf.String())
	back, err := sim.ReadProfiles(&buf)
	require.NoError(t, err)
	assert.Equal(t, p, back)

	// The two-column form.
	p, err = sim.ReadProfiles(strings.NewReader("JOB, Util\nx,0\n"))
	require.NoError(t, err)
	assert.Equal(t, sim.Profiles{"x": sim.ConstantProfile(0)}, p)
}

func TestReadProfilesErrors(t *testing.T) {
	const head = "job,util,stall_s,phases\n"
	for _, tc := range []struct{ in, want string }{
		{"", "no header"},
		{"# only a comment\n", "no header"},
		{"job\n", "line 1: header of 1 columns"},
		{"job,util,stall_s,phases,extra\n", "line 1: header of 5 columns"},
		{"id,util\n", `line 1: header column 1 is "id", want "job"`},
		{"job,stall_s\n", `line 1: header column 2 is "stall_s", want "util"`},
		{"job,util\n1,50,10\n", "line 2: 3 fields (want 2 to 2)"},
		{head + "1\n", "line 2: 1 fields (want 2 to 4)"},
		{head + ",50\n", `line 2, field 1 (job): "": empty job ID`},
		{head + "1,50\n2,abc\n", `line 3, field 2 (util): "abc": utilisation "abc" not a percent in [0, 100]`},
		{head + "1,101\n", `field 2 (util): "101": utilisation "101" not a percent`},
		{head + "1,-0.5\n", `field 2 (util): "-0.5"`},
		{head + "1,NaN\n", `field 2 (util): "NaN"`},
		{head + "1,\n", `line 2, field 2 (util): "": neither util nor phases given`},
		{head + "1,50,,1:50\n", "both util and phases given"},
		{head + "1,50,-1\n", `line 2, field 3 (stall_s): "-1": want whole seconds`},
		{head + "1,50,1.5\n", `field 3 (stall_s): "1.5"`},
		{head + "1,50,4294967296\n", `field 3 (stall_s): "4294967296"`},
		{head + "1,,,0.5\n", `line 2, field 4 (phases): "0.5": phase 1 "0.5": want end:util`},
		{head + "1,,,0:50 1:50\n", `phase 1 "0:50": end "0" not a fraction in (0, 1]`},
		{head + "1,,,1.2:50\n", `end "1.2" not a fraction`},
		{head + "1,,,0.5:50\n", "the phases end at 0.5 of the work, not at 1"},
		{head + "1,,,0.5:50 0.4:10 1:0\n", "phase 2 ends at 0.4 of the work"},
		{head + "1,,,0.5:50 0.50001:10 1:0\n", "phase 2 ends at 0.5 of the work"},
		{head + "1,,,0.5:x 1:0\n", `phase 1 "0.5:x": utilisation "x" not a percent`},
		{head + "1,,,0.2:1 0.4:1 0.6:1 0.8:1 1:1\n", "5 phases (at most 4)"},
		{head + "1,50\n1,60\n", `line 3, field 1 (job): job "1" given twice`},
		{head + "1,\"50\n", "parse error"},
	} {
		_, err := sim.ReadProfiles(strings.NewReader(tc.in))
		require.Error(t, err, "%q", tc.in)
		assert.ErrorIs(t, err, sim.ErrProfileFile, "%q", tc.in)
		assert.Contains(t, err.Error(), tc.want, "%q", tc.in)
	}
}

// TestWithProfiles joins a file onto a source by job ID: the file's
// profile replaces the job's own, other jobs pass unchanged.
func TestWithProfiles(t *testing.T) {
	own := sim.ConstantProfile(10)
	a, b, c := job("1", 0, 1, 10, 10), job("2", 0, 1, 10, 10), job("3", 0, 1, 10, 10)
	c.Profile = own
	p := sim.Profiles{"1": sim.ConstantProfile(85), "3": sim.ConstantProfile(20), "9": sim.ConstantProfile(1)}
	src := sim.WithProfiles(&sim.SliceSource{Jobs: []sim.Job{a, b, c}}, p)
	var got []sim.Profile
	for {
		j, ok, err := src.Next()
		require.NoError(t, err)
		if !ok {
			break
		}
		got = append(got, j.Profile)
	}
	assert.Equal(t, []sim.Profile{p["1"], {}, p["3"]}, got)
	m, n := src.Matched()
	assert.Equal(t, 2, m)
	assert.Equal(t, 3, n)
}

// FuzzReadProfiles: no input makes the reader panic; what it accepts is
// valid and writes back to itself.
func FuzzReadProfiles(f *testing.F) {
	f.Add([]byte(gpuWorkload))
	f.Add([]byte("job,util\n1,50\n"))
	f.Add([]byte("job,util,stall_s,phases\n1,,,0.5:50 1:0\n"))
	f.Add([]byte("job,util,stall_s\n\"a,b\",1e1,0\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := sim.ReadProfiles(bytes.NewReader(data))
		if err != nil {
			require.ErrorIs(t, err, sim.ErrProfileFile)
			return
		}
		for id, pr := range p {
			require.NoError(t, pr.Validate(), id)
			require.True(t, pr.Known(), id)
		}
		var buf bytes.Buffer
		require.NoError(t, sim.WriteProfiles(&buf, p))
		back, err := sim.ReadProfiles(&buf)
		require.NoError(t, err, buf.String())
		require.Equal(t, p, back)
	})
}
