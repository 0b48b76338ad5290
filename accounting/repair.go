package accounting

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
)

// ByteRange is a damaged region of a file.
type ByteRange struct {
	Offset int64 `json:"offset"`
	Length int64 `json:"length"`
}

// RepairReport says what RepairBunt did.
type RepairReport struct {
	Path    string      `json:"path"`
	Backup  string      `json:"backup"`  // where the damaged original was moved
	Kept    int         `json:"kept"`    // intact commands replayed
	Records int         `json:"records"` // live records in the repaired file
	Damaged []ByteRange `json:"damaged"` // regions skipped (including a torn tail)
}

// RepairBunt rebuilds a damaged ledger file. It reads the file command by
// command; where bytes fail to parse or a checksum fails it records the
// damaged range and resumes at the next intact command. Every intact
// command is replayed in order, so every intact record survives (records
// whose last write was damaged keep their previous value, or vanish if
// their only write was). The result is written to a new file, fsynced, and
// swapped in; the original is kept as path+".corrupt" (or ".corrupt.N").
// The ledger must not be open. Reports built from the file may disagree
// with the surviving job records if damage hit rollups; RepairBunt does
// not try to reconcile them.
func RepairBunt(path string) (RepairReport, error) {
	rep := RepairReport{Path: path}
	lock, err := lockFile(path + ".lock")
	if err != nil {
		return rep, err
	}
	defer unlockFile(lock)
	data, err := os.ReadFile(path)
	if err != nil {
		return rep, fmt.Errorf("repair %s: %w", path, err)
	}
	live := map[string]string{}
	var seq uint64
	off := 0
	damageStart := -1
	for off < len(data) {
		c, err := parseCmd(data[off:])
		if err == nil && !c.del {
			if v, ok := checkSealed(c.key, c.val); !ok {
				err = &frameError{"checksum"}
			} else if string(c.key) == commitKey && len(v) == 8 {
				seq = max(seq, binary.BigEndian.Uint64(v))
			}
		}
		if err != nil {
			if damageStart < 0 {
				damageStart = off
			}
			next := bytes.IndexByte(data[off+1:], '*')
			if next < 0 {
				off = len(data)
				break
			}
			off += next + 1
			continue
		}
		if damageStart >= 0 {
			rep.Damaged = append(rep.Damaged, ByteRange{int64(damageStart), int64(off - damageStart)})
			damageStart = -1
		}
		rep.Kept++
		switch k := string(c.key); {
		case k == commitKey:
		case c.del:
			delete(live, k)
		default:
			live[k] = string(c.val)
		}
		off += int(c.size)
	}
	if damageStart >= 0 {
		rep.Damaged = append(rep.Damaged, ByteRange{int64(damageStart), int64(len(data) - damageStart)})
	}
	keys := make([]string, 0, len(live))
	for k := range live {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	rep.Records = len(keys)
	tmp := path + ".repair"
	err = writeLogFile(tmp, seq+1, func(set func(k, v string) error) error {
		for _, k := range keys {
			if err := set(k, live[k]); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return rep, fmt.Errorf("repair %s: %w", path, err)
	}
	backup := path + ".corrupt"
	for i := 1; ; i++ {
		if _, err := os.Stat(backup); errors.Is(err, os.ErrNotExist) {
			break
		}
		backup = path + ".corrupt." + strconv.Itoa(i)
	}
	if err := os.Rename(path, backup); err != nil {
		return rep, fmt.Errorf("repair %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return rep, fmt.Errorf("repair %s: %w (the original is at %s)", path, err, backup)
	}
	rep.Backup = backup
	if err := syncDir(filepath.Dir(path)); err != nil {
		return rep, fmt.Errorf("repair %s: %w", path, err)
	}
	return rep, nil
}
