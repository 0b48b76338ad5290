package accounting

import "slices"

// This file holds the stored form of rollup packs: a pack of up to 32
// slots per key, encoded with the TRES string table.

// sumPack returns the sum of p's slots.
func sumPack(p *pack) *slot {
	out := &slot{}
	for _, s := range p {
		if s != nil {
			out.add(s)
		}
	}
	return out
}

func (t *kvTx) loadPack(key string) (*pack, error) {
	v, ok, err := t.get(key)
	if err != nil || !ok {
		return nil, err
	}
	return t.decodePack(key, v)
}

func (t *kvTx) storePack(key string, p *pack) error {
	n := p.used()
	if n == 0 {
		return t.del(key)
	}
	e := &t.e
	e.b = e.b[:0]
	e.byte1(codecVersion)
	e.u(uint64(n))
	for i, s := range p {
		if s == nil {
			continue
		}
		e.u(uint64(i))
		e.u(uint64(s.jobs))
		for _, a := range []tvs{s.tres, s.wait} {
			e.u(uint64(len(a)))
			for _, x := range a {
				e.u(uint64(x.id))
				e.u(uint64(max(x.v, 0)))
			}
		}
	}
	return t.set(key, e.bytes())
}

func (t *kvTx) decodeTVs(key string, d *dec) (tvs, error) {
	a, err := t.decodeTVsTo(key, d, nil)
	if len(a) == 0 {
		a = nil
	}
	return a, err
}

// decodeTVsTo decodes TRES counts appending to buf.
func (t *kvTx) decodeTVsTo(key string, d *dec, buf tvs) (tvs, error) {
	n := d.count(2)
	a := slices.Grow(buf, n)
	for i := range n {
		id, v := d.u(), d.u()
		if _, ok := t.str(id); !ok || id == 0 || id > 1<<32-1 {
			return nil, corruptKey(key, "unknown TRES name ID %d", id)
		}
		if v > 1<<62 {
			return nil, corruptKey(key, "TRES count %d out of range", v)
		}
		if i > 0 && uint32(id) <= a[len(a)-1].id {
			return nil, corruptKey(key, "TRES IDs out of order")
		}
		a = append(a, tv{uint32(id), int64(v)})
	}
	return a, nil
}

func (t *kvTx) encodeTRES(m TRES) error {
	e := &t.e
	e.u(uint64(len(m)))
	if len(m) == 0 {
		return nil
	}
	for _, n := range m.Names() {
		id, err := t.intern(n)
		if err != nil {
			return err
		}
		e.u(uint64(id))
		e.u(uint64(max(m[n], 0)))
	}
	return nil
}

func (t *kvTx) decodeTRES(key string, d *dec) (TRES, error) {
	n := d.count(2)
	if n == 0 {
		return nil, nil
	}
	m := make(TRES, n)
	for range n {
		name, ok := t.str(d.u())
		v := d.u()
		if !ok || name == "" {
			return nil, corruptKey(key, "unknown TRES name ID")
		}
		if v > 1<<62 {
			return nil, corruptKey(key, "TRES count %d out of range", v)
		}
		m[name] = int64(v)
	}
	return m, nil
}

func (t *kvTx) decodePack(key, v string) (*pack, error) {
	p := &pack{}
	slots := make([]slot, 0, 24)
	var arena tvs // the slots' counts, in one allocation (mostly)
	keep := func(x tvs) tvs {
		if len(x) == 0 {
			return nil
		}
		a := len(arena)
		arena = append(arena, x...)
		return arena[a:len(arena):len(arena)]
	}
	err := t.packSlots(key, v, func(idx uint64, jobs int64, tres, wait tvs) {
		slots = append(slots, slot{jobs: jobs, tres: keep(tres), wait: keep(wait)})
		p[idx] = &slots[len(slots)-1]
	})
	if err != nil {
		return nil, err
	}
	return p, nil
}

// packSlots calls fn for each slot of the pack record v stored under key,
// with its counts decoded into buffers reused for the next slot (fn must
// not keep them).
func (t *kvTx) packSlots(key, v string, fn func(idx uint64, jobs int64, tres, wait tvs)) error {
	d := dec{b: []byte(v)}
	if d.byte1() != codecVersion {
		return corruptKey(key, "unknown rollup record version")
	}
	n := d.count(4)
	var seen uint32
	var tres, wait tvs
	for range n {
		idx := d.u()
		if idx > 31 || seen&(1<<idx) != 0 {
			return corruptKey(key, "rollup slot %d out of range or repeated", idx)
		}
		seen |= 1 << idx
		jobs := int64(d.u() & (1<<62 - 1))
		var err error
		if tres, err = t.decodeTVsTo(key, &d, tres[:0]); err != nil {
			return err
		}
		if wait, err = t.decodeTVsTo(key, &d, wait[:0]); err != nil {
			return err
		}
		fn(idx, jobs, tres, wait)
	}
	if !d.done() {
		return corruptKey(key, "rollup record: %s", d.errOr("trailing bytes"))
	}
	return nil
}
