package cli

import (
	"fmt"
	"strconv"
	"strings"
)

// Defaults of the limits a --listen service puts on what publishers can
// cost (record.Options MaxRecordings, MaxFileBytes, MinFreeBytes, and
// subscribe.ServerOptions.MaxSessions).
const (
	defaultMaxPublishers = 16
	defaultMaxBroadcasts = 32
	defaultMinFree       = 1 << 30
)

// byteSize is a size flag: 1048576, 500M, 1.5G, 2GiB, 10TB (powers of
// 1024 in every spelling; 0 is no limit).
type byteSize int64

func (b *byteSize) String() string {
	n := int64(*b)
	for _, u := range []struct {
		s string
		v int64
	}{{"TiB", 1 << 40}, {"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if n >= u.v && n%u.v == 0 {
			return fmt.Sprintf("%d%s", n/u.v, u.s)
		}
	}
	return strconv.FormatInt(n, 10)
}

func (b *byteSize) Type() string { return "SIZE" }

func (b *byteSize) Set(s string) error {
	n, err := parseByteSize(s)
	if err != nil {
		return err
	}
	*b = byteSize(n)
	return nil
}

func parseByteSize(s string) (int64, error) {
	t := strings.TrimSpace(s)
	num := strings.TrimRightFunc(t, func(r rune) bool { return r < '0' || r > '9' && r != '.' })
	unit := strings.ToUpper(strings.TrimSpace(t[len(num):]))
	unit = strings.TrimSuffix(strings.TrimSuffix(unit, "B"), "I")
	mult := map[string]float64{"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}[unit]
	v, err := strconv.ParseFloat(num, 64)
	if err != nil || mult == 0 || v < 0 || v*mult > 1<<62 {
		return 0, fmt.Errorf("%q is not a size: use bytes or a number with K, M, G or T (powers of 1024), e.g. 500M or 2G", s)
	}
	return int64(v * mult), nil
}
