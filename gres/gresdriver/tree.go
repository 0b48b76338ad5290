package gresdriver

import (
	"fmt"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// Tree is a recorded file tree, such as the part of /sys a driver reads,
// written as plain data so that a fixture machine is a Go value: Files maps
// a slash-separated path relative to the tree's root to the file's
// content, Links maps such a path to a symbolic link's target (relative,
// as the kernel writes them, e.g. "../../../0000:29:00.0"). Parent
// directories are implied. Drivers with a configurable root (gres/intel,
// gres/amd) are run against a Tree written into a temporary directory.
type Tree struct {
	Files map[string]string
	Links map[string]string
}

// File records a file, allocating the map when needed.
func (t *Tree) File(name, content string) {
	if t.Files == nil {
		t.Files = map[string]string{}
	}
	t.Files[name] = content
}

// Link records a symbolic link, allocating the map when needed.
func (t *Tree) Link(name, target string) {
	if t.Links == nil {
		t.Links = map[string]string{}
	}
	t.Links[name] = target
}

// Write creates the tree under root (which must exist): directories,
// then files (mode 0644), then links. A path must be relative, clean and
// stay inside root, and no path may be both a file and a link; the error
// names the first offending path. Entries are written in sorted order, so
// a failure is reproducible.
func (t Tree) Write(root string) error {
	check := func(name string) error {
		if name == "" || path.IsAbs(name) || path.Clean(name) != name || name == ".." || strings.HasPrefix(name, "../") {
			return fmt.Errorf("gresdriver: tree path %q: want a clean relative path inside the root", name)
		}
		return nil
	}
	for _, name := range slices.Sorted(maps.Keys(t.Files)) {
		if err := check(name); err != nil {
			return err
		}
		if _, dup := t.Links[name]; dup {
			return fmt.Errorf("gresdriver: tree path %q is both a file and a link", name)
		}
		p := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return fmt.Errorf("gresdriver: tree file %q: %w", name, err)
		}
		if err := os.WriteFile(p, []byte(t.Files[name]), 0o644); err != nil {
			return fmt.Errorf("gresdriver: tree file %q: %w", name, err)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(t.Links)) {
		if err := check(name); err != nil {
			return err
		}
		p := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return fmt.Errorf("gresdriver: tree link %q: %w", name, err)
		}
		if err := os.Symlink(filepath.FromSlash(t.Links[name]), p); err != nil {
			return fmt.Errorf("gresdriver: tree link %q: %w", name, err)
		}
	}
	return nil
}

// WriteTree writes tree into a new temporary directory of t (removed when
// the test ends) and returns the directory; it fails the test on error.
func WriteTree(t testing.TB, tree Tree) string {
	t.Helper()
	root := t.TempDir()
	if err := tree.Write(root); err != nil {
		t.Fatal(err)
	}
	return root
}
