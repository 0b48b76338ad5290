package scheduler

import (
	"encoding/json"
	"time"
)

// jobUpdateJSON is a JobUpdate with its durations in Slurm's time format.
type jobUpdateJSON struct {
	plainJobUpdate
	TimeLimit *dur `json:",omitempty"`
	TimeMin   *dur `json:",omitempty"`
}

type plainJobUpdate JobUpdate

func (u JobUpdate) toJSON() jobUpdateJSON {
	return jobUpdateJSON{plainJobUpdate(u), (*dur)(u.TimeLimit), (*dur)(u.TimeMin)}
}

func (x jobUpdateJSON) update() JobUpdate {
	u := JobUpdate(x.plainJobUpdate)
	u.TimeLimit, u.TimeMin = (*time.Duration)(x.TimeLimit), (*time.Duration)(x.TimeMin)
	return u
}

// MarshalJSON encodes the fields set, TimeLimit and TimeMin in Slurm's
// time format ("1-12:00:00").
func (u JobUpdate) MarshalJSON() ([]byte, error) { return json.Marshal(u.toJSON()) }

// UnmarshalJSON decodes what MarshalJSON writes; fields it does not name
// are left unset.
func (u *JobUpdate) UnmarshalJSON(b []byte) error {
	var x jobUpdateJSON
	if err := json.Unmarshal(b, &x); err != nil {
		return err
	}
	*u = x.update()
	return nil
}

// MarshalJSON encodes the event as the job and the fields set (see
// JobUpdate.MarshalJSON).
func (e UpdateJobEvent) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		Job JobID
		jobUpdateJSON
	}{e.Job, e.JobUpdate.toJSON()})
}

// UnmarshalJSON decodes what MarshalJSON writes.
func (e *UpdateJobEvent) UnmarshalJSON(b []byte) error {
	var x struct {
		Job JobID
		jobUpdateJSON
	}
	if err := json.Unmarshal(b, &x); err != nil {
		return err
	}
	e.Job, e.JobUpdate = x.Job, x.jobUpdateJSON.update()
	return nil
}
