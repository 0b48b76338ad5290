package scheduler

import (
	"time"

	"github.com/sluicehq/sluice/policy"
)

// unixEpoch is the origin of the clock's periods unless configured
// otherwise.
func unixEpoch() time.Time { return time.Unix(0, 0).UTC() }

// periodStart is the last boundary epoch + k·period (k an integer) at or
// before t; t itself for a period ≤ 0. The boundaries are fixed points of
// the caller's clock, so work done "once per period" is done for the same
// boundaries however often Schedule is called.
func periodStart(t, epoch time.Time, period time.Duration) time.Time {
	if period <= 0 {
		return t
	}
	d := t.Sub(epoch)
	k := d / period
	if d%period < 0 {
		k-- // floor, for times before the epoch
	}
	return epoch.Add(k * period)
}

// wakeSet collects the earliest instant after now at which time alone
// changes something.
type wakeSet struct {
	now, at time.Time
	minAge  time.Duration // bf_min_age_reserve, with backfill
}

// add offers t: kept when it is after now and before what was offered.
func (w *wakeSet) add(t time.Time) {
	if t.After(w.now) && (w.at.IsZero() || t.Before(w.at)) {
		w.at = t
	}
}

// NextWake returns the next instant after the latest event (the time of
// the last Schedule call or other event) at which, absent further events,
// a Schedule call could change a decision: start or end a job, change a
// pending job's reason, power a node up or down, or recompute priorities.
// It is zero when no such instant is known (only events can change
// anything). Cycle.NextWake is its value after the cycle.
//
// The instants are: the next priority recalculation boundary (with
// PriorityConfig), the earliest time limit or preemption grace end of a
// running job, the begin time of a pending job, a pending job's
// SwitchesMaxWait running out and, with backfill, its bf_min_age_reserve
// age being reached, the next start or end of a reservation window, and,
// with power saving, a node's SuspendTime of idleness, SuspendTimeout or
// ResumeTimeout running out, a backfill reservation on powered-down
// nodes coming within ResumeTimeout (plus bf_resolution) of its start,
// and the next minute of the SuspendRate and
// ResumeRate windows when a rate held a node back, and, with changeable
// node features, a rebooting node's BootTime running out and a backfill
// reservation on nodes to reboot coming within BootTime (plus
// bf_resolution) of its start. A caller that calls
// Schedule after every event and at every NextWake gets the decisions it
// would get calling it more often (see the package documentation,
// "Periodic work").
func (s *Scheduler) NextWake() time.Time {
	w := s.newWakeSet(s.last)
	s.pending.Ascend(func(j *job) bool { w.job(j); return true })
	s.wakeTimes(&w)
	return w.at
}

// newWakeSet returns an empty wakeSet after now.
func (s *Scheduler) newWakeSet(now time.Time) wakeSet {
	w := wakeSet{now: now}
	if s.bf != nil {
		w.minAge = s.bf.planner.Config().MinAgeReserve
	}
	return w
}

// job offers w the instants at which time alone changes something for
// pending job j: its begin time, and the ends of SwitchesMaxWait and of
// bf_min_age_reserve counted from its eligibility. The cycle offers every
// job it leaves pending as its pass walks them.
func (w *wakeSet) job(j *job) {
	w.add(j.Spec.BeginTime)
	if !j.EligibleTime.IsZero() {
		if j.Spec.SwitchesMaxWait > 0 {
			w.add(j.EligibleTime.Add(j.Spec.SwitchesMaxWait))
		}
		if w.minAge > 0 {
			w.add(j.EligibleTime.Add(w.minAge))
		}
	}
}

// wakeTimes offers w every instant after w.now at which time alone changes
// something (see NextWake) but those of the pending jobs (see job).
func (s *Scheduler) wakeTimes(w *wakeSet) {
	now := w.now
	if p := s.prio; p != nil {
		w.add(p.calcBoundary(now).Add(p.cfg.CalcPeriod))
	}
	if j, ok := s.running.Min(); ok {
		w.add(j.deadline) // the running index is in deadline order
	}
	s.reservationWakes(w)
	s.powerWakes(w)
	s.bootWakes(w)
}

// reservationWakes offers w the next start or end of every reservation's
// windows.
func (s *Scheduler) reservationWakes(w *wakeSet) {
	if s.pol == nil || s.pol.resv.Len() == 0 {
		return
	}
	now := w.now
	var ws []policy.Window
	for _, r := range s.pol.resv.All() {
		// Every recurrence has a window within eight days (hourly ones
		// within an hour): look a day ahead first.
		for _, ahead := range [...]time.Duration{24 * time.Hour, 9 * 24 * time.Hour} {
			var err error
			if ws, err = s.pol.resv.Windows(r.Name, now, now.Add(ahead), ws[:0]); err != nil || len(ws) > 0 {
				break
			}
		}
		if len(ws) > 0 {
			w.add(ws[0].Start)
			w.add(ws[0].End)
		}
	}
}

// powerWakes offers w the power-saving timers: booting and powering-down
// nodes' timeouts, idle nodes' SuspendTime, and the next rate window when
// a rate held a node back in the last cycle.
func (s *Scheduler) powerWakes(w *wakeSet) {
	p := s.power
	if p == nil {
		return
	}
	for i := p.dormant.Next(0); i >= 0; i = p.dormant.Next(i + 1) {
		if st := s.nodes[i].pw.state; st == PowerPoweringDown || st == PowerPoweringUp {
			w.add(s.nodes[i].pw.at)
		}
	}
	for i := s.usable.Next(0); i >= 0; i = s.usable.Next(i + 1) {
		n := &s.nodes[i]
		if len(n.jobs) == 0 && !n.pw.idleSince.IsZero() && !s.suspendExcluded(i) {
			w.add(n.pw.idleSince.Add(p.cfg.SuspendTime))
		}
	}
	w.add(p.planWake)
	// A full rate window may have held a node back: the next minute may
	// let it go (a wake that changes nothing is harmless).
	cur := rateWindow(w.now)
	if (p.cfg.ResumeRate >= 0 && p.ups >= p.cfg.ResumeRate && p.upWindow.Equal(cur)) ||
		(p.cfg.SuspendRate >= 0 && p.downs >= p.cfg.SuspendRate && p.downWindow.Equal(cur)) {
		w.add(cur.Add(time.Minute))
	}
}
