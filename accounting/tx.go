package accounting

import (
	"encoding/json"
	"fmt"
	"time"
)

// kvTx implements Tx over a backend transaction.
type kvTx struct {
	l *kvLedger
	r KVReader
	w KVWriter // nil in View

	newStrs []string
	newIDs  map[string]uint32

	// pending rollup deltas: pack key → slot → delta, flushed before any
	// rollup read and at commit.
	roll map[rollKey]*slot
	// usage records loaded or modified in this transaction.
	usage      map[string]*usageRec
	usageDirty map[string]bool

	resetLoaded bool
	reset       int64 // last ResetUsage (unix seconds)

	chargeTo int64 // end of the latest keyed charge, for pruning keys at flush

	assocDirty bool                // this transaction changed associations
	assocLocal map[AssocID][]Assoc // version cache once assocDirty

	e enc // scratch encoder
}

func newWriteTx(l *kvLedger, w KVWriter) *kvTx {
	return &kvTx{l: l, r: w, w: w}
}

func (t *kvTx) writable() error {
	if t.w == nil {
		return ErrReadOnly
	}
	return nil
}

func (t *kvTx) get(key string) (string, bool, error) { return t.r.Get(key) }

func (t *kvTx) set(key, val string) error {
	if t.w == nil {
		return ErrReadOnly
	}
	return t.w.Set(key, val)
}

func (t *kvTx) del(key string) error {
	if t.w == nil {
		return ErrReadOnly
	}
	return t.w.Delete(key)
}

// keysIn collects the keys in [from, to) so they can be changed afterwards.
func (t *kvTx) keysIn(from, to string) ([]string, error) {
	var keys []string
	err := t.r.Ascend(from, to, func(k, _ string) bool { keys = append(keys, k); return true })
	return keys, err
}

func (t *kvTx) getJSON(key string, v any) (bool, error) {
	s, ok, err := t.get(key)
	if err != nil || !ok {
		return ok, err
	}
	return true, unmarshalJSON(key, s, v)
}

// ascendRecords calls fn for each record in [from, to), decoded by decode,
// in key order until fn returns false. A decode error stops the scan and
// is returned.
func ascendRecords[T any](r KVReader, from, to string, decode func(k, v string) (T, error), fn func(T) bool) error {
	var bad error
	err := r.Ascend(from, to, func(k, v string) bool {
		x, err := decode(k, v)
		if err != nil {
			bad = err
			return false
		}
		return fn(x)
	})
	if err != nil {
		return err
	}
	return bad
}

// decodeJSON decodes a JSON record; a failure is corruption of key.
func decodeJSON[T any](key, val string) (T, error) {
	var x T
	err := unmarshalJSON(key, val, &x)
	return x, err
}

func unmarshalJSON(key, val string, v any) error {
	if err := json.Unmarshal([]byte(val), v); err != nil {
		return corruptKey(key, "%v", err)
	}
	return nil
}

func (t *kvTx) setJSON(key string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode %s: %w", key, err)
	}
	return t.set(key, string(b))
}

// intern returns the ID of s, adding it to the string table when new.
// The empty string is ID 0.
func (t *kvTx) intern(s string) (uint32, error) {
	if id, ok := t.lookupID(s); ok {
		return id, nil
	}
	if t.w == nil {
		return 0, ErrReadOnly
	}
	id := uint32(len(t.l.strs) + len(t.newStrs) + 1)
	if err := t.w.Set(prefixStr+hex8(id), s); err != nil {
		return 0, err
	}
	if t.newIDs == nil {
		t.newIDs = map[string]uint32{}
	}
	t.newIDs[s] = id
	t.newStrs = append(t.newStrs, s)
	return id, nil
}

// lookupID returns the ID of s if interned (false otherwise), without
// adding it.
func (t *kvTx) lookupID(s string) (uint32, bool) {
	if s == "" {
		return 0, true
	}
	if id, ok := t.l.ids[s]; ok {
		return id, true
	}
	id, ok := t.newIDs[s]
	return id, ok
}

func (t *kvTx) str(id uint64) (string, bool) {
	switch {
	case id == 0:
		return "", true
	case id <= uint64(len(t.l.strs)):
		return t.l.strs[id-1], true
	case id <= uint64(len(t.l.strs)+len(t.newStrs)):
		return t.newStrs[id-1-uint64(len(t.l.strs))], true
	}
	return "", false
}

// flush writes pending rollup and usage changes; called before commit.
func (t *kvTx) flush() error {
	if err := t.flushRollups(); err != nil {
		return err
	}
	if err := t.pruneChargeKeys(); err != nil {
		return err
	}
	return t.flushUsage()
}

// nextSeq increments and returns the counter stored at key.
func (t *kvTx) nextSeq(key string) (uint64, error) {
	v, ok, err := t.get(key)
	if err != nil {
		return 0, err
	}
	var n uint64
	if ok {
		var okp bool
		if n, okp = parseHex(v); !okp {
			return 0, corruptKey(key, "bad counter %q", v)
		}
	}
	n++
	return n, t.set(key, hex16(n))
}

func unixOrZero(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.Unix()
}

func timeOrZero(u int64) time.Time {
	if u == 0 {
		return time.Time{}
	}
	return time.Unix(u, 0).UTC()
}

var _ Tx = (*kvTx)(nil)

// Location returns the time zone of the ledger's rollup buckets.
func (t *kvTx) Location() *time.Location { return t.l.loc }
