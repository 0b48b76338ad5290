package accounting

import (
	"cmp"
	"maps"
	"math"
	"slices"
	"time"
)

const (
	prefixDecision    = "d:"   // d:<time10><seq16> → decision
	prefixDecisionJob = "dj:"  // dj:<job16>:<seq16> → <time10>
	prefixNodeEvent   = "ne:"  // ne:<cluster>|<start10>|<node> → JSON
	prefixResv        = "rv:"  // rv:<cluster>|<start10>|<name> → JSON
	prefixCapacity    = "cap:" // cap:<cluster>|<since10> → JSON
)

func (t *kvTx) PutDecision(d Decision) (uint64, error) {
	if err := t.writable(); err != nil {
		return 0, err
	}
	if err := d.Validate(); err != nil {
		return 0, err
	}
	seq, err := t.nextSeq(keyDecSeq)
	if err != nil {
		return 0, err
	}
	d.Seq = seq
	tk := hexT(d.Time.Unix())
	v, err := t.encodeDecision(&d)
	if err != nil {
		return 0, err
	}
	if err := t.set(prefixDecision+tk+hex16(seq), v); err != nil {
		return 0, err
	}
	return seq, t.set(prefixDecisionJob+hex16(uint64(d.Job))+":"+hex16(seq), tk)
}

func (t *kvTx) encodeDecision(d *Decision) (string, error) {
	e := &t.e
	e.b = e.b[:0]
	e.byte1(codecVersion)
	e.byte1(byte(d.Kind))
	e.u(uint64(d.Job))
	for _, s := range []string{d.Cluster, d.PolicyVersion} {
		id, err := t.intern(s)
		if err != nil {
			return "", err
		}
		e.u(uint64(id))
	}
	e.str(d.NodeList)
	if err := t.encodeGPUs(d.GPUs); err != nil {
		return "", err
	}
	e.f(d.Priority)
	if err := t.encodeFloats(slices.Sorted(maps.Keys(d.Factors)), d.Factors); err != nil {
		return "", err
	}
	e.str(d.Detail)
	e.u(uint64(len(d.Competing)))
	for _, c := range d.Competing {
		id, err := t.intern(c.Reason)
		if err != nil {
			return "", err
		}
		e.u(uint64(c.Job))
		e.f(c.Priority)
		e.u(uint64(id))
	}
	return e.bytes(), nil
}

func (t *kvTx) decodeDecision(key, v string) (Decision, error) {
	var x Decision
	rest := key[len(prefixDecision):]
	if len(rest) != 26 {
		return x, corruptKey(key, "bad decision key")
	}
	tm, ok1 := parseHex(rest[:10])
	seq, ok2 := parseHex(rest[10:])
	if !ok1 || !ok2 {
		return x, corruptKey(key, "bad decision key")
	}
	x.Time, x.Seq = time.Unix(int64(tm), 0).UTC(), seq
	d := dec{b: []byte(v)}
	if d.byte1() != codecVersion {
		return x, corruptKey(key, "unknown decision record version")
	}
	x.Kind = DecisionKind(d.byte1())
	x.Job = JobID(d.u())
	for _, p := range []*string{&x.Cluster, &x.PolicyVersion} {
		s, ok := t.str(d.u())
		if !ok {
			return x, corruptKey(key, "unknown string ID")
		}
		*p = s
	}
	x.NodeList = d.str()
	var err error
	if x.GPUs, err = t.decodeGPUs(key, &d); err != nil {
		return x, err
	}
	x.Priority = d.f()
	if x.Factors, err = t.decodeFloats(key, &d, "factor"); err != nil {
		return x, err
	}
	x.Detail = d.str()
	if n := d.count(10); n > 0 {
		x.Competing = make([]Competitor, n)
		for i := range x.Competing {
			c := &x.Competing[i]
			c.Job = JobID(d.u())
			c.Priority = d.f()
			s, ok := t.str(d.u())
			if !ok {
				return x, corruptKey(key, "unknown reason ID")
			}
			c.Reason = s
		}
	}
	if !d.done() || x.Kind == 0 || x.Kind >= numDecisionKinds || math.IsNaN(x.Priority) {
		return x, corruptKey(key, "decision record: %s", d.errOr("bad kind or priority"))
	}
	return x, nil
}

func (t *kvTx) Decisions(q DecisionQuery, fn func(Decision) bool) error {
	if q.Job != 0 && !q.WithCompeting {
		p := prefixDecisionJob + hex16(uint64(q.Job)) + ":"
		type ref struct{ tk, seq string }
		var refs []ref
		err := t.r.Ascend(p, prefixEnd(p), func(k, v string) bool {
			refs = append(refs, ref{v, k[len(p):]})
			return true
		})
		if err != nil {
			return err
		}
		slices.SortFunc(refs, func(a, b ref) int { return cmp.Or(cmp.Compare(a.tk, b.tk), cmp.Compare(a.seq, b.seq)) })
		for _, r := range refs {
			key := prefixDecision + r.tk + r.seq
			v, ok, err := t.get(key)
			if err != nil {
				return err
			}
			if !ok {
				return corruptKey(p+r.seq, "index names missing decision")
			}
			d, err := t.decodeDecision(key, v)
			if err != nil {
				return err
			}
			if q.match(&d) && !fn(d) {
				return nil
			}
		}
		return nil
	}
	lo, hi := prefixDecision, prefixEnd(prefixDecision)
	if !q.From.IsZero() {
		lo = prefixDecision + hexT(q.From.Unix())
	}
	if !q.To.IsZero() {
		hi = prefixDecision + hexT(q.To.Unix())
	}
	return ascendRecords(t.r, lo, hi, t.decodeDecision, func(d Decision) bool {
		return !q.match(&d) || fn(d)
	})
}

func (t *kvTx) PurgeDecisions(before time.Time) (int, error) {
	if err := t.writable(); err != nil {
		return 0, err
	}
	if err := validTime("before", before, false); err != nil {
		return 0, err
	}
	type item struct {
		key string
		job JobID
	}
	var items []item
	decode := func(k, v string) (item, error) {
		d, err := t.decodeDecision(k, v)
		return item{k, d.Job}, err
	}
	err := ascendRecords(t.r, prefixDecision, prefixDecision+hexT(before.Unix()), decode, func(it item) bool {
		items = append(items, it)
		return true
	})
	if err != nil {
		return 0, err
	}
	for _, it := range items {
		if err := t.del(it.key); err != nil {
			return 0, err
		}
		if err := t.del(prefixDecisionJob + hex16(uint64(it.job)) + ":" + it.key[len(it.key)-16:]); err != nil {
			return 0, err
		}
	}
	return len(items), nil
}

// Cluster state: capacity, node events, reservations (JSON; low volume).

func (t *kvTx) PutCapacity(c Capacity) error {
	if err := t.writable(); err != nil {
		return err
	}
	if err := c.Validate(); err != nil {
		return err
	}
	c.Since = normTime(c.Since)
	return t.setJSON(prefixCapacity+c.Cluster+"|"+hexT(c.Since.Unix()), c)
}

func (t *kvTx) Capacities(cluster string) ([]Capacity, error) {
	if err := validName("cluster", cluster, false); err != nil {
		return nil, err
	}
	p := prefixCapacity + cluster + "|"
	var out []Capacity
	err := ascendRecords(t.r, p, prefixEnd(p), decodeJSON[Capacity], func(c Capacity) bool {
		out = append(out, c)
		return true
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

func (t *kvTx) PutNodeEvent(e NodeEvent) error {
	if err := t.writable(); err != nil {
		return err
	}
	if err := e.Validate(); err != nil {
		return err
	}
	e.Start, e.End = normTime(e.Start), normTime(e.End)
	return t.setJSON(prefixNodeEvent+e.Cluster+"|"+hexT(e.Start.Unix())+"|"+e.Node, e)
}

func (t *kvTx) NodeEvents(cluster string, from, to time.Time, fn func(NodeEvent) bool) error {
	if err := validName("cluster", cluster, false); err != nil {
		return err
	}
	p := prefixNodeEvent + cluster + "|"
	hi := prefixEnd(p)
	if !to.IsZero() {
		hi = p + hexT(to.Unix())
	}
	return ascendRecords(t.r, p, hi, decodeJSON[NodeEvent], func(e NodeEvent) bool {
		if !from.IsZero() && !e.End.IsZero() && !e.End.After(from) {
			return true
		}
		return fn(e)
	})
}

func (t *kvTx) PutReservation(r Reservation) error {
	if err := t.writable(); err != nil {
		return err
	}
	if err := r.Validate(); err != nil {
		return err
	}
	r.Start, r.End = normTime(r.Start), normTime(r.End)
	return t.setJSON(prefixResv+r.Cluster+"|"+hexT(r.Start.Unix())+"|"+r.Name, r)
}

func (t *kvTx) Reservations(cluster string, from, to time.Time, fn func(Reservation) bool) error {
	if err := validName("cluster", cluster, false); err != nil {
		return err
	}
	p := prefixResv + cluster + "|"
	hi := prefixEnd(p)
	if !to.IsZero() {
		hi = p + hexT(to.Unix())
	}
	return ascendRecords(t.r, p, hi, decodeJSON[Reservation], func(r Reservation) bool {
		if !from.IsZero() && !r.End.After(from) {
			return true
		}
		return fn(r)
	})
}
