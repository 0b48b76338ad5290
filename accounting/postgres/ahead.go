package postgres

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/sluicehq/sluice/accounting"
)

// Rollups are read one bucket pack at a time (Tx.Totals reads a day, then
// the next, ...), so a Get of a rollup key reads the next rows of the
// same association and level with it, and later Gets inside that span are
// answered from memory: a 30-day report costs one query per association
// instead of thirty. Only the database is cached; a transaction's own
// writes are looked up first, and within one transaction nobody else
// writes the cluster's rows.
const aheadRows = 64

// readAhead is the per-transaction cache: rows by key, and the sorted,
// disjoint key spans [lo, hi) whose every stored row is in rows.
type readAhead struct {
	rows   map[string]aheadRow
	spans  []span
	points map[string]bool // single keys read by Prefetch
}

type aheadKV struct {
	k string
	aheadRow
}

type aheadRow struct {
	v     string
	month time.Time // record rows: their partition
	dup   bool      // a record row found in two partitions
}

type span struct{ lo, hi string }

// aheadPrefix returns the part of key shared by the rows read ahead with
// it ("rh:<assoc>:" for an hour pack, "j:" for a job record, "ck:" for a
// charge key, "u:" for usage), or "" when key is not read ahead.
func aheadPrefix(key string) string {
	switch {
	case strings.HasPrefix(key, "j:"):
		return "j:"
	case strings.HasPrefix(key, "ck:"): // charge keys: mostly absent, checked one by one
		return "ck:"
	case strings.HasPrefix(key, "u:"), strings.HasPrefix(key, "uq:"): // usage, read per charged association
		return key[:strings.IndexByte(key, ':')+1]
	}
	if len(key) < 4 || key[0] != 'r' || key[2] != ':' || !strings.ContainsRune("hdm", rune(key[1])) {
		return ""
	}
	i := strings.IndexByte(key[3:], ':')
	if i < 0 {
		return ""
	}
	return key[:3+i+1]
}

// readAhead answers Get(key) from the cache (hit), filling it first when
// key is a rollup or job key outside every cached span. In an Update it
// notes where a record key is stored (see kvTx.stored).
func (t *kvTx) readAhead(key string) (val string, ok, hit bool, err error) {
	a := &t.ahead
	if a.points[key] {
		r, ok := a.rows[key]
		return r.v, ok, true, nil
	}
	p := aheadPrefix(key)
	if p == "" {
		return "", false, false, nil
	}
	if !a.covered(key) {
		if err := t.fillAhead(key, p); err != nil {
			return "", false, true, fmt.Errorf("postgres: get %q: %w", key, err)
		}
	}
	r, ok := a.rows[key]
	if r.dup {
		return "", false, true, &accounting.CorruptError{Offset: -1, Key: key, Reason: "stored in several monthly partitions of sluice_records", Err: accounting.ErrCorrupt}
	}
	if t.w != nil && p == "j:" {
		if t.stored == nil {
			t.stored = map[string]time.Time{}
		}
		t.stored[key] = r.month // zero when absent
	}
	return r.v, ok, true, nil
}

// fillAhead reads up to aheadRows rows from key on below prefix p and
// caches them with the span they cover.
func (t *kvTx) fillAhead(key, p string) error {
	a := &t.ahead
	end := p[:len(p)-1] + ";" // the end of prefix p: its final ':' + 1
	args := []any{t.b.cluster, []byte(key), aheadRows, []byte(end)}
	if a.rows == nil {
		a.rows = map[string]aheadRow{}
	}
	var got []aheadKV
	if p == "j:" {
		rows, err := t.q.Query(t.ctx, "SELECT key, val, month FROM sluice_records WHERE cluster = $1 AND key >= $2 AND key < $4 ORDER BY key LIMIT $3", args...)
		if err != nil {
			return err
		}
		for rows.Next() {
			var k, v []byte
			var m time.Time
			if err := rows.Scan(&k, &v, &m); err != nil {
				rows.Close()
				return err
			}
			got = append(got, aheadKV{string(k), aheadRow{v: string(v), month: m}})
		}
		if err := rows.Err(); err != nil {
			return err
		}
	} else {
		keys, vals, err := t.page("SELECT key, val FROM sluice_kv WHERE cluster = $1 AND key >= $2 AND key < $4 ORDER BY key LIMIT $3", args)
		if err != nil {
			return err
		}
		for j, k := range keys {
			got = append(got, aheadKV{k, aheadRow{v: vals[j]}})
		}
	}
	hi := end
	if len(got) == aheadRows {
		// The last key may have more rows (partitions) past the limit:
		// the span ends before it.
		hi = got[len(got)-1].k
	}
	if hi <= key {
		return t.fillAheadOne(key)
	}
	for j, r := range got {
		if r.k >= hi {
			break
		}
		if j > 0 && got[j-1].k == r.k {
			r.aheadRow = aheadRow{dup: true}
		}
		a.rows[r.k] = r.aheadRow
	}
	a.addSpans([]span{{key, hi}})
	return nil
}

// fillAheadOne caches key alone (a page that ended on key itself), as
// the span [key, key+"\x00").
func (t *kvTx) fillAheadOne(key string) error {
	v, ok, err := t.getDB(key)
	if err != nil {
		return err
	}
	if ok {
		t.ahead.rows[key] = aheadRow{v: v, month: t.stored[key]}
	}
	t.ahead.addSpans([]span{{key, key + "\x00"}})
	return nil
}

// covered reports whether key's stored value is in the cache.
func (a *readAhead) covered(key string) bool {
	if a.points[key] {
		return true
	}
	i := sort.Search(len(a.spans), func(i int) bool { return a.spans[i].hi > key })
	return i < len(a.spans) && a.spans[i].lo <= key
}

// Prefetch reads the keys that are not cached yet in one query, for the
// Gets that follow (accounting.Prefetcher): keys that share a read-ahead
// prefix ("rh:<assoc>:") are read as one key range, which caches every
// row in between too; other keys one by one. Record keys are left to
// Get. The transaction's buffered writes still come first in Get.
func (t *kvTx) Prefetch(keys []string) error {
	a := &t.ahead
	var ks []string
	for _, k := range keys {
		if !isRecordKey(k) && !a.covered(k) {
			ks = append(ks, k)
		}
	}
	if len(ks) == 0 {
		return nil
	}
	slices.Sort(ks)
	var los, his [][]byte
	var ranges []span
	var points []string
	for i := 0; i < len(ks); {
		p := aheadPrefix(ks[i])
		j := i + 1
		for p != "" && j < len(ks) && strings.HasPrefix(ks[j], p) {
			j++
		}
		if j-i == 1 {
			points = append(points, ks[i])
		} else {
			ranges = append(ranges, span{ks[i], ks[j-1] + "\x00"})
		}
		los, his = append(los, []byte(ks[i])), append(his, []byte(ks[j-1]))
		i = j
	}
	rows, err := t.q.Query(t.ctx, `SELECT s.key, s.val FROM unnest($2::bytea[], $3::bytea[]) AS r(lo, hi)
CROSS JOIN LATERAL (SELECT key, val FROM sluice_kv WHERE cluster = $1 AND key >= r.lo AND key <= r.hi) AS s`, t.b.cluster, los, his)
	if err != nil {
		return fmt.Errorf("postgres: prefetch %d keys: %w", len(ks), err)
	}
	if a.rows == nil {
		a.rows = map[string]aheadRow{}
	}
	for rows.Next() {
		raw := rows.RawValues()
		a.rows[string(raw[0])] = aheadRow{v: string(raw[1])}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("postgres: prefetch %d keys: %w", len(ks), err)
	}
	if a.points == nil {
		a.points = map[string]bool{}
	}
	for _, k := range points {
		a.points[k] = true
	}
	a.addSpans(ranges)
	return nil
}

// addSpans adds spans to the cached ones, merging those that overlap.
func (a *readAhead) addSpans(add []span) {
	if len(add) == 0 {
		return
	}
	all := append(a.spans, add...)
	slices.SortFunc(all, func(x, y span) int { return strings.Compare(x.lo, y.lo) })
	out := all[:1]
	for _, s := range all[1:] {
		if last := &out[len(out)-1]; s.lo <= last.hi {
			last.hi = max(last.hi, s.hi)
			continue
		}
		out = append(out, s)
	}
	a.spans = out
}
