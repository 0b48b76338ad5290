package topology

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
)

// maxConfLine bounds one logical line of topology.conf.
const maxConfLine = 1 << 20

// LineError is a topology.conf error at a given line; it unwraps to the
// sentinel describing the problem (ErrSyntax, ErrDuplicateName, …).
type LineError struct {
	Line int   // 1-based line number
	Err  error // the underlying error
}

// Error formats the error as "topology.conf:LINE: message".
func (e *LineError) Error() string { return fmt.Sprintf("topology.conf:%d: %v", e.Line, e.Err) }

// Unwrap returns the underlying error.
func (e *LineError) Unwrap() error { return e.Err }

// ParseTopologyConf reads Slurm's topology.conf text form and returns the
// Config it describes, after validating it as NewGraph does (with
// Config.Nodes left empty, so nodes are numbered in order of appearance;
// set Nodes to the cluster's node list before calling NewGraph to use the
// scheduler's own numbering).
//
// Supported lines (keys are case-insensitive, '#' starts a comment, a
// trailing '\' continues a line, values may be double-quoted):
//
//	SwitchName=s0 Nodes=tux[0-3] [LinkSpeed=N]   # topology/tree leaf
//	SwitchName=s4 Switches=s[0-3]                # topology/tree upper switch
//	BlockName=b1 Nodes=node[1-32]                # topology/block base block
//	BlockSizes=4,8,16                            # topology/block sizes
//
// LinkSpeed is accepted and ignored, as Slurm does. Errors are *LineError
// values carrying the line number and wrapping ErrSyntax (malformed line,
// unknown or repeated key, bad hostlist) or the sentinel NewGraph reports.
func ParseTopologyConf(r io.Reader) (Config, error) {
	var cfg Config
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), maxConfLine)
	lineNo, startLine := 0, 0
	var logical strings.Builder
	blockSizesLine := 0
	for sc.Scan() {
		lineNo++
		text := sc.Text()
		if i := strings.IndexByte(text, '#'); i >= 0 {
			text = text[:i]
		}
		if logical.Len() == 0 {
			startLine = lineNo
		}
		trimmed := strings.TrimRight(text, " \t\r")
		if strings.HasSuffix(trimmed, "\\") {
			logical.WriteString(trimmed[:len(trimmed)-1])
			logical.WriteByte(' ')
			if logical.Len() > maxConfLine {
				return Config{}, &LineError{startLine, fmt.Errorf("line longer than %d bytes: %w", maxConfLine, ErrTooLarge)}
			}
			continue
		}
		logical.WriteString(text)
		line := logical.String()
		logical.Reset()
		if err := parseConfLine(&cfg, line, startLine, &blockSizesLine); err != nil {
			return Config{}, &LineError{startLine, err}
		}
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return Config{}, &LineError{lineNo + 1, fmt.Errorf("line longer than %d bytes: %w", maxConfLine, ErrTooLarge)}
		}
		return Config{}, fmt.Errorf("topology.conf: read: %w", err)
	}
	if logical.Len() > 0 {
		if err := parseConfLine(&cfg, logical.String(), startLine, &blockSizesLine); err != nil {
			return Config{}, &LineError{startLine, err}
		}
	}
	if _, err := NewGraph(cfg); err != nil {
		return Config{}, attachLine(err, blockSizesLine)
	}
	return cfg, nil
}

// attachLine wraps a NewGraph error that carries no line (BlockSizes
// errors) so that every error names the file.
func attachLine(err error, blockSizesLine int) error {
	var le *LineError
	if errors.As(err, &le) {
		return err
	}
	if strings.HasPrefix(err.Error(), "BlockSizes") && blockSizesLine > 0 {
		return &LineError{blockSizesLine, err}
	}
	return fmt.Errorf("topology.conf: %w", err)
}

// confField is one key=value pair of a line.
type confField struct {
	key, value string
}

func splitConfFields(line string) ([]confField, error) {
	var out []confField
	for i := 0; i < len(line); {
		for i < len(line) && isSpace(line[i]) {
			i++
		}
		if i == len(line) {
			break
		}
		j := i
		for j < len(line) && line[j] != '=' && !isSpace(line[j]) {
			j++
		}
		if j == len(line) || line[j] != '=' {
			return nil, fmt.Errorf("%q is not key=value: %w", line[i:j], ErrSyntax)
		}
		key := line[i:j]
		if key == "" {
			return nil, fmt.Errorf("missing key before '=': %w", ErrSyntax)
		}
		j++
		var value string
		if j < len(line) && line[j] == '"' {
			end := strings.IndexByte(line[j+1:], '"')
			if end < 0 {
				return nil, fmt.Errorf("%s: unterminated quote: %w", key, ErrSyntax)
			}
			value = line[j+1 : j+1+end]
			j += end + 2
			if j < len(line) && !isSpace(line[j]) {
				return nil, fmt.Errorf("%s: text after closing quote: %w", key, ErrSyntax)
			}
		} else {
			k := j
			for k < len(line) && !isSpace(line[k]) {
				k++
			}
			value = line[j:k]
			j = k
		}
		out = append(out, confField{key, value})
		i = j
	}
	return out, nil
}

func parseConfLine(cfg *Config, line string, lineNo int, blockSizesLine *int) error {
	fields, err := splitConfFields(line)
	if err != nil || len(fields) == 0 {
		return err
	}
	seen := map[string]bool{}
	get := func(allowed ...string) (map[string]string, error) {
		vals := map[string]string{}
		for _, f := range fields {
			k := strings.ToLower(f.key)
			if !slices.Contains(allowed, k) {
				return nil, fmt.Errorf("unknown key %q on a %s line: %w", f.key, fields[0].key, ErrSyntax)
			}
			if seen[k] {
				return nil, fmt.Errorf("key %q given twice: %w", f.key, ErrSyntax)
			}
			seen[k] = true
			vals[k] = f.value
		}
		return vals, nil
	}
	list := func(key, v string) ([]string, error) {
		if v == "" {
			return nil, fmt.Errorf("%s: empty value: %w", key, ErrSyntax)
		}
		if _, err := ExpandHostlist(v); err != nil {
			return nil, fmt.Errorf("%s: %w", key, err)
		}
		return []string{v}, nil
	}
	switch strings.ToLower(fields[0].key) {
	case "switchname":
		vals, err := get("switchname", "nodes", "switches", "linkspeed")
		if err != nil {
			return err
		}
		sw := SwitchConfig{Name: vals["switchname"], Line: lineNo}
		if sw.Name == "" || strings.ContainsAny(sw.Name, "[],") {
			return fmt.Errorf("SwitchName %q: one plain switch name expected: %w", sw.Name, ErrSyntax)
		}
		if v, ok := vals["nodes"]; ok {
			if sw.Nodes, err = list("Nodes", v); err != nil {
				return err
			}
		}
		if v, ok := vals["switches"]; ok {
			if sw.Switches, err = list("Switches", v); err != nil {
				return err
			}
		}
		if v, ok := vals["linkspeed"]; ok {
			if _, err := strconv.ParseUint(v, 10, 63); err != nil {
				return fmt.Errorf("LinkSpeed %q: not a non-negative integer: %w", v, ErrSyntax)
			}
		}
		cfg.Switches = append(cfg.Switches, sw)
	case "blockname":
		vals, err := get("blockname", "nodes")
		if err != nil {
			return err
		}
		bl := BlockConfig{Name: vals["blockname"], Line: lineNo}
		if bl.Name == "" || strings.ContainsAny(bl.Name, "[],") {
			return fmt.Errorf("BlockName %q: one plain block name expected: %w", bl.Name, ErrSyntax)
		}
		v, ok := vals["nodes"]
		if !ok {
			return fmt.Errorf("BlockName %q: missing Nodes: %w", bl.Name, ErrSyntax)
		}
		if bl.Nodes, err = list("Nodes", v); err != nil {
			return err
		}
		cfg.Blocks = append(cfg.Blocks, bl)
	case "blocksizes":
		vals, err := get("blocksizes")
		if err != nil {
			return err
		}
		if *blockSizesLine > 0 {
			return fmt.Errorf("BlockSizes already given on line %d: %w", *blockSizesLine, ErrSyntax)
		}
		*blockSizesLine = lineNo
		for part := range strings.SplitSeq(vals["blocksizes"], ",") {
			v, err := strconv.Atoi(part)
			if err != nil || v <= 0 || v > MaxNodes {
				return fmt.Errorf("BlockSizes: %q is not a positive node count: %w", part, ErrSyntax)
			}
			cfg.BlockSizes = append(cfg.BlockSizes, v)
		}
	default:
		return fmt.Errorf("unknown key %q (expected SwitchName, BlockName or BlockSizes): %w", fields[0].key, ErrSyntax)
	}
	return nil
}
