package config

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// ParseSize reads a size such as 512MiB, 1GiB, 10MB or 1048576 (bytes):
// the units of the bridge's flags and of 'sandbox: memory'.
func ParseSize(s string) (int64, error) {
	s = strings.TrimSpace(s)
	mult := int64(1)
	for _, u := range sizeUnits {
		if strings.HasSuffix(s, u.suffix) {
			s, mult = strings.TrimSpace(strings.TrimSuffix(s, u.suffix)), u.mult
			break
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n <= 0 || n > math.MaxInt64/mult {
		return 0, fmt.Errorf("want a positive size such as 10MiB, 512KiB or 1048576")
	}
	return n * mult, nil
}

// FormatSize writes n in the largest binary unit that writes it exactly
// (10MiB), else in bytes.
func FormatSize(n int64) string {
	for _, u := range sizeUnits[:3] {
		if n != 0 && n%u.mult == 0 {
			return strconv.FormatInt(n/u.mult, 10) + u.suffix
		}
	}
	return strconv.FormatInt(n, 10)
}

// sizeUnits are the units ParseSize reads, binary first (FormatSize
// writes those).
var sizeUnits = []struct {
	suffix string
	mult   int64
}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}, {"GB", 1e9}, {"MB", 1e6}, {"KB", 1e3}, {"B", 1}}
