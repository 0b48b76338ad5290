package scheduler

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"

	"github.com/sluicehq/sluice/telemetry"
)

// The JSON of the telemetry configuration (Config.Telemetry,
// UpdateTelemetryEvent): durations in Slurm's time format, the action by
// name, zero fields left out:
//
//	{"Rule":{"IdleBelow":5,"IdleAfter":"00:30:00"},"Action":"REQUEUE","Grace":"00:10:00"}
//
// The readings (TelemetryEvent) encode field by field, as Go names them;
// a reading the hardware or the agent does not give is -1, never left out
// (gres.DeviceSample's Utilization, MemoryUsedMiB, PowerWatts and
// EnergyJoules; JobReading's CPUSeconds and MemoryPeakBytes), since 0 is
// a reading:
//
//	{"Node":"n1","Devices":[{"Index":0,"UUID":"GPU-…","Utilization":93,"MemoryUsedMiB":40960,"PowerWatts":-1,"EnergyJoules":-1}],
//	 "Jobs":[{"Job":7,"CPUSeconds":812.5,"MemoryPeakBytes":-1}]}

type ruleJSON struct {
	IdleBelow float64 `json:",omitempty"`
	IdleAfter dur     `json:",omitzero"`
	MaxGap    dur     `json:",omitzero"`
}

type telemetryConfigJSON struct {
	Rule   ruleJSON   `json:",omitzero"`
	Action IdleAction `json:",omitzero"`
	Grace  dur        `json:",omitzero"`
	// MaxIdleRequeues is TelemetryConfig.MaxIdleRequeues.
	MaxIdleRequeues int `json:",omitzero"`
}

// MarshalJSON encodes the configuration with its durations in Slurm's
// format (a duration of a fraction of a second in Go's, so that it reads
// back exactly).
func (c TelemetryConfig) MarshalJSON() ([]byte, error) {
	return json.Marshal(telemetryConfigJSON{
		Rule:   ruleJSON{IdleBelow: c.Rule.IdleBelow, IdleAfter: dur(c.Rule.IdleAfter), MaxGap: dur(c.Rule.MaxGap)},
		Action: c.Action, Grace: dur(c.Grace), MaxIdleRequeues: c.MaxIdleRequeues,
	})
}

// UnmarshalJSON decodes what MarshalJSON writes; durations may also be
// Go's ("90s"). A field it does not know fails (a misspelt "IdleAfter"
// must not become a zero idle time under a REQUEUE action), as the
// journal's events do. The configuration is not validated here (New and
// UpdateTelemetryEvent do).
func (c *TelemetryConfig) UnmarshalJSON(b []byte) error {
	var x telemetryConfigJSON
	d := json.NewDecoder(bytes.NewReader(b))
	d.DisallowUnknownFields()
	if err := d.Decode(&x); err != nil {
		return fmt.Errorf("telemetry configuration: %w", err)
	}
	*c = TelemetryConfig{
		Rule:   telemetry.Rule{IdleBelow: x.Rule.IdleBelow, IdleAfter: time.Duration(x.Rule.IdleAfter), MaxGap: time.Duration(x.Rule.MaxGap)},
		Action: x.Action, Grace: time.Duration(x.Grace), MaxIdleRequeues: x.MaxIdleRequeues,
	}
	return nil
}
