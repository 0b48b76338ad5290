package scheduler

import (
	"fmt"
	"time"

	"github.com/sluicehq/sluice/policy"
)

// IdleAction says what the scheduler does with a running job whose GPUs
// stay allocated but idle (TelemetryConfig.Action). Slurm has no such
// setting (it leaves idle jobs to site scripts); the names follow its
// PreemptMode's (REQUEUE, CANCEL).
type IdleAction uint8

// The idle actions.
const (
	// IdleNotify only reports: the job gets a DecisionIdle audit record
	// when it becomes allocated-but-idle, and keeps running.
	IdleNotify IdleAction = iota
	// IdleRequeue requeues the job once it has been idle for
	// Rule.IdleAfter + Grace, as RequeueEvent does (pending with reason
	// AllocatedIdle); a job that may not be requeued (--no-requeue,
	// JobSpec.Requeue or Config.JobRequeue), or one requeued
	// MaxIdleRequeues times already, is ended as by IdleCancel.
	IdleRequeue
	// IdleCancel ends the job once it has been idle for Rule.IdleAfter +
	// Grace: CANCELLED (the state Slurm shows for a job the system or an
	// administrator cancelled) with reason AllocatedIdle.
	IdleCancel
	numIdleActions
)

var idleActionNames = [numIdleActions]string{"NOTIFY", "REQUEUE", "CANCEL"}

// String returns "NOTIFY", "REQUEUE" or "CANCEL".
func (a IdleAction) String() string { return enumName(a, idleActionNames[:], "IdleAction") }

// ParseIdleAction reads "NOTIFY", "REQUEUE" or "CANCEL" (case-insensitive).
// Errors wrap ErrUnknownName and name the value.
func ParseIdleAction(s string) (IdleAction, error) {
	return parseName[IdleAction](s, idleActionNames[:], "IdleAction")
}

// MarshalText writes the action's name.
func (a IdleAction) MarshalText() ([]byte, error) {
	return nameText(a, idleActionNames[:], "IdleAction")
}

// UnmarshalText reads what MarshalText writes (case-insensitive).
func (a *IdleAction) UnmarshalText(b []byte) error {
	return unmarshalName(a, b, idleActionNames[:], "IdleAction")
}

// KindUpdateTelemetry tags an UpdateTelemetryEvent.
const KindUpdateTelemetry EventKind = "update_telemetry"

// UpdateTelemetryEvent replaces the running scheduler's telemetry
// configuration (Config.Telemetry: the idle rule, the idle action and its
// grace time), as scontrol reconfigure would after an edit of
// slurm.conf's JobAcctGather settings. An invalid configuration
// (TelemetryConfig.Validate) fails the event, which then changes nothing.
//
// The new rule applies to the readings that follow: usage already folded
// stays as it was folded, and a job's idle state is looked at again (and
// the action taken) when its next reading arrives.
type UpdateTelemetryEvent struct {
	Config TelemetryConfig
}

// Kind returns KindUpdateTelemetry.
func (UpdateTelemetryEvent) Kind() EventKind { return KindUpdateTelemetry }

func (e UpdateTelemetryEvent) apply(s *Scheduler, now time.Time) (Result, error) {
	if err := s.tick(now); err != nil {
		return Result{}, err
	}
	if err := e.Config.Validate(); err != nil {
		return Result{}, fmt.Errorf("scheduler: update telemetry: %w", err)
	}
	s.telCfg = e.Config
	s.last = now
	return Result{}, nil
}

// SetTelemetry applies an UpdateTelemetryEvent: cfg becomes the
// telemetry configuration from now on.
func (s *Scheduler) SetTelemetry(now time.Time, cfg TelemetryConfig) error {
	_, err := s.Apply(now, UpdateTelemetryEvent{Config: cfg})
	return err
}

// Telemetry returns the telemetry configuration in force.
func (s *Scheduler) Telemetry() TelemetryConfig { return s.telCfg }

// idleAction applies the idle rule to the jobs a telemetry event read
// (in node start order): a job whose current run became allocated but
// idle gets one DecisionIdle record per idle spell, and with an action
// other than IdleNotify, once idle for Rule.IdleAfter + Grace, is
// requeued or ended. It returns the jobs requeued or ended. Only the
// readings decide (never a clock), so a replay acts the same.
func (s *Scheduler) idleAction(now time.Time, read []*job) []JobID {
	cfg := s.telCfg
	var acted []JobID
	for k, j := range read {
		read[k] = nil
		if j.State != JobRunning {
			continue
		}
		idle, d := j.tel.idle(cfg.Rule)
		if !idle {
			j.tel.idleNoted = false
			continue
		}
		if !j.tel.idleNoted {
			j.tel.idleNoted = true
			s.eventDecisions = append(s.eventDecisions, s.idleRecord(j, now, d, policy.ActionNone))
		}
		// A victim in its preemption grace time is on its way out, and a
		// heterogeneous job's components are requeued or cancelled
		// together by their owner: both are only reported.
		if cfg.Action == IdleNotify || d < cfg.Rule.IdleAfter+cfg.Grace || j.preempting || j.HetJobID != 0 {
			continue
		}
		act := policy.ActionCancel
		if cfg.Action == IdleRequeue && s.requeueable(j) && j.IdleRequeues < cfg.maxIdleRequeues() {
			act = policy.ActionRequeue
		}
		s.eventDecisions = append(s.eventDecisions, s.idleRecord(j, now, d, act))
		if act == policy.ActionRequeue {
			s.requeue(now, j, policy.ReasonAllocatedIdle) // counts the lost run
			s.logRequeue(now, j)
			j.IdleRequeues++
		} else {
			s.noteLostRun(j, now)
			s.endJob(j, JobCancelled, now)
			j.Reason = policy.ReasonAllocatedIdle
		}
		acted = append(acted, j.ID)
	}
	return acted
}

// idleRecord returns the DecisionIdle audit record of job j, idle for d
// at now: its allocation (the GPUs it held), its current run's mean GPU
// utilisation and idle time, and the action taken (ActionNone: reported
// only).
func (s *Scheduler) idleRecord(j *job, now time.Time, d time.Duration, act policy.PreemptAction) Decision {
	rec := s.recordOf(j, DecisionIdle, now, s.PolicyVersion())
	rec.Utilization, rec.IdleFor, rec.Action, rec.Reason = j.tel.runUsage().MeanUtilization(), d, act, policy.ReasonAllocatedIdle
	if act != policy.ActionNone {
		rec.KillAt = now
	}
	return rec
}
