package accounting

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// DecisionKind says what the scheduler decided.
type DecisionKind uint8

// Decision kinds.
const (
	DecisionStart       DecisionKind = iota + 1 // a job was started
	DecisionPreempt                             // a job was preempted (suspended, requeued or cancelled for another)
	DecisionRequeue                             // a job was put back in the queue
	DecisionReservation                         // resources were reserved for a job (backfill plan) or a reservation was made
	DecisionIdle                                // a running job's GPUs were found allocated but idle (and maybe taken back)
	numDecisionKinds
)

var decisionNames = [...]string{"", "start", "preempt", "requeue", "reservation", "idle"}

// String returns "start", "preempt", "requeue", "reservation" or "idle".
func (k DecisionKind) String() string {
	if k > 0 && k < numDecisionKinds {
		return decisionNames[k]
	}
	return fmt.Sprintf("DecisionKind(%d)", uint8(k))
}

// MarshalText implements encoding.TextMarshaler.
func (k DecisionKind) MarshalText() ([]byte, error) {
	if k == 0 || k >= numDecisionKinds {
		return nil, fmt.Errorf("%w: decision kind %d", ErrInvalid, uint8(k))
	}
	return []byte(k.String()), nil
}

// UnmarshalText implements encoding.TextUnmarshaler.
func (k *DecisionKind) UnmarshalText(b []byte) error {
	v, err := ParseDecisionKind(string(b))
	if err != nil {
		return err
	}
	*k = v
	return nil
}

// ParseDecisionKind parses a kind name (case-insensitive).
func ParseDecisionKind(s string) (DecisionKind, error) {
	i := slices.Index(decisionNames[:], strings.ToLower(strings.TrimSpace(s)))
	if i <= 0 {
		return 0, fmt.Errorf("%w: decision kind %q", ErrInvalid, s)
	}
	return DecisionKind(i), nil
}

// Competitor is another job the scheduler considered when it made a
// decision, and why it did not get the resources.
type Competitor struct {
	Job      JobID   `json:"job_id"`
	Priority float64 `json:"priority"`
	Reason   string  `json:"reason"` // e.g. "Priority", "Resources", "QOSGrpGRES"
}

// Decision is an audit record of one scheduling decision with the inputs
// it was based on, so an operator can later answer "why did job X get GPUs
// before job Y".
type Decision struct {
	Seq  uint64       `json:"seq"` // assigned by PutDecision, increasing
	Kind DecisionKind `json:"kind"`
	Time time.Time    `json:"time"`
	Job  JobID        `json:"job_id"`
	// Cluster the decision was made for.
	Cluster  string     `json:"cluster,omitempty"`
	NodeList string     `json:"nodelist,omitempty"`
	GPUs     []NodeGPUs `json:"gpus,omitempty"`
	// Priority is the job's total priority and Factors its breakdown (for
	// example "age", "fairshare", "qos" → weighted value), as the priority
	// engine reported it.
	Priority float64            `json:"priority"`
	Factors  map[string]float64 `json:"factors,omitempty"`
	// PolicyVersion identifies the policy/configuration in force (a hash).
	PolicyVersion string `json:"policy_version,omitempty"`
	// Competing lists the other jobs considered.
	Competing []Competitor `json:"competing,omitempty"`
	// Detail is free text (e.g. the preemptor for a preemption, the
	// reservation name, the planned start of a backfill reservation).
	Detail string `json:"detail,omitempty"`
}

// Validate checks the decision.
func (d Decision) Validate() error {
	if d.Kind == 0 || d.Kind >= numDecisionKinds {
		return fmt.Errorf("%w: decision kind %d", ErrInvalid, uint8(d.Kind))
	}
	if d.Job == 0 {
		return fmt.Errorf("%w: decision job ID is 0", ErrInvalid)
	}
	f := func(err error) error { return fmt.Errorf("decision %v job %d: %w", d.Kind, d.Job, err) }
	if err := validTime("time", d.Time, false); err != nil {
		return f(err)
	}
	if err := validName("cluster", d.Cluster, true); err != nil {
		return f(err)
	}
	for _, c := range []struct{ field, v string }{{"nodelist", d.NodeList}, {"policy_version", d.PolicyVersion}, {"detail", d.Detail}} {
		if err := validText(c.field, c.v); err != nil {
			return f(err)
		}
	}
	if err := validGPUs(d.GPUs); err != nil {
		return f(err)
	}
	if err := validFloat("priority", d.Priority); err != nil {
		return f(err)
	}
	if err := checkEntries(d.Factors, func(k string, v float64) error {
		if err := validName("factor name", k, false); err != nil {
			return err
		}
		return validFloat("factor "+k, v)
	}); err != nil {
		return f(err)
	}
	for _, c := range d.Competing {
		if c.Job == 0 {
			return f(fmt.Errorf("%w: competing job ID is 0", ErrInvalid))
		}
		if err := validFloat("competing priority", c.Priority); err != nil {
			return f(err)
		}
		if err := validText("competing reason", c.Reason); err != nil {
			return f(err)
		}
	}
	return nil
}

// DecisionQuery selects decision records. Zero fields match everything.
type DecisionQuery struct {
	Job      JobID     // only decisions about this job, or that list it as a competitor when WithCompeting is set
	From, To time.Time // Time in [From, To)
	Kinds    []DecisionKind
	// WithCompeting also returns, for Job, the decisions where it was a
	// competitor (what it lost to). This scans the time range.
	WithCompeting bool
}

func (q DecisionQuery) matchTime(t time.Time) bool {
	return (q.From.IsZero() || !t.Before(q.From)) && (q.To.IsZero() || t.Before(q.To))
}

func (q DecisionQuery) match(d *Decision) bool {
	if !q.matchTime(d.Time) || len(q.Kinds) > 0 && !slices.Contains(q.Kinds, d.Kind) {
		return false
	}
	if q.Job == 0 || d.Job == q.Job {
		return true
	}
	return q.WithCompeting && slices.ContainsFunc(d.Competing, func(c Competitor) bool { return c.Job == q.Job })
}

// NodeState is the state a NodeEvent records, as sreport counts it.
type NodeState uint8

// Node event states.
const (
	// NodeDown: down, or fully drained — sreport's "Down".
	NodeDown NodeState = iota + 1
	// NodePlannedDown: powered down, FUTURE, or otherwise planned out of
	// service — sreport's "PlannedDown".
	NodePlannedDown
	numNodeStates
)

// String returns "down" or "planned_down".
func (s NodeState) String() string {
	switch s {
	case NodeDown:
		return "down"
	case NodePlannedDown:
		return "planned_down"
	}
	return fmt.Sprintf("NodeState(%d)", uint8(s))
}

// MarshalText implements encoding.TextMarshaler.
func (s NodeState) MarshalText() ([]byte, error) {
	if s == 0 || s >= numNodeStates {
		return nil, fmt.Errorf("%w: node state %d", ErrInvalid, uint8(s))
	}
	return []byte(s.String()), nil
}

// UnmarshalText implements encoding.TextUnmarshaler.
func (s *NodeState) UnmarshalText(b []byte) error {
	switch string(b) {
	case "down":
		*s = NodeDown
	case "planned_down":
		*s = NodePlannedDown
	default:
		return fmt.Errorf("%w: node state %q", ErrInvalid, b)
	}
	return nil
}

// NodeEvent records that a node was out of service for [Start, End) (End
// zero: still is). TRES is the node's capacity that was lost (for example
// cpu=128,mem=2097152,gres/gpu=8,node=1). Events are keyed by (Cluster,
// Node, Start): putting the same key again updates it (to set End).
type NodeEvent struct {
	Cluster string    `json:"cluster"`
	Node    string    `json:"node"`
	State   NodeState `json:"state"`
	Start   time.Time `json:"start"`
	End     time.Time `json:"end,omitzero"`
	TRES    TRES      `json:"tres"`
	Reason  string    `json:"reason,omitempty"`
}

// Validate checks the event.
func (e NodeEvent) Validate() error {
	f := func(err error) error { return fmt.Errorf("node event %s/%s: %w", e.Cluster, e.Node, err) }
	if err := validName("cluster", e.Cluster, false); err != nil {
		return f(err)
	}
	if err := validName("node", e.Node, false); err != nil {
		return f(err)
	}
	if e.State == 0 || e.State >= numNodeStates {
		return f(fmt.Errorf("%w: state %d", ErrInvalid, uint8(e.State)))
	}
	if err := validTime("start", e.Start, false); err != nil {
		return f(err)
	}
	if err := validTime("end", e.End, true); err != nil {
		return f(err)
	}
	if !e.End.IsZero() && e.End.Before(e.Start) {
		return f(fmt.Errorf("%w: end %v before start %v", ErrInvalid, e.End, e.Start))
	}
	if err := validText("reason", e.Reason); err != nil {
		return f(err)
	}
	return e.TRES.Validate()
}

// Reservation records an advance reservation for utilisation reports:
// the TRES it held over [Start, End). Unused reserved time counts as
// allocated, except in a maintenance reservation (Maint without
// IgnoreJobs), where it counts as planned down. Reservations are keyed by
// (Cluster, Name, Start).
type Reservation struct {
	Cluster    string    `json:"cluster"`
	Name       string    `json:"name"`
	Start      time.Time `json:"start"`
	End        time.Time `json:"end"`
	TRES       TRES      `json:"tres"`
	NodeList   string    `json:"nodelist,omitempty"`
	Maint      bool      `json:"maint,omitempty"`
	IgnoreJobs bool      `json:"ignore_jobs,omitempty"`
}

// Validate checks the reservation.
func (r Reservation) Validate() error {
	f := func(err error) error { return fmt.Errorf("reservation %s/%s: %w", r.Cluster, r.Name, err) }
	if err := validName("cluster", r.Cluster, false); err != nil {
		return f(err)
	}
	if err := validName("name", r.Name, false); err != nil {
		return f(err)
	}
	if err := validTime("start", r.Start, false); err != nil {
		return f(err)
	}
	if err := validTime("end", r.End, false); err != nil {
		return f(err)
	}
	if !r.End.After(r.Start) {
		return f(fmt.Errorf("%w: end %v not after start %v", ErrInvalid, r.End, r.Start))
	}
	if err := validText("nodelist", r.NodeList); err != nil {
		return f(err)
	}
	return r.TRES.Validate()
}

// Capacity records a cluster's total TRES from Since on (until the next
// Capacity record): sreport's "Reported" time is built from it.
type Capacity struct {
	Cluster string    `json:"cluster"`
	Since   time.Time `json:"since"`
	TRES    TRES      `json:"tres"`
}

// Validate checks the capacity record.
func (c Capacity) Validate() error {
	if err := validName("cluster", c.Cluster, false); err != nil {
		return fmt.Errorf("capacity: %w", err)
	}
	if err := validTime("since", c.Since, false); err != nil {
		return fmt.Errorf("capacity %s: %w", c.Cluster, err)
	}
	if err := c.TRES.Validate(); err != nil {
		return fmt.Errorf("capacity %s: %w", c.Cluster, err)
	}
	return nil
}
