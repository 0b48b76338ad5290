package ledgertest

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/accounting"
)

// testChargeIdempotent checks Charge.Key: a keyed charge applied once is a
// no-op when retried (in the same or a later transaction), a rolled-back
// one is not remembered, different keys charge separately, JobCharge keys
// per job and interval, and keys are forgotten ChargeKeyRetention after
// their interval.
func testChargeIdempotent(t *testing.T, open Opener) {
	l := newLedger(t, open, accounting.Config{NoDecay: true})
	tr := buildTree(t, l, t0)
	hour := func(key string, h int) accounting.Charge {
		from := t0.Add(time.Duration(h) * time.Hour)
		return accounting.Charge{Assoc: tr.bob.ID, QOS: "q", TRES: accounting.TRES{"cpu": 2}, From: from, To: from.Add(time.Hour), Key: key}
	}
	charge := func(c accounting.Charge) {
		t.Helper()
		update(t, l, func(tx accounting.Tx) error { return tx.Charge(c) })
	}
	raw := func(now time.Time) float64 {
		t.Helper()
		return usageAt(t, l, tr.bob.ID, now).Raw
	}
	const h = 2 * 3600.0 // one charge: 2 CPUs for an hour
	charge(hour("k1", 0))
	charge(hour("k1", 0)) // a retry after a commit the caller could not see
	update(t, l, func(tx accounting.Tx) error {
		require.NoError(t, tx.Charge(hour("k2", 1)))
		return tx.Charge(hour("k2", 1)) // twice in one transaction
	})
	assert.InDelta(t, 2*h, raw(t0.Add(2*time.Hour)), 1e-6, "a retried keyed charge is not counted again")
	var qos accounting.Usage
	view(t, l, func(tx accounting.Tx) error {
		var err error
		qos, err = tx.QOSUsage("q", t0.Add(2*time.Hour))
		return err
	})
	assert.InDelta(t, 2*h, qos.Raw, 1e-6, "nor on its QOS")

	boom := errors.New("boom")
	err := l.Update(func(tx accounting.Tx) error {
		require.NoError(t, tx.Charge(hour("k3", 2)))
		return boom
	})
	require.ErrorIs(t, err, boom)
	charge(hour("k3", 2))
	assert.InDelta(t, 3*h, raw(t0.Add(3*time.Hour)), 1e-6, "a rolled-back keyed charge is applied on retry")

	charge(hour("", 2))
	charge(hour("", 2))
	charge(hour("other", 2))
	assert.InDelta(t, 6*h, raw(t0.Add(3*time.Hour)), 1e-6, "unkeyed charges and other keys all count")

	err = l.Update(func(tx accounting.Tx) error {
		return tx.Charge(hour(string(make([]byte, 300)), 3))
	})
	assert.ErrorIs(t, err, accounting.ErrInvalid, "an over-long key")

	j := simpleJob(1, tr.bob, t0.Add(3*time.Hour), 2*time.Hour)
	c := accounting.JobCharge(j, t0.Add(3*time.Hour), t0.Add(4*time.Hour))
	assert.NotEmpty(t, c.Key, "JobCharge keys its charge")
	assert.NotEqual(t, c.Key, accounting.JobCharge(j, t0.Add(4*time.Hour), t0.Add(5*time.Hour)).Key, "per interval")
	charge(c)
	charge(accounting.JobCharge(j, t0.Add(3*time.Hour), t0.Add(4*time.Hour)))
	assert.InDelta(t, 6*h+4*3600.0, raw(t0.Add(4*time.Hour)), 1e-6, "the job's interval is charged once")

	// A key is remembered until a keyed charge ending more than
	// ChargeKeyRetention after its interval commits.
	total := 6*h + 4*3600.0
	e := t0.Add(10 * time.Hour)
	keyed := func(key string, end time.Time) {
		t.Helper()
		charge(accounting.Charge{Assoc: tr.bob.ID, TRES: accounting.TRES{"cpu": 2}, From: end.Add(-time.Hour), To: end, Key: key})
	}
	keyed("r1", e)
	keyed("s1", e.Add(accounting.ChargeKeyRetention))
	keyed("r1", e)
	total += 2 * h
	last := e.Add(accounting.ChargeKeyRetention + time.Second)
	assert.InDelta(t, total, raw(last), 1e-6, "r1 is remembered for ChargeKeyRetention")
	keyed("s2", last)
	keyed("r1", e)
	total += 2 * h
	assert.InDelta(t, total, raw(last), 1e-6, "and forgotten after it")
}
