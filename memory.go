package bloom

import (
	"fmt"
	"sync"
)

// checkAlloc refuses an allocation of the given number of bytes when it exceeds the physical
// memory of this machine. Go aborts the whole process when an allocation fails, so a filter
// sized from an absurd (n, p) or from a crafted file header must be refused before make runs.
func checkAlloc(bytes uint64) error {
	if total := physicalMemory(); total != 0 && bytes > total {
		return fmt.Errorf("%w: %s needed, this machine has %s", ErrTooLarge, FormatBytes(bytes), FormatBytes(total))
	}
	if bytes > 1<<53 {
		return fmt.Errorf("%w: %s needed", ErrTooLarge, FormatBytes(bytes))
	}
	return nil
}

var physicalMemory = sync.OnceValue(totalMemory)

// FormatBytes formats a byte count in binary units (B, KiB, MiB, ...), as the tools print sizes.
func FormatBytes(n uint64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := uint64(unit), 0
	for v := n / unit; v >= unit && exp < 5; v /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}
