package nvml

import (
	"errors"
	"fmt"
)

// Sentinel errors. Errors from NVML calls also wrap the go-nvml Return
// code, so errors.Is(err, nvml.ERROR_GPU_IS_LOST) works on them.
var (
	// ErrUnavailable reports that NVML cannot be used: the library is
	// missing, the kernel driver is not loaded, or Init failed otherwise.
	ErrUnavailable = errors.New("nvml: NVML unavailable")
	// ErrLibraryNotFound reports that libnvidia-ml.so.1 could not be
	// loaded (no NVIDIA driver installed). It wraps ErrUnavailable.
	ErrLibraryNotFound = fmt.Errorf("%w: library libnvidia-ml.so.1 not found (is the NVIDIA driver installed?)", ErrUnavailable)
	// ErrNotInitialized reports a call on a Driver whose Init did not
	// succeed, or that was shut down. The Driver made no NVML call.
	ErrNotInitialized = errors.New("nvml: driver not initialized (Init failed or not called, or Shutdown done)")
	// ErrInvalidOptions reports bad Options.
	ErrInvalidOptions = errors.New("nvml: invalid options")
)
