package accounting

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Level is the granularity of a rollup bucket.
type Level uint8

// Rollup levels.
const (
	LevelHour  Level = iota + 1 // one hour (local clock hours of Config.Location)
	LevelDay                    // one local day (the sum of its hours, or its total once they were purged)
	LevelMonth                  // one calendar month
)

// String returns "hour", "day" or "month".
func (l Level) String() string {
	switch l {
	case LevelHour:
		return "hour"
	case LevelDay:
		return "day"
	case LevelMonth:
		return "month"
	}
	return fmt.Sprintf("Level(%d)", uint8(l))
}

func (l Level) char() (byte, error) {
	switch l {
	case LevelHour:
		return 'h', nil
	case LevelDay:
		return 'd', nil
	case LevelMonth:
		return 'm', nil
	}
	return 0, fmt.Errorf("%w: rollup level %d", ErrInvalid, uint8(l))
}

// Rollup is one bucket of aggregated job usage, like slurmdbd's
// assoc_usage_{hour,day,month} rows.
type Rollup struct {
	Assoc AssocID   `json:"assoc,omitempty"` // 0 for reservation usage
	Level Level     `json:"level"`
	Start time.Time `json:"start"`
	// Jobs counts jobs that ended in the bucket.
	Jobs int64 `json:"jobs"`
	// TRESSeconds is allocated TRES × seconds of running time inside the
	// bucket ("billing" included: billing-seconds for chargeback).
	TRESSeconds TRES `json:"tres_seconds"`
	// WaitTRESSeconds is requested TRES × seconds that eligible jobs spent
	// waiting inside the bucket; kept only on cluster root associations
	// (sreport's "Planned" time).
	WaitTRESSeconds TRES `json:"wait_tres_seconds,omitempty"`
}

// Totals is the sum of rollups over a time range.
type Totals struct {
	From            time.Time `json:"from"`
	To              time.Time `json:"to"`
	Jobs            int64     `json:"jobs"`
	TRESSeconds     TRES      `json:"tres_seconds"`
	WaitTRESSeconds TRES      `json:"wait_tres_seconds,omitempty"`
}

// tv is one TRES count keyed by its interned name ID; tvs are sorted by
// ID. Rollups use them instead of maps on the hot path.
type tv struct {
	id uint32
	v  int64
}

type tvs []tv

// addScaled returns a + k·b (saturating), merging by ID.
func (a tvs) addScaled(b tvs, k int64) tvs {
	if len(b) == 0 || k == 0 {
		return a
	}
	i := 0
	for _, x := range b {
		for i < len(a) && a[i].id < x.id {
			i++
		}
		d := satMul(x.v, k)
		if i < len(a) && a[i].id == x.id {
			a[i].v = satAdd(a[i].v, d)
			continue
		}
		a = append(a, tv{})
		copy(a[i+1:], a[i:])
		a[i] = tv{x.id, d}
	}
	return a
}

// compact drops zero and negative counts.
func (a tvs) compact() tvs {
	out := a[:0]
	for _, x := range a {
		if x.v > 0 {
			out = append(out, x)
		}
	}
	return out
}

func (a tvs) get(id uint32) int64 {
	for _, x := range a {
		if x.id == id {
			return x.v
		}
	}
	return 0
}

// toTVs interns the names of m.
func (t *kvTx) toTVs(m TRES) (tvs, error) {
	out := make(tvs, 0, len(m))
	for n, v := range m {
		id, err := t.intern(n)
		if err != nil {
			return nil, err
		}
		out = append(out, tv{id, v})
	}
	slices.SortFunc(out, func(a, b tv) int { return cmp.Compare(a.id, b.id) })
	return out, nil
}

// toTRES names a; unknown IDs are corruption.
func (t *kvTx) toTRES(a tvs, key string) (TRES, error) {
	m := make(TRES, len(a))
	for _, x := range a {
		n, ok := t.str(uint64(x.id))
		if !ok || n == "" {
			return nil, corruptKey(key, "unknown TRES name ID %d", x.id)
		}
		m[n] = x.v
	}
	return m, nil
}

// slot is one bucket inside a pack.
type slot struct {
	jobs int64
	tres tvs
	wait tvs
}

func (s *slot) add(o *slot) {
	s.jobs += o.jobs
	s.tres = s.tres.addScaled(o.tres, 1)
	s.wait = s.wait.addScaled(o.wait, 1)
}

// clampAndEmpty drops zero entries, clamps negatives (left by replacing a
// job whose buckets were purged) and reports whether s is empty.
func (s *slot) clampAndEmpty() bool {
	s.jobs = max(s.jobs, 0)
	s.tres, s.wait = s.tres.compact(), s.wait.compact()
	return s.jobs == 0 && len(s.tres) == 0 && len(s.wait) == 0
}

// pack holds the slots of one pack record (at most 31 are used).
type pack [32]*slot

// add adds s into slot idx.
func (p *pack) add(idx int, s *slot) {
	if p[idx] == nil {
		p[idx] = &slot{}
	}
	p[idx].add(s)
}

// used returns the number of slots in use.
func (p *pack) used() int {
	n := 0
	for _, s := range p {
		if s != nil {
			n++
		}
	}
	return n
}

// Storage: the hours of one day are packed in one record, so that
// recording a job rewrites few records and a day costs one read; months
// are single records. Day records exist only for days whose hours were
// purged (PurgeRollups keeps their total).
//
//	rh:<assoc>:<day start>    hour slots 0–24
//	rd:<assoc>:<day start>    slot 0: the day (after its hours were purged)
//	rm:<assoc>:<month start>  slot 0: the month
//	rr:<cluster>|<reservation>|<day start>  hour slots of reservation usage
const (
	prefixRollup     = "r"
	prefixResvRollup = "rr:"
)

func rollupPrefix(c byte, id AssocID) string {
	return prefixRollup + string(c) + ":" + hex8(uint32(id)) + ":"
}

func resvPrefix(cluster, name string) string { return prefixResvRollup + cluster + "|" + name + "|" }

// Calendar helpers, all in unix seconds in location loc.

type cal struct{ loc *time.Location }

func (c cal) hourStart(u int64) int64 {
	_, off := time.Unix(u, 0).In(c.loc).Zone()
	return floorDiv(u+int64(off), 3600)*3600 - int64(off)
}

func (c cal) nextHour(h int64) int64 {
	n := c.hourStart(h + 3600)
	if n <= h {
		n = h + 3600
	}
	return n
}

func (c cal) date(u int64) (int, time.Month, int) { return time.Unix(u, 0).In(c.loc).Date() }

func (c cal) at(y int, m time.Month, d int, u int64) int64 {
	v := time.Date(y, m, d, 0, 0, 0, 0, c.loc).Unix()
	if u >= 0 && v > u { // a DST gap at midnight
		v = c.hourStart(u)
	}
	return v
}

func (c cal) dayStart(u int64) int64   { y, m, d := c.date(u); return c.at(y, m, d, u) }
func (c cal) monthStart(u int64) int64 { y, m, _ := c.date(u); return c.at(y, m, 1, u) }
func (c cal) nextDay(u int64) int64    { y, m, d := c.date(u); return c.at(y, m, d+1, -1) }
func (c cal) nextMonth(u int64) int64  { y, m, _ := c.date(u); return c.at(y, m+1, 1, -1) }

// slotOf returns the record start and slot index of the bucket of level
// (h, d, m) containing hour h.
func (c cal) slotOf(lc byte, h int64) (pack int64, idx int) {
	switch lc {
	case 'h':
		ds := c.dayStart(h)
		return ds, int(min(max((h-ds)/3600, 0), 24))
	case 'd':
		return c.dayStart(h), 0
	default:
		return c.monthStart(h), 0
	}
}

// slotStart is the inverse of slotOf.
func (c cal) slotStart(lc byte, pack int64, idx int) int64 {
	if lc == 'h' {
		return pack + int64(idx)*3600
	}
	return pack
}

func (c cal) packEnd(lc byte, pack int64) int64 {
	if lc == 'm' {
		return c.nextMonth(pack)
	}
	return c.nextDay(pack)
}

// Pending deltas, keyed by (target, hour); target is an association pack
// prefix ("rh:<assoc>:" style without the level) or a reservation prefix.

type rollKey struct {
	assoc AssocID // 0: reservation usage
	resv  string  // resvPrefix, when assoc == 0
	hour  int64
}

// addInterval adds sign × tres × (overlap seconds) to every hour bucket of
// [s, e) for each target.
func (t *kvTx) addInterval(targets []rollKey, s, e int64, tres tvs, wait bool, sign int64) {
	if e <= s || len(tres) == 0 {
		return
	}
	c := cal{t.l.loc}
	for h, next := c.hourStart(s), int64(0); h < e; h = next {
		next = c.nextHour(h)
		lo, hi := max(s, h), min(e, next)
		if hi <= lo {
			continue
		}
		for _, tg := range targets {
			tg.hour = h
			d := t.delta(tg)
			if wait {
				d.wait = d.wait.addScaled(tres, sign*(hi-lo))
			} else {
				d.tres = d.tres.addScaled(tres, sign*(hi-lo))
			}
		}
	}
}

func (t *kvTx) delta(k rollKey) *slot {
	if t.roll == nil {
		t.roll = map[rollKey]*slot{}
	}
	d := t.roll[k]
	if d == nil {
		d = &slot{}
		t.roll[k] = d
	}
	return d
}

// flushRollups merges pending deltas into the stored packs.
func (t *kvTx) flushRollups() error {
	if len(t.roll) == 0 {
		return nil
	}
	c := cal{t.l.loc}
	packs := map[string]*pack{}
	merge := func(key string, idx int, d *slot) {
		p := packs[key]
		if p == nil {
			p = &pack{}
			packs[key] = p
		}
		p.add(idx, d)
	}
	for k, d := range t.roll {
		if k.assoc == 0 {
			ps, idx := c.slotOf('h', k.hour)
			merge(k.resv+hexT(ps), idx, d)
			continue
		}
		for _, lc := range []byte{'h', 'm'} {
			ps, idx := c.slotOf(lc, k.hour)
			merge(rollupPrefix(lc, k.assoc)+hexT(ps), idx, d)
		}
	}
	clear(t.roll)
	keys := make([]string, 0, len(packs))
	for k := range packs {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	pre := slices.Clone(keys)
	for _, k := range keys {
		if strings.HasPrefix(k, prefixRollup+"h:") { // and the day record read when its hours are gone
			pre = append(pre, prefixRollup+"d:"+k[len(prefixRollup)+2:])
		}
	}
	if err := prefetch(t.r, pre); err != nil {
		return err
	}
	for _, key := range keys {
		cur, err := t.loadPack(key)
		if err != nil {
			return err
		}
		delta := packs[key]
		if cur == nil && strings.HasPrefix(key, prefixRollup+"h:") {
			// The day's hours were purged: add to its day record.
			dkey := prefixRollup + "d:" + key[len(prefixRollup)+2:]
			if day, err := t.loadPack(dkey); err != nil {
				return err
			} else if day != nil {
				key, cur, delta = dkey, day, &pack{0: sumPack(delta)}
			}
		}
		if cur == nil {
			cur = &pack{}
		}
		for idx, d := range delta {
			if d == nil {
				continue
			}
			cur.add(idx, d)
			if cur[idx].clampAndEmpty() {
				cur[idx] = nil
			}
		}
		if err := t.storePack(key, cur); err != nil {
			return err
		}
	}
	return nil
}

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

// jobContribution adds sign × the rollup contribution of job j (charged to
// chain, whose last element is the cluster root).
func (t *kvTx) jobContribution(j *JobRecord, chain []AssocID, sign int64) error {
	if len(chain) == 0 {
		return nil
	}
	targets := make([]rollKey, len(chain))
	for i, id := range chain {
		targets[i] = rollKey{assoc: id}
	}
	if !j.Start.IsZero() && !j.End.IsZero() {
		alloc, err := t.toTVs(j.AllocTRES)
		if err != nil {
			return err
		}
		s, e := j.Start.Unix(), j.End.Unix()
		t.addInterval(targets, s, e, alloc, false, sign)
		if j.Reservation != "" {
			t.addInterval([]rollKey{{resv: resvPrefix(j.Cluster, j.Reservation)}}, s, e, alloc, false, sign)
		}
	}
	if !j.End.IsZero() {
		h := cal{t.l.loc}.hourStart(j.End.Unix())
		for _, tg := range targets {
			tg.hour = h
			t.delta(tg).jobs += sign
		}
	}
	// eligible wait, on the root only
	ws := j.waitStart()
	we := j.Start
	if we.IsZero() {
		we = j.End
	}
	if !we.IsZero() && we.After(ws) {
		r, err := t.toTVs(j.waitTRES())
		if err != nil {
			return err
		}
		t.addInterval(targets[len(targets)-1:], ws.Unix(), we.Unix(), r, true, sign)
	}
	return nil
}

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
