package sim

import (
	"time"

	"github.com/sluicehq/sluice/scheduler"
)

type eventKind uint8

const (
	// evFinish: the job's run is over; the simulator calls Finish.
	evFinish eventKind = iota
	// evExpire: the job reaches its time limit; the cycle at that instant ends it.
	evExpire
	// evWake: a job's begin time; the cycle at that instant considers it.
	evWake
	// evKill: a preemption victim's grace time ends; the cycle at that
	// instant ends or requeues it.
	evKill
)

type event struct {
	at   time.Time
	id   scheduler.JobID
	kind eventKind
	gen  uint32 // the run of the job that queued it (evFinish, evExpire, evKill)
}

// eventQueue is a binary min-heap of events ordered by time, then job ID,
// then kind. Its push and pop follow container/heap's algorithm step for
// step (so that events equal in that order, a job's end events of
// different runs, still come out in the same order), without boxing each
// event in an interface.
type eventQueue []event

// Len returns the number of queued events.
func (q eventQueue) Len() int { return len(q) }

func (q eventQueue) less(i, j int) bool {
	if c := q[i].at.Compare(q[j].at); c != 0 {
		return c < 0
	}
	if q[i].id != q[j].id {
		return q[i].id < q[j].id
	}
	return q[i].kind < q[j].kind
}

// push queues e.
func (q *eventQueue) push(e event) {
	*q = append(*q, e)
	q.up(len(*q) - 1)
}

// pop removes and returns the first event; the queue must not be empty.
func (q *eventQueue) pop() event {
	h := *q
	n := len(h) - 1
	h[0], h[n] = h[n], h[0]
	h[:n].down(0)
	e := h[n]
	*q = h[:n]
	return e
}

func (q eventQueue) up(j int) {
	for {
		i := (j - 1) / 2 // parent
		if i == j || !q.less(j, i) {
			break
		}
		q[i], q[j] = q[j], q[i]
		j = i
	}
}

func (q eventQueue) down(i int) {
	n := len(q)
	for {
		j1 := 2*i + 1
		if j1 >= n || j1 < 0 { // j1 < 0 after int overflow
			break
		}
		j := j1 // left child
		if j2 := j1 + 1; j2 < n && q.less(j2, j1) {
			j = j2 // right child
		}
		if !q.less(j, i) {
			break
		}
		q[i], q[j] = q[j], q[i]
		i = j
	}
}

// nextInstant is the earliest pending event: arrival, completion, expiry,
// wake-up or periodic tick.
func (r *runner) nextInstant() time.Time {
	var now time.Time
	set := false
	if r.haveNext {
		now, set = r.next.Submit, true
	}
	if r.q.Len() > 0 && (!set || r.q[0].at.Before(now)) {
		now, set = r.q[0].at, true
	}
	if !r.nextTick.IsZero() && (!set || r.nextTick.Before(now)) {
		now, set = r.nextTick, true
	}
	if r.tel != nil && !r.tel.next.IsZero() && (!set || r.tel.next.Before(now)) {
		now = r.tel.next
	}
	return now
}

// otherDue reports whether anything but telemetry is due at now: an
// arrival, a queued event or a periodic tick.
func (r *runner) otherDue(now time.Time) bool {
	return (r.haveNext && !r.next.Submit.After(now)) ||
		(r.q.Len() > 0 && !r.q[0].at.After(now)) ||
		(!r.nextTick.IsZero() && !r.nextTick.After(now))
}
