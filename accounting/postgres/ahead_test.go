package postgres_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/accounting"
	"github.com/sluicehq/sluice/accounting/postgres"
)

// Gets of rollup keys are answered from rows read ahead and prefetched;
// they must return exactly what the store holds, with a transaction's own
// writes first.
func TestPostgresReadAheadMatchesStore(t *testing.T) {
	b, err := postgres.OpenBackend(context.Background(), testPool(t), postgres.Options{Cluster: clusterName("ahead")})
	require.NoError(t, err)
	t.Cleanup(func() { _ = b.Close() })
	key := func(a, n int) string {
		switch a {
		case 4:
			return fmt.Sprintf("u:%08x", n)
		case 5:
			return fmt.Sprintf("ck:job:c:%d:0-60", n)
		}
		return fmt.Sprintf("r%c:%08x:%04x", "hdm"[a%3], a, n)
	}
	model := map[string]string{}
	require.NoError(t, b.Update(func(w accounting.KVWriter) error {
		for a := range 6 {
			for n := 0; n < 600; n += 2 {
				k := key(a, n)
				model[k] = "v" + k
				if err := w.Set(k, model[k]); err != nil {
					return err
				}
			}
		}
		return w.Set("rh:", "odd key without an association part")
	}))
	model["rh:"] = "odd key without an association part"
	r := rand.New(rand.NewPCG(5, 6))
	check := func(rd accounting.KVReader, k string) {
		v, ok, err := rd.Get(k)
		require.NoError(t, err)
		want, wok := model[k]
		require.Equal(t, wok, ok, k)
		require.Equal(t, want, v, k)
	}
	require.NoError(t, b.View(func(rd accounting.KVReader) error {
		p, ok := rd.(accounting.Prefetcher)
		require.True(t, ok, "the postgres reader prefetches")
		for i := range 3000 {
			if i%500 == 0 {
				var ks []string
				for range 40 {
					ks = append(ks, key(r.IntN(7), r.IntN(700)))
				}
				require.NoError(t, p.Prefetch(ks))
			}
			check(rd, key(r.IntN(7), r.IntN(700)))
		}
		check(rd, "rh:")
		return nil
	}))
	require.NoError(t, b.Update(func(w accounting.KVWriter) error {
		check(w, key(1, 10)) // reads ahead past 12 and 11
		require.NoError(t, w.Delete(key(1, 12)))
		require.NoError(t, w.Set(key(1, 11), "new"))
		delete(model, key(1, 12))
		model[key(1, 11)] = "new"
		check(w, key(1, 12))
		check(w, key(1, 11))
		require.NoError(t, w.(accounting.Prefetcher).Prefetch([]string{key(1, 11), key(1, 12), key(1, 14)}))
		check(w, key(1, 12))
		check(w, key(1, 11))
		check(w, key(1, 14))
		return nil
	}))
	require.NoError(t, b.View(func(rd accounting.KVReader) error {
		for n := range 20 {
			check(rd, key(1, n))
		}
		var got []string
		require.NoError(t, rd.Ascend(key(1, 8), key(1, 16), func(k, _ string) bool { got = append(got, k); return true }))
		assert.Equal(t, []string{key(1, 8), key(1, 10), key(1, 11), key(1, 14)}, got)
		return nil
	}))
}
