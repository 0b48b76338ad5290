package accounting

import (
	"strings"
	"time"
)

// RecordTime tells a backend that partitions records by time (the
// PostgreSQL backend keeps job and step records in monthly partitions)
// which time the record stored under key belongs to: a job record's
// submit time, a step record's start time. ok is false for every other
// key, which such a backend stores unpartitioned. The time depends only
// on key and val, so a backend can route a Set without reading anything
// else; replacing a record may change it (a resubmitted job), so a
// partitioning backend must drop the key from its old partition.
//
// A job or step key whose value cannot be read fails with a
// *CorruptError (ErrCorrupt) naming the key.
func RecordTime(key, val string) (t time.Time, ok bool, err error) {
	var u int64
	d := dec{b: []byte(val)}
	switch {
	case strings.HasPrefix(key, prefixJob):
		if !knownRecordVersion(d.byte1()) {
			return time.Time{}, true, corruptKey(key, "unknown job record version")
		}
		fl := d.byte1()
		for n := d.count(1); n > 0; n-- {
			d.u()
		}
		if fl&jfArray != 0 {
			d.u()
			d.u()
		}
		if fl&jfHet != 0 {
			d.u()
			d.u()
		}
		d.str()
		for range 7 { // cluster, user, account, partition, QOS, reservation, reason
			d.u()
		}
		u = d.i()
	case strings.HasPrefix(key, prefixStep):
		if !knownRecordVersion(d.byte1()) {
			return time.Time{}, true, corruptKey(key, "unknown step record version")
		}
		d.str()
		u = d.i()
	default:
		return time.Time{}, false, nil
	}
	if d.err != "" {
		return time.Time{}, true, corruptKey(key, "record time: %s", d.err)
	}
	if u <= 0 || u > maxTime.Unix() {
		return time.Time{}, true, corruptKey(key, "record time %d out of range", u)
	}
	return time.Unix(u, 0).UTC(), true, nil
}
