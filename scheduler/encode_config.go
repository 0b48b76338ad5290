package scheduler

import (
	"encoding/json"
	"time"

	"github.com/sluicehq/sluice/backfill"
	"github.com/sluicehq/sluice/priority"
)

// hook stands in a Config's JSON for a field that holds code (a fair-share
// source, a site-factor hook, a node chooser): it is never written, and
// whatever a decoder finds under that name is dropped.
type hook *struct{}

// backfillJSON is a backfill.Config with Slurm durations and no chooser.
type backfillJSON struct {
	plainBackfill
	Window        dur  `json:",omitzero"`
	Resolution    dur  `json:",omitzero"`
	MinAgeReserve dur  `json:",omitzero"`
	Chooser       hook `json:",omitempty"`
}

type plainBackfill backfill.Config

// engineJSON is a priority.Config with MaxAge as a Slurm time and neither
// the registry (the scheduler sets it) nor the site-factor hook.
type engineJSON struct {
	plainEngine
	MaxAge   dur  `json:",omitzero"`
	Registry hook `json:",omitempty"`
	Site     hook `json:",omitempty"`
}

type plainEngine priority.Config

// priorityJSON is a PriorityConfig with CalcPeriod as a Slurm time and no
// fair-share source.
type priorityJSON struct {
	plainPriority
	Engine     engineJSON
	CalcPeriod dur  `json:",omitzero"`
	FairShare  hook `json:",omitempty"`
}

type plainPriority PriorityConfig

// MarshalJSON encodes the configuration as data: nodes, partitions, the
// topology, the policy, the registry as its names (see gres.Registry's
// text form), and the priority and backfill settings with their durations
// in Slurm's format (EstimateInterval, MinJobAge, RequeueDelay and BootTime too). The hooks —
// PriorityConfig.FairShare, priority.Config.Site, backfill.Config.Chooser —
// are code, not data: they are not written, and a caller decoding a
// Config sets them again before New. Decoding gives back every other
// field; TRES limits of the policy are bound by New.
func (c Config) MarshalJSON() ([]byte, error) {
	type plain Config
	aux := struct {
		plain
		EstimateInterval dur           `json:",omitzero"`
		MinJobAge        dur           `json:",omitzero"`
		RequeueDelay     dur           `json:",omitzero"`
		BootTime         dur           `json:",omitzero"`
		Priority         *priorityJSON `json:",omitempty"`
		Backfill         *backfillJSON `json:",omitempty"`
	}{plain: plain(c), EstimateInterval: dur(c.EstimateInterval), MinJobAge: dur(c.MinJobAge), RequeueDelay: dur(c.RequeueDelay),
		BootTime: dur(c.BootTime)}
	if p := c.Priority; p != nil {
		aux.Priority = &priorityJSON{plainPriority: plainPriority(*p), CalcPeriod: dur(p.CalcPeriod),
			Engine: engineJSON{plainEngine: plainEngine(p.Engine), MaxAge: dur(p.Engine.MaxAge)}}
	}
	if b := c.Backfill; b != nil {
		aux.Backfill = &backfillJSON{plainBackfill: plainBackfill(*b), Window: dur(b.Window),
			Resolution: dur(b.Resolution), MinAgeReserve: dur(b.MinAgeReserve)}
	}
	return json.Marshal(aux)
}

// UnmarshalJSON decodes what MarshalJSON writes (the hooks stay unset).
func (c *Config) UnmarshalJSON(b []byte) error {
	type plain Config
	aux := struct {
		*plain
		EstimateInterval dur
		MinJobAge        dur
		RequeueDelay     dur
		BootTime         dur
		Priority         *priorityJSON
		Backfill         *backfillJSON
	}{plain: (*plain)(c), EstimateInterval: dur(c.EstimateInterval), MinJobAge: dur(c.MinJobAge), RequeueDelay: dur(c.RequeueDelay),
		BootTime: dur(c.BootTime)}
	if err := json.Unmarshal(b, &aux); err != nil {
		return err
	}
	c.EstimateInterval, c.MinJobAge = time.Duration(aux.EstimateInterval), time.Duration(aux.MinJobAge)
	c.RequeueDelay, c.BootTime = time.Duration(aux.RequeueDelay), time.Duration(aux.BootTime)
	c.Priority, c.Backfill = nil, nil
	if p := aux.Priority; p != nil {
		pc := PriorityConfig(p.plainPriority)
		pc.CalcPeriod, pc.FairShare = time.Duration(p.CalcPeriod), nil
		pc.Engine = priority.Config(p.Engine.plainEngine)
		pc.Engine.MaxAge, pc.Engine.Registry, pc.Engine.Site = time.Duration(p.Engine.MaxAge), nil, nil
		c.Priority = &pc
	}
	if bf := aux.Backfill; bf != nil {
		bc := backfill.Config(bf.plainBackfill)
		bc.Window, bc.Resolution, bc.MinAgeReserve = time.Duration(bf.Window), time.Duration(bf.Resolution), time.Duration(bf.MinAgeReserve)
		bc.Chooser = nil
		c.Backfill = &bc
	}
	return nil
}
