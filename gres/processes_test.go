package gres

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestDeviceProcessesValidate(t *testing.T) {
	at := time.Unix(1700000000, 0)
	ok := DeviceProcesses{Index: 3, UUID: "GPU-x", Known: true, Processes: []ProcessSample{
		{PID: 100, SMUtil: 40, MemUtil: 10, Time: at}, {PID: 220, SMUtil: -1, MemUtil: -1},
	}}
	require.NoError(t, ok.Validate())
	require.NoError(t, DeviceProcesses{Index: 0}.Validate(), "unknown attribution, no processes")
	require.NoError(t, DeviceProcesses{Index: 0, Known: true}.Validate(), "known idle")

	for name, tc := range map[string]struct {
		d    DeviceProcesses
		want string
	}{
		"index":     {DeviceProcesses{Index: -1}, "negative index"},
		"unknown":   {DeviceProcesses{Index: 1, Processes: []ProcessSample{{PID: 5}}}, "attribution is unknown"},
		"pid":       {DeviceProcesses{Index: 1, Known: true, Processes: []ProcessSample{{PID: 0}}}, "pid 0 not positive"},
		"order":     {DeviceProcesses{Index: 1, Known: true, Processes: []ProcessSample{{PID: 9}, {PID: 4}}}, "pid 4 after pid 9"},
		"duplicate": {DeviceProcesses{Index: 1, Known: true, Processes: []ProcessSample{{PID: 9}, {PID: 9}}}, "pid 9 after pid 9"},
		"sm":        {DeviceProcesses{Index: 1, Known: true, Processes: []ProcessSample{{PID: 9, SMUtil: 100.5}}}, "SM utilization 100.5"},
		"sm nan":    {DeviceProcesses{Index: 1, Known: true, Processes: []ProcessSample{{PID: 9, SMUtil: math.NaN()}}}, "SM utilization NaN"},
		"mem":       {DeviceProcesses{Index: 1, Known: true, Processes: []ProcessSample{{PID: 9, MemUtil: -2}}}, "memory utilization -2"},
	} {
		err := tc.d.Validate()
		require.ErrorIs(t, err, ErrInvalidRequest, name)
		assert.ErrorContains(t, err, tc.want, name)
		assert.ErrorContains(t, err, "device", name)
	}
}
