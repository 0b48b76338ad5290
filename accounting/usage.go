package accounting

import (
	"fmt"
	"math"
	"strconv"
	"time"
)

// Charge is the usage of one running job over [From, To), as the caller's
// control loop reports it every PriorityCalcPeriod and at job end. The
// job's allocated TRES are charged (a whole-node job is charged the whole
// node), not what it requested.
type Charge struct {
	Assoc AssocID // the job's association; it and every ancestor are charged
	// QOS is the job's QOS ("" = none). QOSNoDecay is its NoDecay flag:
	// that QOS's usage is then never decayed.
	QOS        string
	QOSNoDecay bool
	// PartitionQOS is the partition's QOS, charged too when set and
	// different from QOS, as Slurm does.
	PartitionQOS        string
	PartitionQOSNoDecay bool
	// UsageFactor is the QOS UsageFactor multiplying every charge. nil
	// means Slurm's default of 1; new(0.0) charges nothing.
	UsageFactor *float64
	// Billing, when > 0, is the job's billable TRES (Slurm's unrounded
	// billable_tres). When 0, TRES["billing"] is used, or TRES["cpu"] when
	// TRES has no billing entry (Slurm's default billing is the CPU count).
	Billing float64
	TRES    TRES
	From    time.Time
	To      time.Time
	// Key, when set, makes the charge idempotent: a charge whose Key was
	// already applied changes nothing, so a caller that retries a write it
	// cannot tell committed never double-charges. Keys are remembered for
	// ChargeKeyRetention after the interval's end (see JobCharge).
	Key string
}

// Usage is the accumulated usage of an association's subtree or of a QOS.
type Usage struct {
	// AsOf is the time the decayed values are given at.
	AsOf time.Time `json:"as_of"`
	// Raw is decayed billing-seconds × UsageFactor: sshare's RawUsage.
	Raw float64 `json:"raw"`
	// TRES is decayed TRES-seconds × UsageFactor per TRES (sshare's
	// GrpTRESRaw is TRES/60).
	TRES TRESFloat `json:"tres,omitempty"`
	// Wall is decayed wall-clock seconds × UsageFactor (GrpWall).
	Wall float64 `json:"wall"`
	// BudgetBilling and BudgetTRES are billing- and TRES-seconds ×
	// UsageFactor since the last reset, not decayed unless
	// Config.DecayBudgets: what GrpTRESMins is checked against (see
	// BudgetMinutes).
	BudgetBilling float64   `json:"budget_billing"`
	BudgetTRES    TRESFloat `json:"budget_tres,omitempty"`
	// LastCharge is the end of the latest interval charged.
	LastCharge time.Time `json:"last_charge,omitzero"`
}

// BudgetMinutes returns the budget usage of TRES name in TRES-minutes, the
// unit of GrpTRESMins.
func (u Usage) BudgetMinutes(name string) float64 { return u.BudgetTRES[name] / 60 }

// usageRec is the stored form: values as of asOf.
type usageRec struct {
	asOf, lastCharge int64
	noDecay          bool
	raw, wall, bill  float64
	tres, btres      map[string]float64
}

const (
	prefixUsage    = "u:"  // u:<assoc> → usageRec
	prefixQOSUsage = "uq:" // uq:<qos> → usageRec
)

func (c Charge) validate() error {
	if c.Assoc == 0 {
		return fmt.Errorf("%w: charge: association is 0", ErrInvalid)
	}
	f := func(err error) error { return fmt.Errorf("charge for association %d: %w", c.Assoc, err) }
	if err := validName("qos", c.QOS, true); err != nil {
		return f(err)
	}
	if err := validName("partition qos", c.PartitionQOS, true); err != nil {
		return f(err)
	}
	if c.UsageFactor != nil && (math.IsNaN(*c.UsageFactor) || math.IsInf(*c.UsageFactor, 0) || *c.UsageFactor < 0) {
		return f(fmt.Errorf("%w: usage factor %v", ErrInvalid, *c.UsageFactor))
	}
	if math.IsNaN(c.Billing) || math.IsInf(c.Billing, 0) || c.Billing < 0 {
		return f(fmt.Errorf("%w: billing %v", ErrInvalid, c.Billing))
	}
	if err := validTime("from", c.From, false); err != nil {
		return f(err)
	}
	if err := validTime("to", c.To, false); err != nil {
		return f(err)
	}
	if c.To.Before(c.From) {
		return f(fmt.Errorf("%w: to %v before from %v", ErrInvalid, c.To, c.From))
	}
	if err := c.TRES.Validate(); err != nil {
		return f(err)
	}
	if len(c.Key) > maxChargeKey {
		return f(fmt.Errorf("%w: key is %d bytes, at most %d", ErrInvalid, len(c.Key), maxChargeKey))
	}
	return nil
}

func (c Charge) billing() float64 {
	if c.Billing > 0 {
		return c.Billing
	}
	if b, ok := c.TRES["billing"]; ok {
		return float64(b)
	}
	return float64(c.TRES["cpu"])
}

func (t *kvTx) Charge(c Charge) error {
	if err := t.writable(); err != nil {
		return err
	}
	if err := c.validate(); err != nil {
		return err
	}
	// The association must exist now (from its cached versions, which
	// chainAt reads anyway, instead of decoding its current record).
	vs, err := t.versions(c.Assoc)
	if err != nil {
		return fmt.Errorf("charge: %w", err)
	}
	if len(vs) == 0 || vs[len(vs)-1].Removed {
		return fmt.Errorf("charge: %w: association %d", ErrNotFound, c.Assoc)
	}
	if seen, err := t.chargeSeen(c.Key); err != nil || seen {
		return err
	}
	to, from := c.To.Unix(), c.From.Unix()
	ep, err := t.epoch(to)
	if err != nil {
		return err
	}
	from = max(from, ep)
	if to <= from {
		return nil
	}
	if err := t.rememberCharge(c.Key, to); err != nil {
		return err
	}
	d := float64(to - from)
	uf := 1.0
	if c.UsageFactor != nil {
		uf = *c.UsageFactor
	}
	chain, err := t.chainAt(c.Assoc, time.Unix(to, 0))
	if err != nil {
		return err
	}
	type target struct {
		key     string
		noDecay bool
	}
	targets := make([]target, 0, len(chain)+2)
	for _, id := range chain {
		targets = append(targets, target{prefixUsage + hex8(uint32(id)), false})
	}
	if c.QOS != "" {
		targets = append(targets, target{prefixQOSUsage + c.QOS, c.QOSNoDecay})
	}
	if c.PartitionQOS != "" && c.PartitionQOS != c.QOS {
		targets = append(targets, target{prefixQOSUsage + c.PartitionQOS, c.PartitionQOSNoDecay})
	}
	bill := c.billing()
	decayed := t.l.cfg.chunkWeight(d) // the interval's weight on a decaying target
	for _, tg := range targets {
		rec, err := t.loadUsage(tg.key)
		if err != nil {
			return err
		}
		if rec == nil {
			rec = &usageRec{asOf: to}
			t.usage[tg.key] = rec
		}
		rec.noDecay = tg.noDecay
		w := d
		if !tg.noDecay {
			w = decayed
		}
		bw := d
		if t.l.cfg.DecayBudgets {
			bw = w
		}
		if to >= rec.asOf {
			t.bringTo(rec, to, ep)
		} else {
			// A late charge for an interval ending before the record's
			// time: skip it if a reset lies in between, else decay it.
			ep, err := t.epoch(rec.asOf)
			if err != nil {
				return err
			}
			if ep >= to {
				continue
			}
			f := 1.0
			if !tg.noDecay {
				f = t.l.cfg.DecayBetween(time.Unix(to, 0), time.Unix(rec.asOf, 0))
			}
			w *= f
			if t.l.cfg.DecayBudgets {
				bw *= f
			}
		}
		rec.raw += w * bill * uf
		rec.wall += w * uf
		rec.bill += bw * bill * uf
		for n, v := range c.TRES {
			if rec.tres == nil {
				rec.tres, rec.btres = map[string]float64{}, map[string]float64{}
			}
			rec.tres[n] += w * float64(v) * uf
			rec.btres[n] += bw * float64(v) * uf
		}
		rec.lastCharge = max(rec.lastCharge, to)
		t.usageDirty[tg.key] = true
	}
	return nil
}

// epoch returns the latest reset instant at or before unix time u (0 when
// none): the later of the last ResetUsage and the ResetPeriod boundary.
func (t *kvTx) epoch(u int64) (int64, error) {
	if !t.resetLoaded {
		v, ok, err := t.get(keyReset)
		if err != nil {
			return 0, err
		}
		if ok {
			r, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				return 0, corruptKey(keyReset, "bad time %q", v)
			}
			t.reset = r
		}
		t.resetLoaded = true
	}
	var ep int64
	if t.reset <= u {
		ep = t.reset
	}
	if b, ok := t.l.cfg.ResetPeriod.LastBoundary(time.Unix(u, 0), t.l.loc); ok {
		ep = max(ep, b.Unix())
	}
	return ep, nil
}

// bringTo advances rec to time u ≥ rec.asOf, ep being epoch(u): cleared
// if a reset lies in (asOf, u], decayed otherwise.
func (t *kvTx) bringTo(rec *usageRec, u, ep int64) {
	if ep > 0 && rec.asOf <= ep && (rec.raw != 0 || rec.bill != 0 || rec.wall != 0 || len(rec.tres) > 0) {
		*rec = usageRec{asOf: u, noDecay: rec.noDecay, lastCharge: rec.lastCharge}
		return
	}
	if !rec.noDecay && u > rec.asOf {
		f := t.l.cfg.DecayBetween(time.Unix(rec.asOf, 0), time.Unix(u, 0))
		rec.raw *= f
		rec.wall *= f
		for n := range rec.tres {
			rec.tres[n] *= f
		}
		if t.l.cfg.DecayBudgets {
			rec.bill *= f
			for n := range rec.btres {
				rec.btres[n] *= f
			}
		}
	}
	rec.asOf = max(rec.asOf, u)
}

func (t *kvTx) loadUsage(key string) (*usageRec, error) {
	if rec, ok := t.usage[key]; ok {
		return rec, nil
	}
	v, ok, err := t.get(key)
	if err != nil {
		return nil, err
	}
	var rec *usageRec
	if ok {
		if rec, err = t.decodeUsage(key, v); err != nil {
			return nil, err
		}
	}
	if t.w != nil {
		if t.usage == nil {
			t.usage, t.usageDirty = map[string]*usageRec{}, map[string]bool{}
		}
		if rec == nil {
			return nil, nil
		}
		t.usage[key] = rec
	}
	return rec, nil
}

func (t *kvTx) flushUsage() error {
	for key := range t.usageDirty {
		rec := t.usage[key]
		if rec == nil {
			continue
		}
		v, err := t.encodeUsage(rec)
		if err != nil {
			return err
		}
		if err := t.set(key, v); err != nil {
			return err
		}
	}
	clear(t.usageDirty)
	return nil
}

func (t *kvTx) encodeUsage(r *usageRec) (string, error) {
	e := &t.e
	e.b = e.b[:0]
	e.byte1(codecVersion)
	var flags byte
	if r.noDecay {
		flags |= 1
	}
	e.byte1(flags)
	e.i(r.asOf)
	e.i(r.lastCharge)
	e.f(r.raw)
	e.f(r.wall)
	e.f(r.bill)
	for _, m := range []map[string]float64{r.tres, r.btres} {
		if err := t.encodeFloats(TRESFloat(m).Names(), m); err != nil {
			return "", err
		}
	}
	return e.bytes(), nil
}

// encodeFloats appends m's entries in the order of names (m's keys), each
// as an interned name ID and its value.
func (t *kvTx) encodeFloats(names []string, m map[string]float64) error {
	e := &t.e
	e.u(uint64(len(names)))
	for _, n := range names {
		id, err := t.intern(n)
		if err != nil {
			return err
		}
		e.u(uint64(id))
		e.f(m[n])
	}
	return nil
}

// decodeFloats reads what encodeFloats wrote (nil when empty); what names
// the kind of name in the error for an unknown ID.
func (t *kvTx) decodeFloats(key string, d *dec, what string) (map[string]float64, error) {
	n := d.count(9)
	if n == 0 {
		return nil, nil
	}
	m := make(map[string]float64, n)
	for range n {
		name, ok := t.str(d.u())
		if !ok {
			return nil, corruptKey(key, "unknown %s name ID", what)
		}
		m[name] = d.f()
	}
	return m, nil
}

func (t *kvTx) decodeUsage(key, v string) (*usageRec, error) {
	d := dec{b: []byte(v)}
	if d.byte1() != codecVersion {
		return nil, corruptKey(key, "unknown usage record version")
	}
	r := &usageRec{}
	flags := d.byte1()
	r.noDecay = flags&1 != 0
	r.asOf = d.i()
	r.lastCharge = d.i()
	r.raw, r.wall, r.bill = d.f(), d.f(), d.f()
	var err error
	for _, m := range []*map[string]float64{&r.tres, &r.btres} {
		if *m, err = t.decodeFloats(key, &d, "TRES"); err != nil {
			return nil, err
		}
	}
	if !d.done() {
		return nil, corruptKey(key, "usage record: %s", d.errOr("trailing bytes"))
	}
	return r, nil
}

func (t *kvTx) usageAt(key string, now time.Time) (Usage, error) {
	if err := validTime("now", now, false); err != nil {
		return Usage{}, err
	}
	rec, err := t.loadUsage(key)
	if err != nil {
		return Usage{}, err
	}
	u := now.Unix()
	if rec == nil {
		return Usage{AsOf: time.Unix(u, 0).UTC()}, nil
	}
	c := *rec
	c.tres, c.btres = TRESFloat(rec.tres).Clone(), TRESFloat(rec.btres).Clone()
	if u >= c.asOf {
		ep, err := t.epoch(u)
		if err != nil {
			return Usage{}, err
		}
		t.bringTo(&c, u, ep)
	}
	return Usage{AsOf: time.Unix(c.asOf, 0).UTC(), Raw: c.raw, TRES: c.tres, Wall: c.wall,
		BudgetBilling: c.bill, BudgetTRES: c.btres, LastCharge: timeOrZero(c.lastCharge)}, nil
}

func (t *kvTx) Usage(id AssocID, now time.Time) (Usage, error) {
	vs, err := t.versions(id)
	if err != nil {
		return Usage{}, err
	}
	if len(vs) == 0 {
		return Usage{}, fmt.Errorf("%w: association %d", ErrNotFound, id)
	}
	return t.usageAt(prefixUsage+hex8(uint32(id)), now)
}

func (t *kvTx) QOSUsage(qos string, now time.Time) (Usage, error) {
	if err := validName("qos", qos, false); err != nil {
		return Usage{}, err
	}
	return t.usageAt(prefixQOSUsage+qos, now)
}

func (t *kvTx) ResetUsage(now time.Time) error {
	if err := t.writable(); err != nil {
		return err
	}
	if err := validTime("now", now, false); err != nil {
		return err
	}
	if _, err := t.epoch(now.Unix()); err != nil { // loads the stored reset
		return err
	}
	t.reset = max(t.reset, now.Unix())
	return t.set(keyReset, strconv.FormatInt(t.reset, 10))
}

// JobCharge returns the Charge for job j's running time inside
// [from, to): its association, QOS and allocated TRES over
// [max(from, j.Start), min(to, j.End)] (up to to for a running job). The
// caller adds what the QOS says (UsageFactor, NoDecay, the partition's
// QOS). A job that did not run in the window gives an empty interval,
// which Charge ignores. A non-empty interval gets Key
// "job:<cluster>:<id>:<from>-<to>" (unix seconds), so charging the same
// job's same interval again is a no-op. j.Assoc must be set (PutJob resolves it; read the
// record back with Tx.Job).
func JobCharge(j JobRecord, from, to time.Time) Charge {
	c := Charge{Assoc: j.Assoc, QOS: j.QOS, TRES: j.AllocTRES, From: to, To: to}
	if j.Start.IsZero() {
		return c
	}
	end := to
	if !j.End.IsZero() && j.End.Before(end) {
		end = j.End
	}
	start := j.Start
	if from.After(start) {
		start = from
	}
	if start.Before(end) {
		c.From, c.To = start, end
		c.Key = fmt.Sprintf("job:%s:%d:%d-%d", j.Cluster, j.ID, c.From.Unix(), c.To.Unix())
	}
	return c
}
