package postgres

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/sluicehq/sluice/accounting"
)

// ImportOptions tune Import.
type ImportOptions struct {
	// Source names what is imported (a buntdb file's path, say). It is
	// stored with the checkpoint; resuming with another Source is refused.
	Source string
	// Batch is the number of keys copied per transaction (0 = 5000).
	Batch int
	// Progress, when set, is called after each committed batch with the
	// number of keys copied so far.
	Progress func(keys int64)
}

// Summary describes the contents of a key/value store, for checking that
// a copy is complete and exact.
type Summary struct {
	Keys       int64            // number of keys
	Bytes      int64            // bytes of keys and values
	Prefixes   map[string]int64 // keys per prefix (up to the first ':')
	JobRecords int64            // keys of job records ("j:")
	Digest     [sha256.Size]byte
}

// Summarize reads every key of b in one View: counts per prefix, sizes,
// and a SHA-256 over every key and value in key order.
func Summarize(b accounting.Backend) (Summary, error) {
	s := Summary{Prefixes: map[string]int64{}}
	h := sha256.New()
	var n [binary.MaxVarintLen64]byte
	err := b.View(func(r accounting.KVReader) error {
		return r.Ascend("", "", func(k, v string) bool {
			s.Keys++
			s.Bytes += int64(len(k) + len(v))
			p, _, _ := strings.Cut(k, ":")
			s.Prefixes[p]++
			if strings.HasPrefix(k, "j:") {
				s.JobRecords++
			}
			h.Write(n[:binary.PutUvarint(n[:], uint64(len(k)))])
			h.Write([]byte(k))
			h.Write(n[:binary.PutUvarint(n[:], uint64(len(v)))])
			h.Write([]byte(v))
			return true
		})
	})
	if err != nil {
		return Summary{}, err
	}
	h.Sum(s.Digest[:0])
	return s, nil
}

// Equal reports whether two summaries describe the same contents.
func (s Summary) Equal(o Summary) bool {
	return s.Keys == o.Keys && s.Bytes == o.Bytes && s.JobRecords == o.JobRecords &&
		s.Digest == o.Digest && maps.Equal(s.Prefixes, o.Prefixes)
}

const metaPrefix = "m:" // the ledger's schema and format records: copied last

// Import copies every key of src (a buntdb ledger's backend, say) into
// dst's cluster, in key order, Batch keys per transaction, each batch
// committed with a checkpoint (the last key copied) in sluice_imports.
// The ledger's meta records ("m:") are copied last, with the checkpoint
// marked done, so an unfinished copy never opens as a ledger
// (accounting.ErrSchemaVersion: data but no schema record). dst's cluster
// must be empty, or hold an unfinished import of the same Source, which
// is resumed after its checkpoint. src must not change meanwhile.
//
// Once everything is copied, Import verifies it: the Summary of src and
// dst (counts per prefix, sizes, digest) must be equal, or it fails
// naming the difference. It returns dst's Summary. Cancelling ctx stops
// it between batches; run it again to resume.
func Import(ctx context.Context, src accounting.Backend, dst *Backend, opts ImportOptions) (Summary, error) {
	if opts.Batch <= 0 {
		opts.Batch = 5000
	}
	var (
		source  string
		lastKey []byte
		copied  int64
		done    bool
	)
	err := dst.pool.QueryRow(ctx, `SELECT source, last_key, keys, done FROM sluice_imports WHERE cluster = $1`, dst.cluster).
		Scan(&source, &lastKey, &copied, &done)
	resume := err == nil
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		empty := true
		if err := dst.View(func(r accounting.KVReader) error {
			return r.Ascend("", "", func(string, string) bool { empty = false; return false })
		}); err != nil {
			return Summary{}, fmt.Errorf("import: %w", err)
		}
		if !empty {
			return Summary{}, fmt.Errorf("%w: import: cluster %q already holds data and no import into it is unfinished", accounting.ErrExists, dst.opts.Cluster)
		}
	case err != nil:
		return Summary{}, fmt.Errorf("import: read checkpoint: %w", err)
	case source != opts.Source:
		return Summary{}, fmt.Errorf("%w: import: cluster %q holds an import from %q, not %q", accounting.ErrExists, dst.opts.Cluster, source, opts.Source)
	}
	from := ""
	if resume {
		from = string(lastKey) + "\x00"
	}
	for !done {
		if err := ctx.Err(); err != nil {
			return Summary{}, fmt.Errorf("import into cluster %q interrupted after %d keys: %w", dst.opts.Cluster, copied, err)
		}
		var ks, vs []string
		err := src.View(func(r accounting.KVReader) error {
			return r.Ascend(from, "", func(k, v string) bool {
				if !strings.HasPrefix(k, metaPrefix) {
					ks, vs = append(ks, k), append(vs, v)
				}
				return len(ks) < opts.Batch
			})
		})
		if err != nil {
			return Summary{}, fmt.Errorf("import: read source: %w", err)
		}
		last := len(ks) < opts.Batch
		if last { // the meta records, with the done mark
			err = src.View(func(r accounting.KVReader) error {
				return r.Ascend(metaPrefix, "m;", func(k, v string) bool {
					ks, vs = append(ks, k), append(vs, v)
					return true
				})
			})
			if err != nil {
				return Summary{}, fmt.Errorf("import: read source: %w", err)
			}
		}
		mark := lastKey
		for _, k := range ks {
			if !strings.HasPrefix(k, metaPrefix) {
				mark = []byte(k)
			}
		}
		n := copied + int64(len(ks))
		err = dst.update(func(t *kvTx) error {
			t.fresh = true
			for i, k := range ks {
				if err := t.Set(k, vs[i]); err != nil {
					return fmt.Errorf("import: key %q: %w", k, err)
				}
			}
			t.extra = append(t.extra, queued{`INSERT INTO sluice_imports (cluster, source, last_key, keys, done) VALUES ($1, $2, $3, $4, $5)
ON CONFLICT (cluster) DO UPDATE SET last_key = EXCLUDED.last_key, keys = EXCLUDED.keys, done = EXCLUDED.done, updated_at = now()`,
				[]any{dst.cluster, opts.Source, nonNil(mark), n, last}})
			return nil
		})
		if err != nil {
			return Summary{}, err
		}
		copied, lastKey, done = n, mark, last
		from = string(mark) + "\x00"
		if opts.Progress != nil {
			opts.Progress(copied)
		}
	}
	want, err := Summarize(src)
	if err != nil {
		return Summary{}, fmt.Errorf("import: summarize source: %w", err)
	}
	got, err := Summarize(dst)
	if err != nil {
		return Summary{}, fmt.Errorf("import: summarize cluster %q: %w", dst.opts.Cluster, err)
	}
	if !got.Equal(want) {
		return got, fmt.Errorf("import: verification failed: source has %d keys (%d bytes, %d job records, per prefix %v), cluster %q has %d (%d bytes, %d job records, per prefix %v)%s",
			want.Keys, want.Bytes, want.JobRecords, want.Prefixes, dst.opts.Cluster, got.Keys, got.Bytes, got.JobRecords, got.Prefixes,
			map[bool]string{true: "", false: "; contents differ (digest)"}[got.Digest == want.Digest])
	}
	return got, nil
}

func nonNil(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return b
}
