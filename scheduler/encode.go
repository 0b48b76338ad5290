package scheduler

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/sluicehq/sluice/gres"
	"github.com/sluicehq/sluice/policy"
)

// Encodings. Every value that crosses a process boundary has a text or
// JSON form a person can read and a program can decode:
//
//   - enums as their Slurm (or sinfo, squeue) strings, read back
//     case-insensitively ("RUNNING" or "R", "mixed", "no-requeue");
//   - durations in Slurm's time format, "1-12:00:00" (policy.Duration),
//     omitted when zero; times as RFC 3339;
//   - resource vectors as TRES strings, "cpu=4,mem=16G,gres/gpu=2".
//
// The input side (JobSpec, NodeConfig, PartitionConfig, the events) decodes
// to exactly the value encoded. The output side (Job, Allocation,
// NodeInfo, Cycle, Explanation) carries the scheduler's registry where the
// scheduler builds it, so its vectors are written with the registry's
// names; a value built by hand, without one, writes the built-in names and
// "tres<id>" for the others (gres.Vector's text form). ParseJobJSON and
// ParseNodeInfoJSON read them back with a registry.

// ErrUnknownName reports a string that names no value of an enum.
var ErrUnknownName = errors.New("unknown name")

// nameText returns the name of k for MarshalText.
func nameText[K ~uint8](k K, names []string, typ string) ([]byte, error) {
	if int(k) < len(names) && names[k] != "" {
		return []byte(names[k]), nil
	}
	return nil, fmt.Errorf("scheduler: %w: %s(%d) has no name", ErrUnknownName, typ, uint8(k))
}

// parseName returns the value named s (case-insensitive, blanks around it
// ignored), or an error naming s and the type.
func parseName[K ~uint8](s string, names []string, typ string) (K, error) {
	t := strings.TrimSpace(s)
	for i, n := range names {
		if n != "" && strings.EqualFold(t, n) {
			return K(i), nil
		}
	}
	return 0, fmt.Errorf("scheduler: %w: %s %q", ErrUnknownName, typ, s)
}

// unmarshalName is UnmarshalText for an enum named by names.
func unmarshalName[K ~uint8](dst *K, b []byte, names []string, typ string) error {
	v, err := parseName[K](string(b), names, typ)
	if err != nil {
		return err
	}
	*dst = v
	return nil
}

// ParseJobState parses a job state: Slurm's long name ("RUNNING",
// "NODE_FAIL") or squeue's short code ("R", "NF"), case-insensitive.
// Errors wrap ErrUnknownName and name the value.
func ParseJobState(s string) (JobState, error) {
	t := strings.TrimSpace(s)
	for i, n := range jobStateNames {
		if strings.EqualFold(t, n.long) || strings.EqualFold(t, n.short) {
			return JobState(i), nil
		}
	}
	return 0, fmt.Errorf("scheduler: %w: JobState %q", ErrUnknownName, s)
}

// MarshalText writes Slurm's long name ("RUNNING").
func (s JobState) MarshalText() ([]byte, error) {
	if int(s) >= len(jobStateNames) {
		return nil, fmt.Errorf("scheduler: %w: JobState(%d) has no name", ErrUnknownName, uint8(s))
	}
	return []byte(jobStateNames[s].long), nil
}

// UnmarshalText reads what ParseJobState accepts.
func (s *JobState) UnmarshalText(b []byte) error {
	v, err := ParseJobState(string(b))
	if err != nil {
		return err
	}
	*s = v
	return nil
}

// MarshalText writes "default", "requeue" or "no-requeue".
func (m RequeueMode) MarshalText() ([]byte, error) {
	return nameText(m, requeueModeNames[:], "RequeueMode")
}

// UnmarshalText reads "default", "requeue" or "no-requeue".
func (m *RequeueMode) UnmarshalText(b []byte) error {
	return unmarshalName(m, b, requeueModeNames[:], "RequeueMode")
}

var partitionStateNames = [...]string{"UP", "DOWN", "DRAIN", "INACTIVE"}

// MarshalText writes "UP", "DOWN", "DRAIN" or "INACTIVE".
func (s PartitionState) MarshalText() ([]byte, error) {
	return nameText(s, partitionStateNames[:], "PartitionState")
}

// UnmarshalText reads "UP", "DOWN", "DRAIN" or "INACTIVE".
func (s *PartitionState) UnmarshalText(b []byte) error {
	return unmarshalName(s, b, partitionStateNames[:], "PartitionState")
}

// MarshalText writes sinfo's long name ("mixed").
func (s NodeState) MarshalText() ([]byte, error) { return nameText(s, nodeStateNames[:], "NodeState") }

// UnmarshalText reads sinfo's long name.
func (s *NodeState) UnmarshalText(b []byte) error {
	return unmarshalName(s, b, nodeStateNames[:], "NodeState")
}

// MarshalText writes the kind's String ("resources").
func (k BlockerKind) MarshalText() ([]byte, error) {
	return nameText(k, blockerKindNames[:], "BlockerKind")
}

// UnmarshalText reads the kind's String.
func (k *BlockerKind) UnmarshalText(b []byte) error {
	return unmarshalName(k, b, blockerKindNames[:], "BlockerKind")
}

// MarshalText writes the source's String ("reserved").
func (e EstimateSource) MarshalText() ([]byte, error) {
	return nameText(e, estimateSourceNames[:], "EstimateSource")
}

// UnmarshalText reads the source's String.
func (e *EstimateSource) UnmarshalText(b []byte) error {
	return unmarshalName(e, b, estimateSourceNames[:], "EstimateSource")
}

// MarshalText writes the kind's String ("time-limit").
func (k CounterfactualKind) MarshalText() ([]byte, error) {
	return nameText(k, counterKindNames[:], "CounterfactualKind")
}

// UnmarshalText reads the kind's String.
func (k *CounterfactualKind) UnmarshalText(b []byte) error {
	return unmarshalName(k, b, counterKindNames[:], "CounterfactualKind")
}

// MarshalText writes the kind's String ("backfill-start").
func (k DecisionKind) MarshalText() ([]byte, error) {
	return nameText(k, decisionKindNames[:], "DecisionKind")
}

// UnmarshalText reads the kind's String.
func (k *DecisionKind) UnmarshalText(b []byte) error {
	return unmarshalName(k, b, decisionKindNames[:], "DecisionKind")
}

// MarshalText writes the class's String ("fragmented").
func (c IdleClass) MarshalText() ([]byte, error) { return nameText(c, idleClassNames[:], "IdleClass") }

// UnmarshalText reads the class's String.
func (c *IdleClass) UnmarshalText(b []byte) error {
	return unmarshalName(c, b, idleClassNames[:], "IdleClass")
}

// MarshalText writes the kind's String ("queue-order").
func (k ComparisonKind) MarshalText() ([]byte, error) {
	return nameText(k, comparisonKindNames[:], "ComparisonKind")
}

// UnmarshalText reads the kind's String.
func (k *ComparisonKind) UnmarshalText(b []byte) error {
	return unmarshalName(k, b, comparisonKindNames[:], "ComparisonKind")
}

// dur is the JSON form of a duration field.
type dur = policy.Duration

// MarshalJSON encodes the spec with its durations in Slurm's time format
// (omitted when zero), BeginTime omitted when zero, GRES requests as
// "gpu:h100:2" and enums by name. UnmarshalJSON gives back the same spec.
func (j JobSpec) MarshalJSON() ([]byte, error) {
	type plain JobSpec
	return json.Marshal(struct {
		plain
		TimeMin            dur       `json:",omitzero"`
		TimeLimit          dur       `json:",omitzero"`
		BeginTime          time.Time `json:",omitzero"`
		CheckpointInterval dur       `json:",omitzero"`
		SwitchesMaxWait    dur       `json:",omitzero"`
	}{plain(j), dur(j.TimeMin), dur(j.TimeLimit), j.BeginTime, dur(j.CheckpointInterval), dur(j.SwitchesMaxWait)})
}

// UnmarshalJSON decodes what MarshalJSON writes (durations in any form
// policy.Duration reads).
func (j *JobSpec) UnmarshalJSON(b []byte) error {
	type plain JobSpec
	aux := struct {
		*plain
		TimeMin            dur
		TimeLimit          dur
		BeginTime          time.Time
		CheckpointInterval dur
		SwitchesMaxWait    dur
		// ExcludeNodes is Exclude's former name, still read.
		ExcludeNodes []string
	}{(*plain)(j), dur(j.TimeMin), dur(j.TimeLimit), j.BeginTime, dur(j.CheckpointInterval), dur(j.SwitchesMaxWait), nil}
	if err := json.Unmarshal(b, &aux); err != nil {
		return err
	}
	if j.Exclude == nil {
		j.Exclude = aux.ExcludeNodes
	}
	j.TimeMin, j.TimeLimit, j.BeginTime = time.Duration(aux.TimeMin), time.Duration(aux.TimeLimit), aux.BeginTime
	j.CheckpointInterval, j.SwitchesMaxWait = time.Duration(aux.CheckpointInterval), time.Duration(aux.SwitchesMaxWait)
	return nil
}

// MarshalJSON encodes the partition with DefaultTime, MaxTime and
// GraceTime in Slurm's time format (omitted when zero) and its state and
// policy enums by name.
func (p PartitionConfig) MarshalJSON() ([]byte, error) {
	type plain PartitionConfig
	return json.Marshal(struct {
		plain
		DefaultTime dur `json:",omitzero"`
		MaxTime     dur `json:",omitzero"`
		GraceTime   dur `json:",omitzero"`
	}{plain(p), dur(p.DefaultTime), dur(p.MaxTime), dur(p.GraceTime)})
}

// UnmarshalJSON decodes what MarshalJSON writes.
func (p *PartitionConfig) UnmarshalJSON(b []byte) error {
	type plain PartitionConfig
	aux := struct {
		*plain
		DefaultTime dur
		MaxTime     dur
		GraceTime   dur
	}{(*plain)(p), dur(p.DefaultTime), dur(p.MaxTime), dur(p.GraceTime)}
	if err := json.Unmarshal(b, &aux); err != nil {
		return err
	}
	p.DefaultTime, p.MaxTime, p.GraceTime = time.Duration(aux.DefaultTime), time.Duration(aux.MaxTime), time.Duration(aux.GraceTime)
	return nil
}

// tresNames returns the registry's names by ID, shared by the output
// values that carry them (computed at New; fresh if the registry has
// grown since).
func (s *Scheduler) tresNames() []string {
	if len(s.tresByID) != s.reg.Len() {
		return s.reg.Names()
	}
	return s.tresByID
}

// registryNames returns reg's names, or nil for a nil reg.
func registryNames(reg *gres.Registry) []string {
	if reg == nil {
		return nil
	}
	return reg.Names()
}

// formatVector writes v with names (a registry's names by ID), or as
// gres.Vector's text form without them.
func formatVector(names []string, v gres.Vector) (string, error) {
	return v.FormatNamed(names)
}

// parseVector reads what formatVector writes: with names, any TRES string
// of a registry holding those names; without, gres.Vector's text form.
func parseVector(names []string, s string) (gres.Vector, error) {
	if len(names) < 5 {
		var v gres.Vector
		err := v.UnmarshalText([]byte(s))
		return v, err
	}
	reg, err := gres.NewRegistry(names[5:]...) // the built-ins come first
	if err != nil {
		return nil, err
	}
	return reg.ParseTRES(s)
}
