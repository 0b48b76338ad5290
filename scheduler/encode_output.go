package scheduler

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/sluicehq/sluice/gres"
)

// JSON of the scheduler's output values (see encode.go): what json.Marshal
// writes for a Job, an Allocation, a NodeInfo, a Cycle or an Explanation
// is meant to be read by a person — states and reasons by name, TRES as
// strings, durations in Slurm's format, unset times left out.

// MarshalJSON encodes the job: PerNode as a TRES string
// ("cpu=8,mem=32G,gres/gpu=2"), TimeLimit in Slurm's format, State and
// Reason by name, unset times omitted. ParseJobJSON reads it back.
func (j Job) MarshalJSON() ([]byte, error) {
	type plain Job
	per, err := formatVector(j.tres, j.PerNode)
	if err != nil {
		return nil, fmt.Errorf("scheduler: job %d: PerNode: %w", j.ID, err)
	}
	if j.Alloc.tres == nil {
		j.Alloc.tres = j.tres
	}
	return json.Marshal(struct {
		plain
		TimeLimit      dur       `json:",omitzero"`
		PerNode        string    `json:",omitempty"`
		SubmitTime     time.Time `json:",omitzero"`
		StartTime      time.Time `json:",omitzero"`
		EndTime        time.Time `json:",omitzero"`
		EligibleTime   time.Time `json:",omitzero"`
		LastCheckpoint time.Time `json:",omitzero"`
		ExpectedStart  time.Time `json:",omitzero"`
		EstimatedAt    time.Time `json:",omitzero"`
	}{plain(j), dur(j.TimeLimit), per, j.SubmitTime, j.StartTime, j.EndTime, j.EligibleTime, j.LastCheckpoint,
		j.ExpectedStart, j.EstimatedAt})
}

// UnmarshalJSON decodes what MarshalJSON writes. TRES strings are read
// with the registry of ParseJobJSON; decoding into a Job without one
// reads only the registry-free form (built-in names and "tres<id>").
func (j *Job) UnmarshalJSON(b []byte) error {
	type plain Job
	if j.Alloc.tres == nil {
		j.Alloc.tres = j.tres
	}
	aux := struct {
		*plain
		TimeLimit      dur
		PerNode        string
		SubmitTime     time.Time
		StartTime      time.Time
		EndTime        time.Time
		EligibleTime   time.Time
		LastCheckpoint time.Time
		ExpectedStart  time.Time
		EstimatedAt    time.Time
	}{plain: (*plain)(j), TimeLimit: dur(j.TimeLimit)}
	if err := json.Unmarshal(b, &aux); err != nil {
		return err
	}
	var per gres.Vector
	if aux.PerNode != "" {
		v, err := parseVector(j.tres, aux.PerNode)
		if err != nil {
			return fmt.Errorf("scheduler: job %d: PerNode: %w", j.ID, err)
		}
		per = v
	}
	j.TimeLimit, j.PerNode = time.Duration(aux.TimeLimit), per
	j.SubmitTime, j.StartTime, j.EndTime, j.EligibleTime = aux.SubmitTime, aux.StartTime, aux.EndTime, aux.EligibleTime
	j.LastCheckpoint, j.ExpectedStart, j.EstimatedAt = aux.LastCheckpoint, aux.ExpectedStart, aux.EstimatedAt
	return nil
}

// ParseJobJSON decodes a Job that json.Marshal wrote, reading its TRES
// strings with reg (the registry of the scheduler it came from, or one
// with the same names). The Job keeps reg's names for encoding again.
func ParseJobJSON(reg *gres.Registry, b []byte) (Job, error) {
	j := Job{tres: registryNames(reg)}
	j.Alloc.tres = j.tres
	if err := json.Unmarshal(b, &j); err != nil {
		return Job{}, err
	}
	return j, nil
}

// nodeAllocJSON is a NodeAlloc with its TRES as a string.
type nodeAllocJSON struct {
	plainNodeAlloc
	TRES string `json:",omitempty"`
}

type plainNodeAlloc NodeAlloc

// MarshalJSON encodes the allocation with each node's TRES as a TRES
// string.
func (a Allocation) MarshalJSON() ([]byte, error) {
	type plain Allocation
	var nodes []nodeAllocJSON
	if a.Nodes != nil {
		nodes = make([]nodeAllocJSON, len(a.Nodes))
	}
	for i, n := range a.Nodes {
		t, err := formatVector(a.tres, n.TRES)
		if err != nil {
			return nil, fmt.Errorf("scheduler: allocation on %s: TRES: %w", n.Name, err)
		}
		nodes[i] = nodeAllocJSON{plainNodeAlloc(n), t}
	}
	return json.Marshal(struct {
		plain
		Nodes []nodeAllocJSON
	}{plain(a), nodes})
}

// UnmarshalJSON decodes what MarshalJSON writes (TRES read as Job's
// UnmarshalJSON reads them).
func (a *Allocation) UnmarshalJSON(b []byte) error {
	type plain Allocation
	aux := struct {
		*plain
		Nodes []nodeAllocJSON
	}{plain: (*plain)(a)}
	if err := json.Unmarshal(b, &aux); err != nil {
		return err
	}
	var nodes []NodeAlloc
	if aux.Nodes != nil {
		nodes = make([]NodeAlloc, len(aux.Nodes))
	}
	for i, n := range aux.Nodes {
		nodes[i] = NodeAlloc(n.plainNodeAlloc)
		nodes[i].TRES = nil
		if n.TRES == "" {
			continue
		}
		v, err := parseVector(a.tres, n.TRES)
		if err != nil {
			return fmt.Errorf("scheduler: allocation on %s: TRES: %w", n.Name, err)
		}
		nodes[i].TRES = v
	}
	a.Nodes = nodes
	return nil
}

// MarshalJSON encodes the node with Capacity and Free as TRES strings and
// Since omitted when unset. ParseNodeInfoJSON reads it back.
func (n NodeInfo) MarshalJSON() ([]byte, error) {
	type plain NodeInfo
	capa, err := formatVector(n.tres, n.Capacity)
	if err != nil {
		return nil, fmt.Errorf("scheduler: node %s: Capacity: %w", n.Name, err)
	}
	free, err := formatVector(n.tres, n.Free)
	if err != nil {
		return nil, fmt.Errorf("scheduler: node %s: Free: %w", n.Name, err)
	}
	return json.Marshal(struct {
		plain
		Since    time.Time `json:",omitzero"`
		Capacity string
		Free     string
	}{plain(n), n.Since, capa, free})
}

// UnmarshalJSON decodes what MarshalJSON writes (TRES read as Job's
// UnmarshalJSON reads them).
func (n *NodeInfo) UnmarshalJSON(b []byte) error {
	type plain NodeInfo
	aux := struct {
		*plain
		Since    time.Time
		Capacity string
		Free     string
	}{plain: (*plain)(n)}
	if err := json.Unmarshal(b, &aux); err != nil {
		return err
	}
	capa, err := parseVector(n.tres, aux.Capacity)
	if err != nil {
		return fmt.Errorf("scheduler: node %s: Capacity: %w", n.Name, err)
	}
	free, err := parseVector(n.tres, aux.Free)
	if err != nil {
		return fmt.Errorf("scheduler: node %s: Free: %w", n.Name, err)
	}
	n.Since, n.Capacity, n.Free = aux.Since, capa, free
	return nil
}

// ParseNodeInfoJSON decodes a NodeInfo that json.Marshal wrote, reading
// its TRES strings with reg (as ParseJobJSON does).
func ParseNodeInfoJSON(reg *gres.Registry, b []byte) (NodeInfo, error) {
	n := NodeInfo{tres: registryNames(reg)}
	if err := json.Unmarshal(b, &n); err != nil {
		return NodeInfo{}, err
	}
	return n, nil
}

// MarshalJSON encodes the start with TimeLimit in Slurm's format and its
// allocation's TRES as strings.
func (st Start) MarshalJSON() ([]byte, error) {
	type plain Start
	return json.Marshal(struct {
		plain
		TimeLimit dur `json:",omitzero"`
	}{plain(st), dur(st.TimeLimit)})
}

// MarshalJSON encodes the pending job with its reason by name and
// ExpectedStart omitted when there is no estimate.
func (p Pending) MarshalJSON() ([]byte, error) {
	type plain Pending
	return json.Marshal(struct {
		plain
		ExpectedStart time.Time `json:",omitzero"`
	}{plain(p), p.ExpectedStart})
}

// MarshalJSON encodes the counterfactual with TimeLimit in Slurm's format
// and unset times omitted.
func (c Counterfactual) MarshalJSON() ([]byte, error) {
	type plain Counterfactual
	return json.Marshal(struct {
		plain
		TimeLimit dur       `json:",omitzero"`
		Start     time.Time `json:",omitzero"`
		Was       time.Time `json:",omitzero"`
		At        time.Time `json:",omitzero"`
	}{plain(c), dur(c.TimeLimit), c.Start, c.Was, c.At})
}

// MarshalJSON encodes the explanation with unset times omitted (states,
// reasons, kinds by name; the counterfactuals' durations in Slurm's
// format).
func (e Explanation) MarshalJSON() ([]byte, error) {
	type plain Explanation
	return json.Marshal(struct {
		plain
		EligibleTime time.Time `json:",omitzero"`
		EndTime      time.Time `json:",omitzero"`
	}{plain(e), e.EligibleTime, e.EndTime})
}

// MarshalJSON encodes the record with its kind, action and reason by name,
// KillAt omitted when unset and an idle decision's IdleFor in Slurm's
// time format.
func (d Decision) MarshalJSON() ([]byte, error) {
	type plain Decision
	return json.Marshal(struct {
		plain
		KillAt  time.Time `json:",omitzero"`
		IdleFor dur       `json:",omitzero"`
	}{plain(d), d.KillAt, dur(d.IdleFor)})
}

// MarshalJSON encodes the estimate with its source by name and Earliest
// omitted when no range was asked for.
func (e Estimate) MarshalJSON() ([]byte, error) {
	type plain Estimate
	return json.Marshal(struct {
		plain
		Earliest time.Time `json:",omitzero"`
	}{plain(e), e.Earliest})
}
