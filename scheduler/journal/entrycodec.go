package journal

import (
	"fmt"

	"github.com/sluicehq/sluice/scheduler"
)

// Codec encodes scheduler entries as the journal's records carry them,
// for a log that is not a journal file (a replication log, say): a format
// byte, then the entry in the compact binary form (EncodingBinary, exact:
// the event as it was applied) or as scheduler.Entry's JSON
// (EncodingJSON, and the fallback for an event the binary form cannot
// hold). DecodeEntry reads either, whatever the Codec's encoding. A Codec
// is safe for concurrent use.
type Codec struct {
	c   *codec
	enc Encoding
}

// NewCodec returns a Codec writing entries in enc.
func NewCodec(enc Encoding) (*Codec, error) {
	if enc > EncodingJSON {
		return nil, fmt.Errorf("%w: encoding %d", ErrInvalidOptions, enc)
	}
	return &Codec{c: newCodec(), enc: enc}, nil
}

// AppendEntry appends the record payload of e to b. An entry without an
// event, or with an event that would not decode back, is an error naming
// it, and b is returned as it was.
func (c *Codec) AppendEntry(b []byte, e scheduler.Entry) ([]byte, error) {
	if e.Event == nil {
		return b, fmt.Errorf("%w: entry has no event", scheduler.ErrInvalidEvent)
	}
	return encodeWith(c.c, c.enc, b, e.At, e.Event)
}

// DecodeEntry decodes a record payload written by AppendEntry (or by a
// Journal). A payload that does not decode is an error naming what was
// wrong.
func (c *Codec) DecodeEntry(b []byte) (scheduler.Entry, error) {
	e, err := decodeWith(c.c, b)
	if err != nil {
		return scheduler.Entry{}, fmt.Errorf("journal: decode entry: %w", err)
	}
	return e, nil
}
