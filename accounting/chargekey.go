package accounting

import (
	"strconv"
	"time"
)

// ChargeKeyRetention is how long a Charge.Key is remembered: a key is
// pruned once a keyed charge for an interval ending ChargeKeyRetention
// after the key's interval ended is committed, and a retry arriving after
// that is charged again. An hour covers a control loop retrying its next
// cycles while keeping the keys of periodic charges few (a charge per
// running job per PriorityCalcPeriod, for an hour).
const ChargeKeyRetention = time.Hour

// maxChargeKey is the longest Charge.Key accepted, in bytes.
const maxChargeKey = 256

// Charge keys: ck:<key> → the interval end (decimal unix seconds), and a
// time index ckt:<end16>:<key> → "" for pruning.
const (
	prefixChargeKey     = "ck:"
	prefixChargeKeyTime = "ckt:"
	// chargePruneBatch bounds the keys one transaction prunes, so a
	// backlog is worked off over later ones.
	chargePruneBatch = 1024
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
// at to.
func (t *kvTx) rememberCharge(key string, to int64) error {
	if key == "" {
		return nil
	}
	if err := t.set(prefixChargeKey+key, strconv.FormatInt(to, 10)); err != nil {
		return err
	}
	t.chargeTo = max(t.chargeTo, to)
	return t.set(prefixChargeKeyTime+hex16(uint64(to))+":"+key, "")
}

// pruneChargeKeys deletes, at commit, up to chargePruneBatch keys whose
// interval ended ChargeKeyRetention before this transaction's latest
// keyed charge.
func (t *kvTx) pruneChargeKeys() error {
	cut := t.chargeTo - int64(ChargeKeyRetention/time.Second)
	if t.chargeTo == 0 || cut <= 0 {
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
