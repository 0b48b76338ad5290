package scheduler

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"

	"github.com/sluicehq/sluice/policy"
)

// EventKind names a kind of Event: its tag in an Entry's encoding. Kinds
// are stable: a journal written today decodes tomorrow.
type EventKind string

// The event kinds.
const (
	KindSubmit            EventKind = "submit"
	KindCancel            EventKind = "cancel"
	KindFinish            EventKind = "finish"
	KindRequeue           EventKind = "requeue"
	KindCheckpoint        EventKind = "checkpoint"
	KindDrainNode         EventKind = "drain_node"
	KindFailNode          EventKind = "fail_node"
	KindResumeNode        EventKind = "resume_node"
	KindDownNode          EventKind = "down_node"
	KindDeviceHealth      EventKind = "device_health"
	KindAddReservation    EventKind = "add_reservation"
	KindRemoveReservation EventKind = "remove_reservation"
	KindSchedule          EventKind = "schedule"
)

// Event is one state change, as data: every mutating method of Scheduler
// builds one and applies it with Apply, so a caller may equally build the
// value itself, journal it, ship it to a replica or replay it. Same events
// in the same order, each with the same time, give the same state and the
// same decisions, bit for bit.
//
// The concrete types are the *Event structs of this package; their fields
// are plain data (names, IDs, numbers, times), encoded by Entry.
type Event interface {
	// Kind returns the event's kind.
	Kind() EventKind
	// apply applies the event at now; on error it changes nothing.
	apply(s *Scheduler, now time.Time) (Result, error)
}

// Result is what applying an event gives back.
type Result struct {
	// Job is the job the event created (SubmitEvent: the first task of an
	// array) or named.
	Job JobID
	// Jobs lists the tasks a SubmitEvent with an Array created, or the
	// jobs a DownNodeEvent ended or requeued (in start order).
	Jobs []JobID
	// Cycle is a ScheduleEvent's cycle.
	Cycle *Cycle
}

// EventLog receives every event before it is applied (write-ahead): a
// journal (package scheduler/journal) or a replication log. When Append
// fails the event is not applied and Apply returns the error. An event
// that Append accepted may still fail to apply (an unknown job, say); it
// then changes nothing, and replaying it fails the same way.
type EventLog interface {
	Append(now time.Time, ev Event) error
}

// LastEventTime returns the time of the latest event applied (zero before
// the first): the floor of the clock, which a caller recovering from a
// journal or a snapshot must not go below.
func (s *Scheduler) LastEventTime() time.Time { return s.last }

// SetEventLog makes every later event go through l before it is applied;
// nil stops logging. The log is not part of the scheduler's state.
func (s *Scheduler) SetEventLog(l EventLog) { s.log = l }

// Apply applies ev at now: it checks the clock (now must not be before the
// last event applied), hands ev to the EventLog if one is set, then
// applies it. On error nothing has changed. Every mutating method of
// Scheduler is a call of Apply.
func (s *Scheduler) Apply(now time.Time, ev Event) (Result, error) {
	if ev == nil {
		return Result{}, fmt.Errorf("%w: nil event", ErrInvalidEvent)
	}
	if err := s.tick(now); err != nil {
		return Result{}, err
	}
	// An event that depends on input from outside the scheduler (a
	// cycle's fair-share tree) takes it in now, so that what is logged
	// and applied is the whole input.
	if p, ok := ev.(preparer); ok {
		var err error
		if ev, err = p.prepare(s, now); err != nil {
			return Result{}, err
		}
	}
	if s.log != nil {
		if err := s.log.Append(now, ev); err != nil {
			return Result{}, fmt.Errorf("scheduler: event log: %s: %w", ev.Kind(), err)
		}
	}
	return ev.apply(s, now)
}

// preparer is an event that reads input from outside the scheduler into
// itself before it is logged and applied.
type preparer interface {
	prepare(s *Scheduler, now time.Time) (Event, error)
}

// SubmitEvent queues a new job, or with Array a job array (see Submit and
// SubmitArray). Result.Job is the (first) job's ID; Result.Jobs the array's
// tasks.
type SubmitEvent struct {
	Spec JobSpec
	// Array is sbatch --array's index list; empty submits one job.
	Array string `json:",omitempty"`
	// Components makes the job heterogeneous (sbatch with ':'-separated
	// components, see SubmitHet): Spec is its first component, the
	// leader (HetJobOffset 0), and Components the others, in order.
	// Result.Jobs lists every component's ID. It excludes Array.
	Components []JobSpec `json:",omitempty"`
}

// Kind returns KindSubmit.
func (SubmitEvent) Kind() EventKind { return KindSubmit }

func (e SubmitEvent) apply(s *Scheduler, now time.Time) (Result, error) {
	if len(e.Components) > 0 {
		return s.submitHetEvent(now, e)
	}
	if e.Array == "" {
		id, err := s.submit(now, e.Spec, nil, 0)
		return Result{Job: id}, err
	}
	ids, err := s.submitArray(now, e.Spec, e.Array)
	if err != nil {
		return Result{}, err
	}
	return Result{Job: ids[0], Jobs: ids}, nil
}

// Submit validates spec and queues a new pending job, returning its ID.
// A spec that is malformed (negative sizes, unknown partition or GRES), that
// names a partition not accepting jobs (DRAIN or INACTIVE), or that no node
// of its partition could ever satisfy is rejected with an error naming the
// field, and nothing changes.
func (s *Scheduler) Submit(now time.Time, spec JobSpec) (JobID, error) {
	r, err := s.Apply(now, SubmitEvent{Spec: spec})
	return r.Job, err
}

// SubmitArray submits a job array, sbatch --array: array is the index
// list ("0-15", "1,3,5-9", "0-31:2"), optionally with a "%N" throttle
// ("0-15%4": at most 4 tasks run at once; the others pend with
// JobArrayTaskLimit). Every task is a job of its own, with consecutive
// IDs; ArrayJobID is the first task's ID. The whole array is accepted or
// rejected (submit limits count every task).
func (s *Scheduler) SubmitArray(now time.Time, spec JobSpec, array string) ([]JobID, error) {
	if array == "" {
		return nil, fmt.Errorf("%w: array: empty index list", ErrInvalidJob)
	}
	r, err := s.Apply(now, SubmitEvent{Spec: spec, Array: array})
	return r.Jobs, err
}

// CancelEvent ends a pending, running or suspended job as CANCELLED.
type CancelEvent struct{ Job JobID }

// Kind returns KindCancel.
func (CancelEvent) Kind() EventKind { return KindCancel }

func (e CancelEvent) apply(s *Scheduler, now time.Time) (Result, error) {
	return Result{Job: e.Job}, s.cancelJob(now, e.Job)
}

// Cancel ends a pending or running job as CANCELLED, freeing its resources.
func (s *Scheduler) Cancel(now time.Time, id JobID) error {
	_, err := s.Apply(now, CancelEvent{Job: id})
	return err
}

// FinishEvent records that a running job exited with ExitCode.
type FinishEvent struct {
	Job      JobID
	ExitCode int
}

// Kind returns KindFinish.
func (FinishEvent) Kind() EventKind { return KindFinish }

func (e FinishEvent) apply(s *Scheduler, now time.Time) (Result, error) {
	return Result{Job: e.Job}, s.finishJob(now, e.Job, e.ExitCode)
}

// Finish records that a running job exited: COMPLETED for exit code 0,
// FAILED otherwise. Its resources are freed.
func (s *Scheduler) Finish(now time.Time, id JobID, exitCode int) error {
	_, err := s.Apply(now, FinishEvent{Job: id, ExitCode: exitCode})
	return err
}

// RequeueEvent puts a running job back in the queue (see Requeue and
// RequeueExcluding).
type RequeueEvent struct {
	Job JobID
	// ExcludeNodes names the nodes the job's launch failed on: the job
	// is kept off them from then on (they join JobSpec.Exclude).
	ExcludeNodes []string `json:",omitempty"`
}

// Kind returns KindRequeue.
func (RequeueEvent) Kind() EventKind { return KindRequeue }

func (e RequeueEvent) apply(s *Scheduler, now time.Time) (Result, error) {
	if len(e.ExcludeNodes) > 0 {
		return Result{Job: e.Job}, s.requeueExcluding(now, e.Job, e.ExcludeNodes)
	}
	return Result{Job: e.Job}, s.requeueJob(now, e.Job)
}

// Requeue puts a running job back in the queue (for example after its
// launch failed on the nodes it was given). Its resources are freed and it
// keeps its submit time, so it keeps its place in FCFS order.
func (s *Scheduler) Requeue(now time.Time, id JobID) error {
	_, err := s.Apply(now, RequeueEvent{Job: id})
	return err
}

// RequeueExcluding is Requeue after the job's launch failed on nodes: the
// job pends with launch_failed_requeued and is kept off those nodes from
// then on (JobSpec.Exclude, as sbatch --exclude), by placement, the
// backfill plan, preemption and Explain. An unknown node name, or
// exclusions that leave too few nodes able to hold the job, refuse the
// requeue (ErrInvalidJob); Requeue without them still requeues it.
func (s *Scheduler) RequeueExcluding(now time.Time, id JobID, nodes ...string) error {
	_, err := s.Apply(now, RequeueEvent{Job: id, ExcludeNodes: nodes})
	return err
}

// CheckpointEvent records that a running job saved its state.
type CheckpointEvent struct{ Job JobID }

// Kind returns KindCheckpoint.
func (CheckpointEvent) Kind() EventKind { return KindCheckpoint }

func (e CheckpointEvent) apply(s *Scheduler, now time.Time) (Result, error) {
	return Result{Job: e.Job}, s.checkpointJob(now, e.Job)
}

// Checkpoint records that a running job saved its state at now: if it is
// preempted later, only the work since then is lost, which makes it a
// cheaper victim.
func (s *Scheduler) Checkpoint(now time.Time, id JobID) error {
	_, err := s.Apply(now, CheckpointEvent{Job: id})
	return err
}

// DrainNodeEvent stops new work from starting on a node (see DrainNode).
type DrainNodeEvent struct{ Node, Reason string }

// Kind returns KindDrainNode.
func (DrainNodeEvent) Kind() EventKind { return KindDrainNode }

func (e DrainNodeEvent) apply(s *Scheduler, now time.Time) (Result, error) {
	return Result{}, s.setAdmin(now, e.Node, adminDrain, e.Reason)
}

// DrainNode stops new work from starting on a node; running jobs continue.
// The node shows DRAINING until they end, then DRAINED.
func (s *Scheduler) DrainNode(now time.Time, name, reason string) error {
	_, err := s.Apply(now, DrainNodeEvent{Node: name, Reason: reason})
	return err
}

// FailNodeEvent marks a node as failing (see FailNode).
type FailNodeEvent struct{ Node, Reason string }

// Kind returns KindFailNode.
func (FailNodeEvent) Kind() EventKind { return KindFailNode }

func (e FailNodeEvent) apply(s *Scheduler, now time.Time) (Result, error) {
	return Result{}, s.setAdmin(now, e.Node, adminFail, e.Reason)
}

// FailNode marks a node as failing (expected to fail soon): like a drain,
// running jobs continue but nothing new starts.
func (s *Scheduler) FailNode(now time.Time, name, reason string) error {
	_, err := s.Apply(now, FailNodeEvent{Node: name, Reason: reason})
	return err
}

// ResumeNodeEvent returns a node to service (see ResumeNode).
type ResumeNodeEvent struct{ Node string }

// Kind returns KindResumeNode.
func (ResumeNodeEvent) Kind() EventKind { return KindResumeNode }

func (e ResumeNodeEvent) apply(s *Scheduler, now time.Time) (Result, error) {
	return Result{}, s.setAdmin(now, e.Node, adminUp, "")
}

// ResumeNode returns a drained, failed or down node to service.
func (s *Scheduler) ResumeNode(now time.Time, name string) error {
	_, err := s.Apply(now, ResumeNodeEvent{Node: name})
	return err
}

// DownNodeEvent marks a node DOWN (see DownNode); Result.Jobs lists the
// jobs it ended or requeued.
type DownNodeEvent struct{ Node, Reason string }

// Kind returns KindDownNode.
func (DownNodeEvent) Kind() EventKind { return KindDownNode }

func (e DownNodeEvent) apply(s *Scheduler, now time.Time) (Result, error) {
	ids, err := s.downNode(now, e.Node, e.Reason)
	return Result{Jobs: ids}, err
}

// DownNode marks a node DOWN. Every job running on it ends: a
// requeueable job (JobSpec.Requeue, by default Config.JobRequeue) goes
// back to the queue, the others end in NODE_FAIL.
// It returns the affected jobs in start order, so the caller can kill them
// on their other nodes.
func (s *Scheduler) DownNode(now time.Time, name, reason string) ([]JobID, error) {
	r, err := s.Apply(now, DownNodeEvent{Node: name, Reason: reason})
	return r.Jobs, err
}

// DeviceHealthEvent records a device health change (see SetDeviceHealth).
type DeviceHealthEvent struct {
	Node    string
	Index   int
	Healthy bool
	Reason  string `json:",omitempty"`
}

// Kind returns KindDeviceHealth.
func (DeviceHealthEvent) Kind() EventKind { return KindDeviceHealth }

func (e DeviceHealthEvent) apply(s *Scheduler, now time.Time) (Result, error) {
	return Result{}, s.setDeviceHealth(now, e.Node, e.Index, e.Healthy, e.Reason)
}

// SetDeviceHealth records a device health event (from an NVML XID or ECC
// watcher, say). An unhealthy device is never allocated; a job holding it
// keeps running (the caller decides whether to kill it), and the device is
// not returned to the free pool when the job ends. When every device of a
// node is unhealthy the node is drained with the reason; when one recovers
// such an automatic drain is lifted.
func (s *Scheduler) SetDeviceHealth(now time.Time, nodeName string, index int, healthy bool, reason string) error {
	_, err := s.Apply(now, DeviceHealthEvent{Node: nodeName, Index: index, Healthy: healthy, Reason: reason})
	return err
}

// AddReservationEvent creates an advance reservation (see AddReservation).
type AddReservationEvent struct{ Reservation policy.Reservation }

// Kind returns KindAddReservation.
func (AddReservationEvent) Kind() EventKind { return KindAddReservation }

func (e AddReservationEvent) apply(s *Scheduler, now time.Time) (Result, error) {
	return Result{}, s.addReservation(now, e.Reservation)
}

// RemoveReservationEvent deletes a reservation (see RemoveReservation).
type RemoveReservationEvent struct{ Name string }

// Kind returns KindRemoveReservation.
func (RemoveReservationEvent) Kind() EventKind { return KindRemoveReservation }

func (e RemoveReservationEvent) apply(s *Scheduler, now time.Time) (Result, error) {
	return Result{}, s.removeReservation(now, e.Name)
}

// ScheduleEvent runs one scheduling cycle (see Schedule); Result.Cycle is
// the cycle. A cycle is a pure function of the state before it and of the
// event: a replica or a recovering process that applies it again computes
// the same cycle, and must not launch its starts again (key launches by
// job ID and start time).
type ScheduleEvent struct {
	// FairShare is the fair-share input of the cycle's priority
	// recalculation. Apply fills it from the PriorityConfig.FairShare
	// source when a recalculation is due (before the event is logged), so
	// that the input the ledger gave is part of the event: a replay
	// recomputes the same priorities without asking the ledger, whose
	// usage has moved on since. Nil: none was due, or there is no source.
	// It is used only when a recalculation is due.
	FairShare *FairShareTree `json:",omitempty"`
}

// Kind returns KindSchedule.
func (ScheduleEvent) Kind() EventKind { return KindSchedule }

// prepare reads the fair-share input the cycle needs into the event.
func (e ScheduleEvent) prepare(s *Scheduler, now time.Time) (Event, error) {
	if e.FairShare != nil {
		return e, nil
	}
	fs, err := s.readFairShare(now)
	if err != nil || fs == nil {
		return e, err
	}
	return ScheduleEvent{FairShare: fs}, nil
}

func (e ScheduleEvent) apply(s *Scheduler, now time.Time) (Result, error) {
	c, err := s.runCycle(now, e.FairShare)
	if err != nil {
		return Result{}, err
	}
	return Result{Cycle: &c}, nil
}

// Entry is an event with the time it is applied at, as a journal or a
// replication log carries it. Its JSON form is
//
//	{"at":"2026-12-01T10:00:00Z","kind":"submit","event":{…}}
//
// with the time in RFC 3339 (nanoseconds where it has them).
type Entry struct {
	At    time.Time
	Event Event
}

type entryJSON struct {
	At    time.Time       `json:"at"`
	Kind  EventKind       `json:"kind"`
	Event json.RawMessage `json:"event"`
}

// MarshalJSON encodes the entry as {"at", "kind", "event"}.
func (e Entry) MarshalJSON() ([]byte, error) {
	if e.Event == nil {
		return nil, fmt.Errorf("%w: entry at %s has no event", ErrInvalidEvent, e.At.Format(time.RFC3339Nano))
	}
	raw, err := json.Marshal(e.Event)
	if err != nil {
		return nil, fmt.Errorf("scheduler: encoding %s event: %w", e.Event.Kind(), err)
	}
	return json.Marshal(entryJSON{At: e.At, Kind: e.Event.Kind(), Event: raw})
}

// UnmarshalJSON decodes an entry written by MarshalJSON. An unknown kind,
// a missing event or a field of the wrong type is an error naming it
// (wrapping ErrInvalidEvent); the entry is then left unchanged.
func (e *Entry) UnmarshalJSON(b []byte) error {
	var ej entryJSON
	if err := json.Unmarshal(b, &ej); err != nil {
		return fmt.Errorf("%w: entry: %w", ErrInvalidEvent, err)
	}
	if len(ej.Event) == 0 || bytes.Equal(ej.Event, []byte("null")) {
		return fmt.Errorf("%w: %q entry has no event", ErrInvalidEvent, ej.Kind)
	}
	ev, err := decodeEvent(ej.Kind, ej.Event)
	if err != nil {
		return err
	}
	e.At, e.Event = ej.At, ev
	return nil
}

// decodeEvent decodes the payload of an event of kind k.
func decodeEvent(k EventKind, raw json.RawMessage) (Event, error) {
	switch k {
	case KindSubmit:
		return decodeAs[SubmitEvent](k, raw)
	case KindCancel:
		return decodeAs[CancelEvent](k, raw)
	case KindFinish:
		return decodeAs[FinishEvent](k, raw)
	case KindRequeue:
		return decodeAs[RequeueEvent](k, raw)
	case KindCheckpoint:
		return decodeAs[CheckpointEvent](k, raw)
	case KindDrainNode:
		return decodeAs[DrainNodeEvent](k, raw)
	case KindFailNode:
		return decodeAs[FailNodeEvent](k, raw)
	case KindResumeNode:
		return decodeAs[ResumeNodeEvent](k, raw)
	case KindDownNode:
		return decodeAs[DownNodeEvent](k, raw)
	case KindDeviceHealth:
		return decodeAs[DeviceHealthEvent](k, raw)
	case KindTelemetry:
		return decodeAs[TelemetryEvent](k, raw)
	case KindUpdateTelemetry:
		return decodeAs[UpdateTelemetryEvent](k, raw)
	case KindAddReservation:
		return decodeAs[AddReservationEvent](k, raw)
	case KindRemoveReservation:
		return decodeAs[RemoveReservationEvent](k, raw)
	case KindSchedule:
		return decodeAs[ScheduleEvent](k, raw)
	case KindHold:
		return decodeAs[HoldEvent](k, raw)
	case KindRelease:
		return decodeAs[ReleaseEvent](k, raw)
	case KindUpdateJob:
		return decodeAs[UpdateJobEvent](k, raw)
	case KindSuspendJob:
		return decodeAs[SuspendJobEvent](k, raw)
	case KindResumeJob:
		return decodeAs[ResumeJobEvent](k, raw)
	case KindRequeueJob:
		return decodeAs[RequeueJobEvent](k, raw)
	case KindAddPartition:
		return decodeAs[AddPartitionEvent](k, raw)
	case KindUpdatePartition:
		return decodeAs[UpdatePartitionEvent](k, raw)
	case KindRemovePartition:
		return decodeAs[RemovePartitionEvent](k, raw)
	case KindAddQOS:
		return decodeAs[AddQOSEvent](k, raw)
	case KindUpdateQOS:
		return decodeAs[UpdateQOSEvent](k, raw)
	case KindRemoveQOS:
		return decodeAs[RemoveQOSEvent](k, raw)
	case KindPutAssoc:
		return decodeAs[PutAssocEvent](k, raw)
	case KindRemoveAssoc:
		return decodeAs[RemoveAssocEvent](k, raw)
	case KindAddNode:
		return decodeAs[AddNodeEvent](k, raw)
	case KindRemoveNode:
		return decodeAs[RemoveNodeEvent](k, raw)
	case KindUpdateNode:
		return decodeAs[UpdateNodeEvent](k, raw)
	case KindPowerDownNode:
		return decodeAs[PowerDownNodeEvent](k, raw)
	case KindPowerUpNode:
		return decodeAs[PowerUpNodeEvent](k, raw)
	case KindNodePoweredUp:
		return decodeAs[NodePoweredUpEvent](k, raw)
	case KindRebootNode:
		return decodeAs[RebootNodeEvent](k, raw)
	case KindNodeRebooted:
		return decodeAs[NodeRebootedEvent](k, raw)
	case KindAdmit:
		return decodeAs[AdmitEvent](k, raw)
	}
	return nil, fmt.Errorf("%w: unknown event kind %q", ErrInvalidEvent, k)
}

func decodeAs[E Event](k EventKind, raw json.RawMessage) (Event, error) {
	var e E
	d := json.NewDecoder(bytes.NewReader(raw))
	d.DisallowUnknownFields()
	if err := d.Decode(&e); err != nil {
		return nil, fmt.Errorf("%w: %s event: %w", ErrInvalidEvent, k, err)
	}
	if d.More() {
		return nil, fmt.Errorf("%w: %s event: trailing data", ErrInvalidEvent, k)
	}
	return e, nil
}
