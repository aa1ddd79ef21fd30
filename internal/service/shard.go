package service

import (
	"context"
	"fmt"
	"hash/fnv"
	"strconv"
	"strings"

	"github.com/moq-export/moq-export/record"
)

// Shard is one of N recorders that split a relay's broadcasts between them
// with no coordination: shard I records the broadcasts whose name hashes to
// I. The hash is FNV-1a (64 bit) of the broadcast path as announced,
// modulo N: stable across versions, platforms and restarts, so a restarted
// recorder takes the same broadcasts again.
type Shard struct {
	I, N int
}

// ParseShard reads "I/N" (0 <= I < N).
func ParseShard(s string) (Shard, error) {
	a, b, ok := strings.Cut(s, "/")
	i, err1 := strconv.Atoi(a)
	n, err2 := strconv.Atoi(b)
	if !ok || err1 != nil || err2 != nil || n < 1 || i < 0 || i >= n {
		return Shard{}, fmt.Errorf("shard %q: want I/N with 0 <= I < N, e.g. 0/3", s)
	}
	return Shard{I: i, N: n}, nil
}

func (s Shard) String() string { return fmt.Sprintf("%d/%d", s.I, s.N) }

// Owns reports whether broadcast path belongs to this shard (always, for
// the zero Shard or N = 1).
func (s Shard) Owns(path string) bool {
	if s.N <= 1 {
		return true
	}
	return ShardOf(path, s.N) == s.I
}

// ShardOf is the shard of broadcast path among n: FNV-1a 64 of the path,
// modulo n.
func ShardOf(path string, n int) int {
	h := fnv.New64a()
	h.Write([]byte(path))
	return int(h.Sum64() % uint64(n))
}

// Source returns src with only this shard's broadcasts announced.
func (s Shard) Source(src record.Source) record.Source {
	if s.N <= 1 {
		return src
	}
	return shardSource{Source: src, shard: s}
}

type shardSource struct {
	record.Source
	shard Shard
}

func (s shardSource) Announced(ctx context.Context) (record.Feed, error) {
	f, err := s.Source.Announced(ctx)
	if err != nil {
		return nil, err
	}
	return shardFeed{Feed: f, shard: s.shard}, nil
}

// Unwrap returns the source filtered, for its optional capabilities.
func (s shardSource) Unwrap() record.Source { return s.Source }

type shardFeed struct {
	record.Feed
	shard Shard
}

func (f shardFeed) Next(ctx context.Context) (record.Announcement, error) {
	for {
		an, err := f.Feed.Next(ctx)
		if err != nil || f.shard.Owns(an.Path) {
			return an, err
		}
	}
}

// Err and Peer pass the filtered source's on (record asks a source that
// has them why it ended and who publishes).
func (s shardSource) Err() error {
	if e, ok := s.Source.(record.EndingSource); ok {
		return e.Err()
	}
	return nil
}

func (s shardSource) Peer() string {
	if p, ok := s.Source.(record.PeerSource); ok {
		return p.Peer()
	}
	return ""
}
