package mkv

import (
	"bytes"
	"math"
	"testing"
)

// clusterStart is the layout appendClusterStart writes by hand.
type clusterStart struct {
	Cluster struct {
		Timestamp uint64 `ebml:"Timecode"`
	} `ebml:"Cluster,size=unknown"`
}

// TestClusterStartIsWhatEbmlGoWrites compares the hand-written cluster
// start with ebml-go's encoding of the same element, for timestamps of
// every length.
func TestClusterStartIsWhatEbmlGoWrites(t *testing.T) {
	for _, ms := range []uint64{0, 1, 255, 256, 65535, 65536, 1 << 24, 1<<32 + 5, 1 << 48, 1<<56 - 1, 1 << 56, math.MaxInt64 / 2, math.MaxUint64} {
		var c clusterStart
		c.Cluster.Timestamp = ms
		want, err := marshal(&c)
		if err != nil {
			t.Fatal(err)
		}
		if got := appendClusterStart([]byte{0xaa}, ms); !bytes.Equal(got[1:], want) || got[0] != 0xaa {
			t.Errorf("cluster at %d ms: % x, ebml-go writes % x", ms, got[1:], want)
		}
	}
}
