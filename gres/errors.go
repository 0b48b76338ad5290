package gres

import (
	"errors"
	"fmt"
)

// More sentinel errors (see also ErrUnknownTRES, ErrInvalidTRES and
// ErrOverflow in tres.go). Every error this package returns wraps exactly
// one sentinel, so callers can branch with errors.Is.
var (
	// ErrInvalidGRES reports a malformed GRES request string or Request.
	ErrInvalidGRES = errors.New("invalid GRES")
	// ErrInvalidInventory reports a device inventory that fails validation.
	ErrInvalidInventory = errors.New("invalid device inventory")
	// ErrUnknownDevice reports a device index that is not in the node's inventory.
	ErrUnknownDevice = errors.New("unknown device")
	// ErrDeviceInUse reports an attempt to allocate a device that is already allocated.
	ErrDeviceInUse = errors.New("device already allocated")
	// ErrDeviceNotInUse reports an attempt to release a device that is not allocated.
	ErrDeviceNotInUse = errors.New("device not allocated")
	// ErrDeviceUnhealthy reports an attempt to allocate an unhealthy device.
	ErrDeviceUnhealthy = errors.New("device unhealthy")
	// ErrInsufficientDevices reports a device request the node cannot satisfy
	// now (too few free, healthy, matching and — with enforced binding —
	// close devices).
	ErrInsufficientDevices = errors.New("insufficient devices")
	// ErrInvalidRequest reports a malformed device request (negative count,
	// empty name).
	ErrInvalidRequest = errors.New("invalid device request")
)

// ParseError describes a parse failure in one token of a TRES, GRES,
// billing-weight or core-list string. It wraps the underlying error (which
// wraps a sentinel such as ErrUnknownTRES or ErrInvalidGRES), so both
// errors.As(err, *ParseError) and errors.Is(err, ErrUnknownTRES) work.
type ParseError struct {
	What   string // what was being parsed: "TRES", "GRES", "billing weights", "core list"
	Input  string // the whole input (truncated to 128 bytes in Error)
	Token  string // the offending token
	Offset int    // byte offset of Token in Input
	Err    error  // the cause
}

// Error returns a message naming the input, the bad token and its offset.
func (e *ParseError) Error() string {
	in := e.Input
	if len(in) > 128 {
		in = in[:128] + "…"
	}
	tok := e.Token
	if len(tok) > 64 {
		tok = tok[:64] + "…"
	}
	return fmt.Sprintf("%s %q: token %q at offset %d: %v", e.What, in, tok, e.Offset, e.Err)
}

// Unwrap returns the cause.
func (e *ParseError) Unwrap() error { return e.Err }

// token is one comma-separated element of an input string.
type token struct {
	text string
	off  int
}

// splitTokens splits s at commas, trimming ASCII blanks around each token.
// An all-blank s yields no tokens. An empty token (",," or a trailing comma)
// is returned as an error naming its offset.
func splitTokens(what, s string) ([]token, error) {
	if isBlank(s) {
		return nil, nil
	}
	var out []token
	start := 0
	for i := 0; i <= len(s); i++ {
		if i < len(s) && s[i] != ',' {
			continue
		}
		a, b := start, i
		for a < b && isSpace(s[a]) {
			a++
		}
		for b > a && isSpace(s[b-1]) {
			b--
		}
		if a == b {
			return nil, &ParseError{What: what, Input: s, Token: "", Offset: start, Err: fmt.Errorf("%w: empty element", errFor(what))}
		}
		out = append(out, token{text: s[a:b], off: a})
		start = i + 1
	}
	return out, nil
}

func errFor(what string) error {
	switch what {
	case "GRES":
		return ErrInvalidGRES
	case "links":
		return ErrInvalidInventory
	}
	return ErrInvalidTRES
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

func isBlank(s string) bool {
	for i := 0; i < len(s); i++ {
		if !isSpace(s[i]) {
			return false
		}
	}
	return true
}
