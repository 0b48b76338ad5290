package accounting

import (
	"strconv"
	"time"
)

// ChargeKeyRetention is how long after the end of its interval a
// Charge.Key is remembered. A retry of a keyed charge arriving later than
// that is charged again; keys older than that are pruned as new keyed
// charges are recorded.
const ChargeKeyRetention = 7 * 24 * time.Hour

// maxChargeKey is the longest Charge.Key accepted, in bytes.
const maxChargeKey = 256

// Charge keys: ck:<key> → the interval end (decimal unix seconds), and a
// time index ckt:<end16>:<key> → "" for pruning.
const (
	prefixChargeKey     = "ck:"
	prefixChargeKeyTime = "ckt:"
	// chargePruneBatch bounds the keys one Charge prunes, so a backlog
	// is worked off over later charges instead of in one transaction.
	chargePruneBatch = 64
)

// chargeSeen reports whether a charge with key was already applied ("" is
// never seen).
func (t *kvTx) chargeSeen(key string) (bool, error) {
	if key == "" {
		return false, nil
	}
	_, ok, err := t.get(prefixChargeKey + key)
	return ok, err
}

// rememberCharge records key (when set) as applied for an interval ending
// at to, and prunes keys whose interval ended ChargeKeyRetention before to.
func (t *kvTx) rememberCharge(key string, to int64) error {
	if key == "" {
		return nil
	}
	if err := t.set(prefixChargeKey+key, strconv.FormatInt(to, 10)); err != nil {
		return err
	}
	if err := t.set(prefixChargeKeyTime+hex16(uint64(to))+":"+key, ""); err != nil {
		return err
	}
	cut := to - int64(ChargeKeyRetention/time.Second)
	if cut <= 0 {
		return nil
	}
	var old []string
	err := t.r.Ascend(prefixChargeKeyTime, prefixChargeKeyTime+hex16(uint64(cut)), func(k, _ string) bool {
		old = append(old, k)
		return len(old) < chargePruneBatch
	})
	if err != nil {
		return err
	}
	for _, k := range old {
		if len(k) < len(prefixChargeKeyTime)+17 {
			return corruptKey(k, "bad charge key index entry")
		}
		if err := t.del(prefixChargeKey + k[len(prefixChargeKeyTime)+17:]); err != nil {
			return err
		}
		if err := t.del(k); err != nil {
			return err
		}
	}
	return nil
}
