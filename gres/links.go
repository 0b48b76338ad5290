package gres

import (
	"fmt"
	"strconv"
)

// ParseLinksRow reads a gres.conf Links= value for the device at position
// i, e.g. "-1,0,2,2": entry j is the number of NVLink lanes from device i
// to device j, -1 marks device i itself and 0 means no NVLink. It sets
// Links[i][j].NVLinks for every j (this direction only, allocating the
// matrix when nil), leaving PCIe levels and NVSwitch flags alone; after
// reading every row, Validate reports rows that disagree. On error the
// inventory is unchanged; errors are *ParseError values naming the entry.
func (inv *Inventory) ParseLinksRow(i int, s string) error {
	n := len(inv.Devices)
	if i < 0 || i >= n {
		return fmt.Errorf("%w: links row for position %d of %d devices", ErrInvalidInventory, i, n)
	}
	toks, err := splitTokens("links", s)
	if err != nil {
		return err
	}
	if len(toks) != n {
		return &ParseError{What: "links", Input: s, Offset: 0, Token: s,
			Err: fmt.Errorf("%w: %d entries for %d devices", ErrInvalidInventory, len(toks), n)}
	}
	lanes := make([]int, n)
	for j, t := range toks {
		v, err := strconv.Atoi(t.text)
		switch {
		case err != nil:
			err = fmt.Errorf("%w: want an integer", ErrInvalidInventory)
		case j == i && v != -1:
			err = fmt.Errorf("%w: entry %d is the device itself and must be -1", ErrInvalidInventory, j)
		case j != i && (v < 0 || v > MaxNVLinks):
			err = fmt.Errorf("%w: entry %d: %d lanes outside [0, %d]", ErrInvalidInventory, j, v, MaxNVLinks)
		}
		if err != nil {
			return &ParseError{What: "links", Input: s, Token: t.text, Offset: t.off, Err: err}
		}
		if j != i {
			lanes[j] = v
		}
	}
	inv.allocLinks()
	if len(inv.Links) != n || len(inv.Links[i]) != n {
		return fmt.Errorf("%w: link matrix is not %d×%d", ErrInvalidInventory, n, n)
	}
	for j, v := range lanes {
		inv.Links[i][j].NVLinks = v
	}
	return nil
}

// FormatLinksRow writes the NVLink lanes of the device at position i in
// gres.conf Links= form ("-1,0,2,2"), or "" for a bad position.
func (inv *Inventory) FormatLinksRow(i int) string {
	n := len(inv.Devices)
	if i < 0 || i >= n {
		return ""
	}
	var b []byte
	for j := range n {
		if j > 0 {
			b = append(b, ',')
		}
		if j == i {
			b = append(b, "-1"...)
		} else {
			b = strconv.AppendInt(b, int64(inv.Link(i, j).NVLinks), 10)
		}
	}
	return string(b)
}
