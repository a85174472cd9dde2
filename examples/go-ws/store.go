package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

const convTTL = 7 * 24 * time.Hour

// Msg is one message of a conversation, as stored and as served by
// /api/history. R is "u" (user) or "a" (assistant).
type Msg struct {
	R string `json:"r"`
	S string `json:"s"`
}

// Store keeps each conversation in one Redis hash:
//
//	chat:<id>   n     -> counter of messages (HINCRBY)
//	            m:<n> -> JSON of message number n (1-based)
//
// The whole hash expires ttl after the last write.
type Store struct {
	rdb      *redis.Client
	ttl      time.Duration
	noExpire bool // APP_BUGS=hset_no_expire
}

func convKey(id string) string { return "chat:" + id }

// History returns the conversation oldest first.
func (s *Store) History(ctx context.Context, id string) ([]Msg, error) {
	all, err := s.rdb.HGetAll(ctx, convKey(id)).Result()
	if err != nil {
		return nil, err
	}
	type numbered struct {
		n int
		m Msg
	}
	list := make([]numbered, 0, len(all))
	for field, raw := range all {
		rest, ok := strings.CutPrefix(field, "m:")
		if !ok {
			continue // "n" and anything unknown
		}
		n, err := strconv.Atoi(rest)
		if err != nil {
			continue
		}
		var m Msg
		if err := json.Unmarshal([]byte(raw), &m); err != nil {
			log.Printf("store: %s %s: bad JSON skipped: %v", convKey(id), field, err)
			continue
		}
		list = append(list, numbered{n, m})
	}
	sort.Slice(list, func(i, j int) bool { return list[i].n < list[j].n })
	out := make([]Msg, len(list))
	for i, x := range list {
		out[i] = x.m
	}
	return out, nil
}

// Append stores msgs at the end of the conversation in one MULTI/EXEC:
// HINCRBY n, HSET m:<n>..., EXPIRE. The current counter is read under WATCH
// so that the field numbers match what HINCRBY produces; if another writer
// touched the hash meanwhile, the transaction is retried.
func (s *Store) Append(ctx context.Context, id string, msgs ...Msg) error {
	if len(msgs) == 0 {
		return nil
	}
	key := convKey(id)
	vals := make([]string, len(msgs))
	for i, m := range msgs {
		b, err := json.Marshal(m)
		if err != nil {
			return err
		}
		vals[i] = string(b)
	}

	txf := func(tx *redis.Tx) error {
		cur, err := tx.HGet(ctx, key, "n").Int64()
		if err != nil && !errors.Is(err, redis.Nil) {
			return err
		}
		var incr *redis.IntCmd
		_, err = tx.TxPipelined(ctx, func(p redis.Pipeliner) error {
			incr = p.HIncrBy(ctx, key, "n", int64(len(msgs)))
			fields := make([]any, 0, 2*len(msgs))
			for i, v := range vals {
				fields = append(fields, "m:"+strconv.FormatInt(cur+int64(i)+1, 10), v)
			}
			p.HSet(ctx, key, fields...)
			if !s.noExpire {
				p.Expire(ctx, key, s.ttl)
			}
			return nil
		})
		if err != nil {
			return err
		}
		if got := incr.Val(); got != cur+int64(len(msgs)) {
			// Cannot happen under WATCH; guard anyway.
			return fmt.Errorf("counter moved: want %d, got %d", cur+int64(len(msgs)), got)
		}
		return nil
	}

	for attempt := 0; attempt < 5; attempt++ {
		err := s.rdb.Watch(ctx, txf, key)
		if errors.Is(err, redis.TxFailedErr) {
			continue
		}
		return err
	}
	return errors.New("store: too much contention on " + key)
}
