package accounting

import "time"

// Prefetcher is an optional KVReader method for backends where each Get
// costs a round trip (a server database): before reading a known set of
// keys one by one (the rollup records a commit updates or a report
// reads), the ledger
// passes them to Prefetch, which may read them all at once. Later Gets
// must return exactly what they would have without it.
type Prefetcher interface {
	Prefetch(keys []string) error
}

// prefetch passes keys to r's Prefetch, when it has one.
func prefetch(r KVReader, keys []string) error {
	if p, ok := r.(Prefetcher); ok && len(keys) > 0 {
		return p.Prefetch(keys)
	}
	return nil
}

// totalsStep returns the largest bucket Totals reads at cur, before end:
// a whole month, a whole day, or an hour, and where the next one starts.
func (c cal) totalsStep(cur, end int64) (byte, int64) {
	if cur == c.monthStart(cur) && c.nextMonth(cur) <= end {
		return 'm', c.nextMonth(cur)
	}
	if cur == c.dayStart(cur) && c.nextDay(cur) <= end {
		return 'd', c.nextDay(cur)
	}
	return 'h', c.nextHour(cur)
}

// totalsKeys returns the rollup records Totals reads for association id
// over hours [cur, end), for a Prefetcher.
func (t *kvTx) totalsKeys(id AssocID, cur, end int64) []string {
	c := cal{t.l.loc}
	var keys []string
	last := ""
	for cur < end {
		lc, next := c.totalsStep(cur, end)
		ps, _ := c.slotOf(lc, cur)
		k := rollupPrefix(lc, id) + hexT(ps)
		if lc == 'd' { // a day's hour pack, or its day record
			k = rollupPrefix('h', id) + hexT(ps)
		}
		if k != last {
			keys = append(keys, k)
			if lc == 'd' {
				keys = append(keys, rollupPrefix('d', id)+hexT(ps))
			}
			last = k
		}
		cur = next
	}
	return keys
}

// prefetchTotals hands a Prefetcher backend every rollup record the
// Totals of the tree under n over hours [lo, hi) read, so that a server
// database answers them in one round trip instead of one per association,
// and returns the Totals to call for them.
func prefetchTotals(tx Tx, n *treeNode, lo, hi int64) (func(AssocID, time.Time, time.Time) (Totals, error), error) {
	kt, ok := tx.(*kvTx)
	if !ok {
		return tx.Totals, nil
	}
	p, ok := kt.r.(Prefetcher)
	if !ok {
		return tx.Totals, nil
	}
	totals := func(id AssocID, from, to time.Time) (Totals, error) { return kt.totals(id, from, to, false) }
	var keys []string
	var walk func(n *treeNode)
	walk = func(n *treeNode) {
		keys = append(keys, kt.totalsKeys(n.a.ID, lo, hi)...)
		for _, ch := range n.children {
			walk(ch)
		}
	}
	walk(n)
	return totals, p.Prefetch(keys)
}
