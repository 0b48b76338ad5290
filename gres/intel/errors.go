package intel

import (
	"errors"

	"github.com/sluicehq/sluice/gres"
)

// Sentinel errors.
var (
	// ErrInvalidOptions reports bad Options.
	ErrInvalidOptions = errors.New("intel: invalid options")
	// ErrUnavailable reports a root without a DRM class directory
	// (/sys/class/drm): no GPU driver is loaded, or Root is wrong.
	ErrUnavailable = errors.New("intel: DRM sysfs unavailable")
)

// validType reports whether s is a valid GRES type.
func validType(s string) bool { return s != "" && gres.ValidateName("gpu", s) == nil }
