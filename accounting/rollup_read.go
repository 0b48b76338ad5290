package accounting

import (
	"cmp"
	"slices"
	"strings"
	"time"
)

// This file holds the rollup reads: Rollups, Totals, ReservationUsage
// and PurgeRollups.

func (t *kvTx) Rollups(id AssocID, level Level, from, to time.Time, fn func(Rollup) bool) error {
	lc, err := level.char()
	if err != nil {
		return err
	}
	if err := t.flushIfWritable(); err != nil {
		return err
	}
	type item struct {
		start int64
		s     *slot
	}
	var items []item
	collect := func(lc byte, sum bool) error {
		return t.scanPacks(rollupPrefix(lc, id), lc, from, to, sum, func(start int64, s *slot) bool {
			items = append(items, item{start, s})
			return true
		})
	}
	if lc == 'd' {
		// Days come from the hour packs, or from day records once the
		// hours were purged.
		if err := collect('h', true); err != nil {
			return err
		}
	}
	if err := collect(lc, false); err != nil {
		return err
	}
	slices.SortStableFunc(items, func(a, b item) int { return cmp.Compare(a.start, b.start) })
	prefix := rollupPrefix(lc, id)
	for i := 0; i < len(items); i++ {
		s := items[i].s
		for i+1 < len(items) && items[i+1].start == items[i].start {
			i++
			s = &slot{jobs: s.jobs + items[i].s.jobs, tres: slices.Clone(s.tres).addScaled(items[i].s.tres, 1),
				wait: slices.Clone(s.wait).addScaled(items[i].s.wait, 1)}
		}
		r := Rollup{Assoc: id, Level: level, Start: time.Unix(items[i].start, 0).UTC(), Jobs: s.jobs}
		var err error
		if r.TRESSeconds, err = t.toTRES(s.tres, prefix); err != nil {
			return err
		}
		if len(s.wait) > 0 {
			if r.WaitTRESSeconds, err = t.toTRES(s.wait, prefix); err != nil {
				return err
			}
		}
		if !fn(r) {
			return nil
		}
	}
	return nil
}

func (t *kvTx) flushIfWritable() error {
	if t.w == nil {
		return nil
	}
	return t.flushRollups()
}

// scanPacks calls fn for each slot of records under prefix whose start is
// in [from, to), in time order; with sum, once per record with the sum of
// its slots (a day from an hour pack).
func (t *kvTx) scanPacks(prefix string, lc byte, from, to time.Time, sum bool, fn func(start int64, s *slot) bool) error {
	c := cal{t.l.loc}
	lo := prefix
	if !from.IsZero() {
		ps, _ := c.slotOf(lc, from.Unix())
		lo = prefix + hexT(ps)
	}
	hi := prefixEnd(prefix)
	if !to.IsZero() {
		hi = prefix + hexT(to.Unix()) // records starting before to
	}
	type kv struct{ k, v string }
	var packs []kv
	if err := t.r.Ascend(lo, hi, func(k, v string) bool { packs = append(packs, kv{k, v}); return true }); err != nil {
		return err
	}
	inRange := func(st int64) bool {
		return (from.IsZero() || st >= from.Unix()) && (to.IsZero() || st < to.Unix())
	}
	for _, p := range packs {
		ps, ok := parseHex(p.k[len(prefix):])
		if !ok {
			return corruptKey(p.k, "bad rollup key")
		}
		slots, err := t.decodePack(p.k, p.v)
		if err != nil {
			return err
		}
		if sum {
			if st := int64(ps); inRange(st) && !fn(st, sumPack(slots)) {
				return nil
			}
			continue
		}
		for i, s := range slots {
			if s == nil {
				continue
			}
			if st := c.slotStart(lc, int64(ps), i); inRange(st) && !fn(st, s) {
				return nil
			}
		}
	}
	return nil
}

func (t *kvTx) Totals(id AssocID, from, to time.Time) (Totals, error) {
	return t.totals(id, from, to, true)
}

// totals is Totals; with prefetch it first hands a Prefetcher backend the
// records it reads (callers that prefetched already pass false).
func (t *kvTx) totals(id AssocID, from, to time.Time, prefetch bool) (Totals, error) {
	if err := validTime("from", from, false); err != nil {
		return Totals{}, err
	}
	if err := validTime("to", to, false); err != nil {
		return Totals{}, err
	}
	if err := t.flushIfWritable(); err != nil {
		return Totals{}, err
	}
	c := cal{t.l.loc}
	cur, end := c.hourStart(from.Unix()), c.hourStart(to.Unix())
	tot := Totals{From: time.Unix(cur, 0).UTC(), To: time.Unix(max(cur, end), 0).UTC()}
	var sum, wait tvs
	var lastKey string
	var last *pack
	add := func(lc byte, u int64) error {
		ps, idx := c.slotOf(lc, u)
		whole := lc == 'd' // a whole day: the sum of its hour pack, or its day record
		if whole {
			lc = 'h'
		}
		key := rollupPrefix(lc, id) + hexT(ps)
		var s *slot
		if whole {
			v, ok, err := t.get(key)
			if err != nil {
				return err
			}
			if ok { // summed as decoded
				return t.packSlots(key, v, func(_ uint64, jobs int64, tres, w tvs) {
					tot.Jobs += jobs
					sum = sum.addScaled(tres, 1)
					wait = wait.addScaled(w, 1)
				})
			}
			day, err := t.loadPack(rollupPrefix('d', id) + hexT(ps))
			if err != nil {
				return err
			}
			if day != nil {
				s = day[0]
			}
		} else {
			if key != lastKey {
				var err error
				if last, err = t.loadPack(key); err != nil {
					return err
				}
				lastKey = key
			}
			if last != nil {
				s = last[idx]
			}
		}
		if s != nil {
			tot.Jobs += s.jobs
			sum = sum.addScaled(s.tres, 1)
			wait = wait.addScaled(s.wait, 1)
		}
		return nil
	}
	if p, ok := t.r.(Prefetcher); ok && prefetch {
		if err := p.Prefetch(t.totalsKeys(id, cur, end)); err != nil {
			return Totals{}, err
		}
	}
	for cur < end {
		lc, next := c.totalsStep(cur, end)
		if err := add(lc, cur); err != nil {
			return Totals{}, err
		}
		cur = next
	}
	var err error
	if tot.TRESSeconds, err = t.toTRES(sum, rollupPrefix('h', id)); err != nil {
		return Totals{}, err
	}
	if len(wait) > 0 {
		if tot.WaitTRESSeconds, err = t.toTRES(wait, rollupPrefix('h', id)); err != nil {
			return Totals{}, err
		}
	}
	return tot, nil
}

func (t *kvTx) ReservationUsage(cluster, name string, from, to time.Time) ([]Rollup, error) {
	if err := validName("cluster", cluster, false); err != nil {
		return nil, err
	}
	if err := validName("reservation", name, false); err != nil {
		return nil, err
	}
	if err := t.flushIfWritable(); err != nil {
		return nil, err
	}
	var out []Rollup
	var bad error
	prefix := resvPrefix(cluster, name)
	err := t.scanPacks(prefix, 'h', from, to, false, func(start int64, s *slot) bool {
		r := Rollup{Level: LevelHour, Start: time.Unix(start, 0).UTC(), Jobs: s.jobs}
		r.TRESSeconds, bad = t.toTRES(s.tres, prefix)
		out = append(out, r)
		return bad == nil
	})
	if err == nil {
		err = bad
	}
	return out, err
}

func (t *kvTx) PurgeRollups(level Level, before time.Time) (int, error) {
	if err := t.writable(); err != nil {
		return 0, err
	}
	lc, err := level.char()
	if err != nil {
		return 0, err
	}
	if err := validTime("before", before, false); err != nil {
		return 0, err
	}
	if err := t.flushRollups(); err != nil {
		return 0, err
	}
	c := cal{t.l.loc}
	b := before.Unix()
	type kv struct{ k, v string }
	var recs []kv
	err = t.r.Ascend(prefixRollup, prefixEnd(prefixRollup), func(k, v string) bool {
		kind := ""
		if len(k) > 3 && k[2] == ':' {
			kind = k[1:2]
		}
		switch {
		case kind == string(lc), lc == 'd' && kind == "h", lc != 'm' && strings.HasPrefix(k, prefixResvRollup):
			recs = append(recs, kv{k, v})
		}
		return true
	})
	if err != nil {
		return 0, err
	}
	n := 0
	for _, r := range recs {
		ps, ok := parseHex(r.k[strings.LastIndexAny(r.k, ":|")+1:])
		if !ok {
			return n, corruptKey(r.k, "bad rollup key")
		}
		kind := r.k[1]
		if r.k[1] == 'r' {
			kind = 'h'
		}
		if c.packEnd(kind, int64(ps)) > b {
			continue // only whole records before before
		}
		p, err := t.decodePack(r.k, r.v)
		if err != nil {
			return n, err
		}
		n += p.used()
		if lc == 'h' && kind == 'h' && r.k[1] == 'h' {
			// Keep the day's total.
			dkey := prefixRollup + "d:" + r.k[len(prefixRollup)+2:]
			day, err := t.loadPack(dkey)
			if err != nil {
				return n, err
			}
			if day == nil {
				day = &pack{}
			}
			day.add(0, sumPack(p))
			if err := t.storePack(dkey, day); err != nil {
				return n, err
			}
		}
		if err := t.del(r.k); err != nil {
			return n, err
		}
	}
	return n, nil
}
