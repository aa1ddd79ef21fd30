package units

import "fmt"

// ByteSize formats n for people: 1.5 GiB, 300 MiB, 12 KiB, 512 B.
func ByteSize(n int64) string {
	const k = 1024
	switch {
	case n >= k*k*k:
		return fmt.Sprintf("%.3g GiB", float64(n)/(k*k*k))
	case n >= k*k:
		return fmt.Sprintf("%.3g MiB", float64(n)/(k*k))
	case n >= k:
		return fmt.Sprintf("%.3g KiB", float64(n)/k)
	}
	return fmt.Sprintf("%d B", n)
}
