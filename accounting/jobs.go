package accounting

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"time"

	"github.com/sluicehq/sluice/telemetry"
)

const (
	prefixJob  = "j:"  // j:<id16> → job record
	prefixOpen = "o:"  // o:<id16> → "" for jobs without an End
	prefixStep = "st:" // st:<id16>:<step> → step record
)

func jobKey(id JobID) string { return prefixJob + hex16(uint64(id)) }

func normTime(t time.Time) time.Time {
	if t.IsZero() {
		return t
	}
	return t.Truncate(time.Second).UTC()
}

func (j *JobRecord) normalise() {
	j.Submit, j.Eligible, j.Start, j.End = normTime(j.Submit), normTime(j.Eligible), normTime(j.Start), normTime(j.End)
	j.TimeLimit = j.TimeLimit.Truncate(time.Second)
	j.ReqTRES, j.AllocTRES = j.ReqTRES.Clone(), j.AllocTRES.Clone()
	j.GPUs = cloneGPUs(j.GPUs)
	j.Flags = slices.Clone(j.Flags)
	normUsage(&j.Usage)
}

func (t *kvTx) PutJob(j JobRecord) error {
	if err := t.writable(); err != nil {
		return err
	}
	if err := j.Validate(); err != nil {
		return err
	}
	j.normalise()
	when := j.Start
	if when.IsZero() {
		when = j.Submit
	}
	if j.Assoc == 0 {
		k := AssocKey{Cluster: j.Cluster, Account: j.Account, User: j.User, Partition: j.Partition}
		a, err := t.LookupAssoc(k)
		if errors.Is(err, ErrNotFound) && k.Partition != "" {
			k.Partition = ""
			a, err = t.LookupAssoc(k)
		}
		if err != nil {
			return fmt.Errorf("job %d: %w", j.ID, err)
		}
		j.Assoc = a.ID
	}
	a, err := t.assocAtOrLast(j.Assoc, when)
	if errors.Is(err, ErrNotFound) {
		return fmt.Errorf("job %d: %w", j.ID, err)
	}
	if err != nil {
		return err
	}
	if a.Cluster != j.Cluster {
		return fmt.Errorf("%w: job %d: cluster %q but association %d is in cluster %q", ErrInvalid, j.ID, j.Cluster, j.Assoc, a.Cluster)
	}
	if j.User == "" {
		j.User = a.User
	} else if a.User != "" && a.User != j.User {
		return fmt.Errorf("%w: job %d: user %q but association %d is user %q's", ErrInvalid, j.ID, j.User, j.Assoc, a.User)
	}
	if j.Account == "" {
		j.Account = a.Account
	}
	chain, err := t.chainAt(j.Assoc, when)
	if err != nil {
		return err
	}
	key := jobKey(j.ID)
	if v, ok, err := t.get(key); err != nil {
		return err
	} else if ok {
		old, oldChain, err := t.decodeJob(key, v)
		if err != nil {
			return err
		}
		if err := t.jobContribution(&old, oldChain, -1); err != nil {
			return err
		}
	}
	if err := t.jobContribution(&j, chain, +1); err != nil {
		return err
	}
	v, err := t.encodeJob(&j, chain)
	if err != nil {
		return err
	}
	if err := t.set(key, v); err != nil {
		return err
	}
	if j.End.IsZero() {
		return t.set(prefixOpen+hex16(uint64(j.ID)), "")
	}
	return t.del(prefixOpen + hex16(uint64(j.ID)))
}

func (t *kvTx) Job(id JobID) (JobRecord, error) {
	key := jobKey(id)
	v, ok, err := t.get(key)
	if err != nil {
		return JobRecord{}, err
	}
	if !ok {
		return JobRecord{}, fmt.Errorf("%w: job %d", ErrNotFound, id)
	}
	j, _, err := t.decodeJob(key, v)
	return j, err
}

func (t *kvTx) Jobs(q JobQuery, fn func(JobRecord) bool) error {
	// Names never interned match no record; interned ones are compared as
	// IDs before a record is decoded.
	var want [3]uint64 // cluster, user, account; 0 = any
	for i, n := range []string{q.Cluster, q.User, q.Account} {
		if n == "" {
			continue
		}
		id, ok := t.lookupID(n)
		if !ok {
			return nil
		}
		want[i] = uint64(id)
	}
	var bad error
	visit := func(k, v string) bool {
		if !peekJobMatch(v, want, q) {
			return true
		}
		j, _, err := t.decodeJob(k, v)
		if err != nil {
			bad = err
			return false
		}
		if !q.match(&j) {
			return true
		}
		return fn(j)
	}
	if q.OpenOnly {
		ids, err := t.keysIn(prefixOpen, prefixEnd(prefixOpen))
		if err != nil {
			return err
		}
		for _, k := range ids {
			key := prefixJob + k[len(prefixOpen):]
			v, ok, err := t.get(key)
			if err != nil {
				return err
			}
			if !ok {
				return corruptKey(k, "open-job marker without a job record")
			}
			if !visit(key, v) {
				break
			}
		}
		return bad
	}
	if err := t.r.Ascend(prefixJob, prefixEnd(prefixJob), visit); err != nil {
		return err
	}
	return bad
}

// peekJobMatch decodes only the names and times of an encoded job and
// reports whether it can match (false positives are fine: the full
// record is checked again; undecodable records return true so that the
// full decode reports them).
func peekJobMatch(v string, want [3]uint64, q JobQuery) bool {
	d := dec{b: []byte(v)}
	if !knownRecordVersion(d.byte1()) {
		return true
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
	if n := d.u(); n <= uint64(len(d.b)) {
		d.b = d.b[n:]
	} else {
		return true
	}
	var ids [3]uint64
	for i := range ids {
		ids[i] = d.u()
	}
	if d.err != "" {
		return true
	}
	for i, w := range want {
		if w != 0 && ids[i] != w {
			return false
		}
	}
	for range 4 { // partition, qos, reservation, reason
		d.u()
	}
	sub := d.i()
	end := int64(0)
	prev := sub
	for _, bit := range []byte{jfEligible, jfStart, jfEnd} {
		if fl&bit != 0 {
			prev += int64(d.u())
			if bit == jfEnd {
				end = prev
			}
		}
	}
	if d.err != "" {
		return true
	}
	if !q.To.IsZero() && sub >= q.To.Unix() {
		return false
	}
	if !q.From.IsZero() && end != 0 && end <= q.From.Unix() {
		return false
	}
	return !(q.OpenOnly && end != 0)
}

// Job record encoding (see codec.go). Flags of the presence byte:
const (
	jfEligible = 1 << iota
	jfStart
	jfEnd
	jfArray
	jfHet // HetJobID, HetJobOffset follow the array fields
)

func (t *kvTx) encodeJob(j *JobRecord, chain []AssocID) (string, error) {
	e := &t.e
	e.b = e.b[:0]
	tail := jobTail(j)
	e.byte1(recordVersion(tail != 0))
	var fl byte
	if !j.Eligible.IsZero() {
		fl |= jfEligible
	}
	if !j.Start.IsZero() {
		fl |= jfStart
	}
	if !j.End.IsZero() {
		fl |= jfEnd
	}
	if j.ArrayJobID != 0 {
		fl |= jfArray
	}
	if j.HetJobID != 0 {
		fl |= jfHet
	}
	e.byte1(fl)
	e.u(uint64(len(chain)))
	for _, id := range chain {
		e.u(uint64(id))
	}
	if j.ArrayJobID != 0 {
		e.u(uint64(j.ArrayJobID))
		e.u(uint64(j.ArrayTaskID))
	}
	if j.HetJobID != 0 {
		e.u(uint64(j.HetJobID))
		e.u(uint64(j.HetJobOffset))
	}
	e.str(j.Name)
	for _, s := range []string{j.Cluster, j.User, j.Account, j.Partition, j.QOS, j.Reservation, j.Reason} {
		id, err := t.intern(s)
		if err != nil {
			return "", err
		}
		e.u(uint64(id))
	}
	sub := j.Submit.Unix()
	e.i(sub)
	prev := sub
	for _, tm := range []time.Time{j.Eligible, j.Start, j.End} {
		if !tm.IsZero() {
			e.u(uint64(tm.Unix() - prev))
			prev = tm.Unix()
		}
	}
	e.u(uint64(j.TimeLimit / time.Second))
	e.byte1(byte(j.State))
	e.u(uint64(j.ExitCode))
	e.u(uint64(j.ExitSignal))
	if err := t.encodeTRES(j.ReqTRES); err != nil {
		return "", err
	}
	if err := t.encodeTRES(j.AllocTRES); err != nil {
		return "", err
	}
	e.str(j.NodeList)
	if err := t.encodeGPUs(j.GPUs); err != nil {
		return "", err
	}
	e.i(j.Priority)
	e.u(uint64(len(j.Flags)))
	for _, f := range j.Flags {
		id, err := t.intern(f)
		if err != nil {
			return "", err
		}
		e.u(uint64(id))
	}
	e.u(uint64(j.Restarts))
	if tail != 0 {
		e.jobTail(j, tail)
	}
	return e.bytes(), nil
}

func (t *kvTx) encodeGPUs(gs []NodeGPUs) error {
	e := &t.e
	e.u(uint64(len(gs)))
	for _, g := range gs {
		id, err := t.intern(g.Node)
		if err != nil {
			return err
		}
		var mask uint64
		for _, x := range g.Indices {
			mask |= 1 << uint(x)
		}
		e.u(uint64(id))
		e.u(mask)
	}
	return nil
}

func (t *kvTx) decodeGPUs(key string, d *dec) ([]NodeGPUs, error) {
	n := d.count(2)
	if n == 0 {
		return nil, nil
	}
	gs := make([]NodeGPUs, n)
	for i := range gs {
		node, ok := t.str(d.u())
		if !ok || node == "" {
			return nil, corruptKey(key, "unknown node name ID")
		}
		mask := d.u()
		gs[i].Node = node
		for x := 0; mask != 0; x++ {
			if mask&1 != 0 {
				gs[i].Indices = append(gs[i].Indices, x)
			}
			mask >>= 1
		}
	}
	return gs, nil
}

func (t *kvTx) decodeJob(key, v string) (JobRecord, []AssocID, error) {
	var j JobRecord
	id, ok := parseHex(key[len(prefixJob):])
	if !ok {
		return j, nil, corruptKey(key, "bad job key")
	}
	j.ID = JobID(id)
	d := dec{b: []byte(v)}
	ver := d.byte1()
	if !knownRecordVersion(ver) {
		return j, nil, corruptKey(key, "unknown job record version")
	}
	fl := d.byte1()
	nc := d.count(1)
	chain := make([]AssocID, nc)
	for i := range chain {
		c := d.u()
		if c == 0 || c > math.MaxUint32 {
			return j, nil, corruptKey(key, "bad association ID %d", c)
		}
		chain[i] = AssocID(c)
	}
	if nc > 0 {
		j.Assoc = chain[0]
	}
	if fl&jfArray != 0 {
		j.ArrayJobID = JobID(d.u())
		j.ArrayTaskID = uint32(d.u())
	}
	if fl&jfHet != 0 {
		j.HetJobID = JobID(d.u())
		off := d.u()
		if j.HetJobID == 0 || off > math.MaxUint32 {
			return j, nil, corruptKey(key, "bad heterogeneous job %d+%d", j.HetJobID, off)
		}
		j.HetJobOffset = uint32(off)
	}
	j.Name = d.str()
	for _, p := range []*string{&j.Cluster, &j.User, &j.Account, &j.Partition, &j.QOS, &j.Reservation, &j.Reason} {
		s, ok := t.str(d.u())
		if !ok {
			return j, nil, corruptKey(key, "unknown string ID")
		}
		*p = s
	}
	sub := d.i()
	if sub <= 0 || sub > maxTime.Unix() {
		return j, nil, corruptKey(key, "submit time %d out of range", sub)
	}
	j.Submit = time.Unix(sub, 0).UTC()
	prev := sub
	for _, x := range []struct {
		bit byte
		p   *time.Time
	}{{jfEligible, &j.Eligible}, {jfStart, &j.Start}, {jfEnd, &j.End}} {
		if fl&x.bit != 0 {
			dt := d.u()
			if dt > uint64(maxTime.Unix()) {
				return j, nil, corruptKey(key, "time delta %d out of range", dt)
			}
			prev += int64(dt)
			*x.p = time.Unix(prev, 0).UTC()
		}
	}
	tl := d.u()
	if tl > uint64(math.MaxInt64/int64(time.Second)) {
		return j, nil, corruptKey(key, "time limit out of range")
	}
	j.TimeLimit = time.Duration(tl) * time.Second
	j.State = JobState(d.byte1())
	j.ExitCode = int(d.u() & 0xffff)
	j.ExitSignal = int(d.u() & 0xffff)
	var err error
	if j.ReqTRES, err = t.decodeTRES(key, &d); err != nil {
		return j, nil, err
	}
	if j.AllocTRES, err = t.decodeTRES(key, &d); err != nil {
		return j, nil, err
	}
	j.NodeList = d.str()
	if j.GPUs, err = t.decodeGPUs(key, &d); err != nil {
		return j, nil, err
	}
	j.Priority = d.i()
	nf := d.count(1)
	for range nf {
		s, ok := t.str(d.u())
		if !ok {
			return j, nil, corruptKey(key, "unknown flag ID")
		}
		j.Flags = append(j.Flags, s)
	}
	j.Restarts = uint32(d.u())
	if ver == goodputVersion {
		if err := decodeJobTail(key, &d, &j); err != nil {
			return j, nil, err
		}
	}
	if !d.done() {
		return j, nil, corruptKey(key, "job record: %s", d.errOr("trailing bytes"))
	}
	if j.State >= numJobStates {
		return j, nil, corruptKey(key, "job state %d", j.State)
	}
	if ver == goodputVersion {
		if err := j.validGoodput(); err != nil {
			return j, nil, corruptKey(key, "job record: %v", err)
		}
	}
	return j, chain, nil
}

// Steps.

func stepKey(id JobID, step string) string { return prefixStep + hex16(uint64(id)) + ":" + step }

func (t *kvTx) PutStep(s StepRecord) error {
	if err := t.writable(); err != nil {
		return err
	}
	if err := s.Validate(); err != nil {
		return err
	}
	if _, ok, err := t.get(jobKey(s.Job)); err != nil {
		return err
	} else if !ok {
		return fmt.Errorf("step %d.%s: %w: job %d", s.Job, s.Step, ErrNotFound, s.Job)
	}
	normUsage(&s.Usage)
	withUsage := s.Usage != telemetry.Usage{}
	e := &t.e
	e.b = e.b[:0]
	e.byte1(recordVersion(withUsage))
	e.str(s.Name)
	e.i(s.Start.Unix())
	e.i(unixOrZero(s.End))
	e.byte1(byte(s.State))
	e.u(uint64(s.ExitCode))
	e.str(s.NodeList)
	if err := t.encodeTRES(s.AllocTRES); err != nil {
		return err
	}
	e.u(uint64(s.CPUTime / time.Second))
	e.u(uint64(s.MaxRSS))
	if withUsage {
		e.usage(&s.Usage)
	}
	return t.set(stepKey(s.Job, s.Step), e.bytes())
}

func (t *kvTx) decodeStep(key, v string) (StepRecord, error) {
	rest := key[len(prefixStep):]
	if len(rest) < 18 || rest[16] != ':' {
		return StepRecord{}, corruptKey(key, "bad step key")
	}
	id, ok := parseHex(rest[:16])
	if !ok {
		return StepRecord{}, corruptKey(key, "bad step key")
	}
	s := StepRecord{Job: JobID(id), Step: rest[17:]}
	d := dec{b: []byte(v)}
	ver := d.byte1()
	if !knownRecordVersion(ver) {
		return s, corruptKey(key, "unknown step record version")
	}
	s.Name = d.str()
	s.Start = timeOrZero(d.i())
	s.End = timeOrZero(d.i())
	s.State = JobState(d.byte1())
	s.ExitCode = int(d.u() & 0xff)
	s.NodeList = d.str()
	var err error
	if s.AllocTRES, err = t.decodeTRES(key, &d); err != nil {
		return s, err
	}
	ct := d.u()
	if ct > uint64(math.MaxInt64/int64(time.Second)) {
		return s, corruptKey(key, "cpu time out of range")
	}
	s.CPUTime = time.Duration(ct) * time.Second
	s.MaxRSS = int64(d.u() & (1<<62 - 1))
	if ver == goodputVersion {
		if err := d.usage(key, &s.Usage); err != nil {
			return s, err
		}
	}
	if !d.done() || s.State >= numJobStates {
		return s, corruptKey(key, "step record: %s", d.errOr("bad state"))
	}
	return s, nil
}

func (t *kvTx) Steps(id JobID) ([]StepRecord, error) {
	p := prefixStep + hex16(uint64(id)) + ":"
	var out []StepRecord
	err := ascendRecords(t.r, p, prefixEnd(p), t.decodeStep, func(s StepRecord) bool {
		out = append(out, s)
		return true
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// ArchivedJob is one line of a job archive (see Tx.ArchiveJobs).
type ArchivedJob struct {
	Job   JobRecord    `json:"job"`
	Steps []StepRecord `json:"steps,omitempty"`
}

func (t *kvTx) ArchiveJobs(before time.Time, limit int, w io.Writer) (int, error) {
	if err := t.writable(); err != nil {
		return 0, err
	}
	if err := validTime("before", before, false); err != nil {
		return 0, err
	}
	if limit < 0 {
		return 0, fmt.Errorf("%w: archive limit %d is negative", ErrInvalid, limit)
	}
	var jobs []JobRecord
	err := t.Jobs(JobQuery{}, func(j JobRecord) bool {
		if !j.End.IsZero() && j.End.Before(before) {
			jobs = append(jobs, j)
		}
		return limit == 0 || len(jobs) < limit
	})
	if err != nil {
		return 0, err
	}
	bw := bufio.NewWriter(w)
	enc := json.NewEncoder(bw)
	var dels []string // each job's key, then its steps'
	for _, j := range jobs {
		steps, err := t.Steps(j.ID)
		if err != nil {
			return 0, err
		}
		dels = append(dels, jobKey(j.ID))
		for _, s := range steps {
			dels = append(dels, stepKey(s.Job, s.Step))
		}
		if err := enc.Encode(ArchivedJob{Job: j, Steps: steps}); err != nil {
			return 0, fmt.Errorf("archive job %d: %w", j.ID, err)
		}
	}
	if err := bw.Flush(); err != nil {
		return 0, fmt.Errorf("archive: %w", err)
	}
	for _, k := range dels {
		if err := t.del(k); err != nil {
			return 0, err
		}
	}
	return len(jobs), nil
}

// ReadArchive reads a job archive written by Tx.ArchiveJobs, calling fn for
// each job until fn returns false. Lines that fail to parse or validate
// are reported as ErrCorrupt naming the line.
func ReadArchive(r io.Reader, fn func(ArchivedJob) bool) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 64*1024*1024)
	for line := 1; sc.Scan(); line++ {
		if len(sc.Bytes()) == 0 {
			continue
		}
		var a ArchivedJob
		err := json.Unmarshal(sc.Bytes(), &a)
		if err == nil {
			err = a.Job.Validate()
		}
		if err != nil {
			return &CorruptError{Offset: -1, Reason: fmt.Sprintf("archive line %d: %v", line, err), Err: ErrCorrupt}
		}
		if !fn(a) {
			return nil
		}
	}
	return sc.Err()
}
