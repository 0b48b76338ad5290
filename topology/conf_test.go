package topology

import (
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const treeConf = `# Three-level example in the style of Slurm's topology guide.
SwitchName=s0 Nodes=tux[0-3] LinkSpeed=900
SwitchName=s1 Nodes=tux[4-7]
switchname=s2 nodes=tux[8-11]   # keys are case-insensitive
SwitchName=s3 Nodes="tux[12-15]"
SwitchName=s4 Switches=s[0-1]
SwitchName=s5 Switches=s[2-3]

SwitchName=s6 \
    Switches=s[4-5]
`

func TestParseTopologyConfTree(t *testing.T) {
	cfg, err := ParseTopologyConf(strings.NewReader(treeConf))
	require.NoError(t, err)
	require.Len(t, cfg.Switches, 7)
	assert.Equal(t, SwitchConfig{Name: "s0", Nodes: []string{"tux[0-3]"}, Line: 2}, cfg.Switches[0])
	assert.Equal(t, SwitchConfig{Name: "s3", Nodes: []string{"tux[12-15]"}, Line: 5}, cfg.Switches[3])
	assert.Equal(t, SwitchConfig{Name: "s6", Switches: []string{"s[4-5]"}, Line: 9}, cfg.Switches[6])
	g := mustGraph(t, cfg)
	assert.Equal(t, 16, g.NumNodes())
	s6, _ := g.SwitchIndex("s6")
	assert.Equal(t, 2, swAt(g, s6).Level)
	assert.Equal(t, []int{s6}, g.Roots())
}

func TestParseTopologyConfBlock(t *testing.T) {
	cfg, err := ParseTopologyConf(strings.NewReader(`
BlockName=b1 Nodes=node[1-4]
BlockName=b2 Nodes=node[5-8]
BlockName=b3 Nodes=node[9-12]
BlockName=b4 Nodes=node[13-16]
BlockSizes=4,8,16
`))
	require.NoError(t, err)
	assert.Equal(t, []int{4, 8, 16}, cfg.BlockSizes)
	require.Len(t, cfg.Blocks, 4)
	assert.Equal(t, BlockConfig{Name: "b3", Nodes: []string{"node[9-12]"}, Line: 4}, cfg.Blocks[2])
	g := mustGraph(t, cfg)
	assert.Equal(t, 4, g.NumBlocks())
}

func TestParseTopologyConfEmpty(t *testing.T) {
	cfg, err := ParseTopologyConf(strings.NewReader("# nothing\n\n   \n"))
	require.NoError(t, err)
	assert.Equal(t, Config{}, cfg)
}

func TestParseTopologyConfErrors(t *testing.T) {
	tests := []struct {
		name    string
		text    string
		line    int
		want    error
		mention string
	}{
		{"unknown key", "SwitchName=s0 Nodes=a Color=red\n", 1, ErrSyntax, `unknown key "Color"`},
		{"unknown line", "\nFrobnicate=yes\n", 2, ErrSyntax, `unknown key "Frobnicate"`},
		{"not key=value", "SwitchName=s0 Nodes\n", 1, ErrSyntax, `"Nodes" is not key=value`},
		{"repeated key", "SwitchName=s0 Nodes=a nodes=b\n", 1, ErrSyntax, "given twice"},
		{"bad hostlist", "SwitchName=s0 Nodes=a\nSwitchName=s1 Nodes=tux[0-\n", 2, ErrSyntax, "Nodes: hostlist"},
		{"empty value", "SwitchName=s0 Nodes=\n", 1, ErrSyntax, "empty value"},
		{"bracketed switch name", "SwitchName=s[0-1] Nodes=a\n", 1, ErrSyntax, "one plain switch name"},
		{"bad link speed", "SwitchName=s0 Nodes=a LinkSpeed=fast\n", 1, ErrSyntax, "LinkSpeed"},
		{"unterminated quote", `SwitchName=s0 Nodes="a` + "\n", 1, ErrSyntax, "unterminated quote"},
		{"block without nodes", "BlockName=b0\n", 1, ErrSyntax, "missing Nodes"},
		{"bad block size", "BlockName=b0 Nodes=n[0-3]\nBlockSizes=4,x\n", 2, ErrSyntax, `"x"`},
		{"block sizes twice", "BlockName=b0 Nodes=n[0-3]\nBlockSizes=4\nBlockSizes=4\n", 3, ErrSyntax, "already given on line 2"},
		{"unknown child switch", "SwitchName=s0 Nodes=a\nSwitchName=s1 Switches=s[0,2]\n", 2, ErrUnknownSwitch, `"s1"`},
		{"duplicate switch", "SwitchName=s0 Nodes=a\n\nSwitchName=s0 Nodes=b\n", 3, ErrDuplicateName, "already defined (line 1)"},
		{"node under two leaves", "SwitchName=s0 Nodes=a[0-3]\nSwitchName=s1 Nodes=a[3-5]\n", 2, ErrOverlap, `"a3"`},
		{"cycle", "SwitchName=l Nodes=n0\nSwitchName=a Switches=b,l\nSwitchName=b Switches=a\n", 2, ErrCycle, "a → b → a"},
		{"two parents", "SwitchName=l Nodes=n0\nSwitchName=a Switches=l\nSwitchName=b Switches=l\n", 3, ErrMultipleParents, `under both "a" (line 2) and "b"`},
		{"both nodes and switches", "SwitchName=l Nodes=n0\nSwitchName=a Switches=l Nodes=n1\n", 2, ErrInvalidConfig, "both"},
		{"block size too large for blocks", "BlockName=b0 Nodes=n[0-3]\nBlockSizes=8\n", 1, ErrInvalidConfig, "fewer than the base block size"},
		{"bad block sizes", "BlockName=b0 Nodes=n[0-3]\n\nBlockSizes=4,6\n", 3, ErrInvalidConfig, "power-of-two"},
		{"tree and block", "SwitchName=s0 Nodes=a\nBlockName=b0 Nodes=c\n", 0, ErrInvalidConfig, "both switches and blocks"},
		{"continued error line", "SwitchName=s0 \\\n Nodes=a \\\n Bogus=1\n", 1, ErrSyntax, "Bogus"},
		{"long line", "SwitchName=s0 Nodes=" + strings.Repeat("a", maxConfLine+10) + "\n", 1, ErrTooLarge, "longer than"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseTopologyConf(strings.NewReader(tc.text))
			require.Error(t, err)
			assert.ErrorIs(t, err, tc.want)
			assert.Contains(t, err.Error(), tc.mention)
			var le *LineError
			if tc.line == 0 {
				assert.False(t, errors.As(err, &le))
				assert.Contains(t, err.Error(), "topology.conf")
				return
			}
			require.True(t, errors.As(err, &le), "error %v carries no line", err)
			assert.Equal(t, tc.line, le.Line)
			assert.Contains(t, err.Error(), "topology.conf:"+itoa(tc.line)+":")
		})
	}
}

func FuzzParseTopologyConf(f *testing.F) {
	f.Add(treeConf)
	f.Add("BlockName=b1 Nodes=n[0-3]\nBlockName=b2 Nodes=n[4-7]\nBlockSizes=4,8\n")
	f.Add("SwitchName=a Switches=b\nSwitchName=b Switches=a\n")
	f.Add("SwitchName=s0 Nodes=\"x[1-2]\" LinkSpeed=1 \\\n")
	f.Add("#only a comment")
	f.Fuzz(func(t *testing.T, text string) {
		if len(text) > 4096 {
			return
		}
		cfg, err := ParseTopologyConf(strings.NewReader(text))
		if err != nil {
			for _, s := range []error{ErrSyntax, ErrTooLarge, ErrDuplicateName, ErrUnknownNode, ErrUnknownSwitch,
				ErrCycle, ErrMultipleParents, ErrOverlap, ErrMultipleRoots, ErrUnattached, ErrInvalidConfig} {
				if errors.Is(err, s) {
					return
				}
			}
			t.Fatalf("error %v wraps no sentinel", err)
		}
		g, err := NewGraph(cfg)
		if err != nil {
			t.Fatalf("parsed config rejected by NewGraph: %v", err)
		}
		if g.NumNodes() > 0 && g.NumNodes() <= 4096 {
			// Placement on the parsed graph must not panic either.
			for _, n := range []int{1, 2, g.NumNodes()} {
				p, err := g.Select(FullNodeSet(g.NumNodes()), n, Constraints{})
				if err == nil && p.Nodes.Count() != n {
					t.Fatalf("Select(%d) returned %d nodes", n, p.Nodes.Count())
				}
			}
		}
	})
}
