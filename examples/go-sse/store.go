package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// entry is one line of a transcript. It is stored as the JSON member of a
// sorted set; the random ID keeps two identical texts from collapsing into a
// single member.
type entry struct {
	ID      string `json:"id"`
	Speaker string `json:"speaker"` // "user" or "assistant"
	Words   string `json:"words"`
	At      int64  `json:"at"` // unix milliseconds, same as the score
}

type store struct {
	rdb     *redis.Client
	ttl     time.Duration
	noRenew bool // bug flag no_renew
}

func transcriptKey(token string) string { return "transcript:" + token }

func randomHex(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic(err) // crypto/rand does not fail on supported platforms
	}
	return hex.EncodeToString(b)
}

func newEntry(speaker, words string, at time.Time) entry {
	return entry{ID: randomHex(8), Speaker: speaker, Words: words, At: at.UnixMilli()}
}

// history returns the transcript oldest first.
func (s *store) history(ctx context.Context, token string, limit int64) ([]entry, error) {
	members, err := s.rdb.ZRevRange(ctx, transcriptKey(token), 0, limit-1).Result()
	if err != nil {
		return nil, err
	}
	out := make([]entry, 0, len(members))
	for i := len(members) - 1; i >= 0; i-- {
		var e entry
		if err := json.Unmarshal([]byte(members[i]), &e); err != nil {
			continue // skip anything we cannot read rather than failing the turn
		}
		out = append(out, e)
	}
	return out, nil
}

// newestFirst returns the transcript newest first, as the API serves it.
func (s *store) newestFirst(ctx context.Context, token string, limit int64) ([]entry, error) {
	members, err := s.rdb.ZRevRange(ctx, transcriptKey(token), 0, limit-1).Result()
	if err != nil {
		return nil, err
	}
	out := make([]entry, 0, len(members))
	for _, m := range members {
		var e entry
		if err := json.Unmarshal([]byte(m), &e); err != nil {
			continue
		}
		out = append(out, e)
	}
	return out, nil
}

// save appends entries to the session's transcript and renews its expiry,
// all in one MULTI/EXEC.
func (s *store) save(ctx context.Context, token string, entries ...entry) error {
	key := transcriptKey(token)

	setExpire := true
	if s.noRenew {
		// BUG (no_renew): only give the key a TTL when it is first created.
		n, err := s.rdb.ZCard(ctx, key).Result()
		if err != nil {
			return fmt.Errorf("zcard: %w", err)
		}
		setExpire = n == 0
	}

	members := make([]redis.Z, 0, len(entries))
	for _, e := range entries {
		b, err := json.Marshal(e)
		if err != nil {
			return err
		}
		members = append(members, redis.Z{Score: float64(e.At), Member: string(b)})
	}

	_, err := s.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.ZAdd(ctx, key, members...)
		if setExpire {
			p.Expire(ctx, key, s.ttl)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("store transcript: %w", err)
	}
	return nil
}
