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
