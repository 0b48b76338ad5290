package amd_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/gres/amd"
	"github.com/sluicehq/sluice/gres/amd/amdtest"
	"github.com/sluicehq/sluice/gres/gresdriver"
)

func FuzzParseProperties(f *testing.F) {
	for _, s := range []string{
		"simd_count 304\nvendor_id 4098\n", "", "\n\n", "a 1\na 2\n", "key", "key -1", "key 18446744073709551616",
		"k 18446744073709551615", "K 1", "k\t1", "k  7 \n", strings.Repeat("x 1\n", 3),
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		p, err := amd.ParseProperties(strings.NewReader(s))
		if err != nil {
			if !errors.Is(err, amd.ErrMalformed) {
				t.Fatalf("error %v does not wrap ErrMalformed", err)
			}
			return
		}
		q, err := amd.ParseProperties(strings.NewReader(p.String()))
		if err != nil {
			t.Fatalf("String() of parsed properties does not parse: %v", err)
		}
		require.Equal(t, p, q)
	})
}

func FuzzParseRASCount(f *testing.F) {
	for _, s := range []string{"ue: 0\nce: 0\n", "ce: 1\nue: 2", "ue:", "ue: x", ":::"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if _, err := amd.ParseRASCount(s); err != nil && !errors.Is(err, amd.ErrMalformed) {
			t.Fatalf("error %v does not wrap ErrMalformed", err)
		}
	})
}

// FuzzDiscoverProperties writes fuzzed KFD properties for a GPU node and
// one of its io_links: Discover must still return a valid Discovery (the
// damaged node or link skipped with a warning), never panic or fail.
func FuzzDiscoverProperties(f *testing.F) {
	m := amdtest.MI300XCPX()
	m.CPUsPerNUMA = 4
	root := f.TempDir()
	require.NoError(f, m.Write(root))
	node := filepath.Join(root, "sys/class/kfd/kfd/topology/nodes/1/properties")
	link := filepath.Join(root, "sys/class/kfd/kfd/topology/nodes/9/io_links/1/properties")
	orig, err := os.ReadFile(node)
	require.NoError(f, err)
	origLink, err := os.ReadFile(link)
	require.NoError(f, err)
	f.Add(string(orig), string(origLink))
	f.Add(strings.Replace(string(orig), "location_id 1280", "location_id 9999999", 1), "type 11\nnode_from 9\nnode_to 9\n")
	f.Add(strings.Replace(string(orig), "drm_render_minor 128", "drm_render_minor 129", 1), "type 11\nnode_from 9\nnode_to 1\nmin_bandwidth 1\nmax_bandwidth 18446744073709551615\n")
	f.Add("simd_count 1\n", "garbage")
	d, err := amd.Open(amd.Options{Root: root})
	require.NoError(f, err)
	f.Fuzz(func(t *testing.T, props, io string) {
		require.NoError(t, os.WriteFile(node, []byte(props), 0o644))
		require.NoError(t, os.WriteFile(link, []byte(io), 0o644))
		disc, err := d.Discover(context.Background())
		require.NoError(t, err)
		require.NoError(t, gresdriver.CheckDiscovery(disc))
		seen := map[string]bool{}
		for _, f := range disc.DeviceFiles() {
			require.False(t, seen[f.Path], "%s given to two devices", f.Path)
			seen[f.Path] = true
		}
	})
}
