package main

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

const (
	chatsKey = "chats"        // set of every conversation id ever created
	chatTTL  = 24 * time.Hour // renewed on every turn
)

func eventsKey(id string) string { return "chat:" + id + ":events" }

// Message is one line of the transcript as stored in the stream.
type Message struct {
	Role string // "user" or "assistant"
	Text string
	At   time.Time
}

type Store struct {
	rdb      *redis.Client
	expireNX bool // GO_BUGS=expire_nx
}

func (s *Store) CreateChat(ctx context.Context, id string) error {
	return s.rdb.SAdd(ctx, chatsKey, id).Err()
}

func (s *Store) ChatExists(ctx context.Context, id string) (bool, error) {
	return s.rdb.SIsMember(ctx, chatsKey, id).Result()
}

// History returns the conversation, oldest first.
func (s *Store) History(ctx context.Context, id string) ([]Message, error) {
	entries, err := s.rdb.XRange(ctx, eventsKey(id), "-", "+").Result()
	if err != nil {
		return nil, err
	}
	msgs := make([]Message, 0, len(entries))
	for _, e := range entries {
		role, _ := e.Values["role"].(string)
		text, _ := e.Values["text"].(string)
		msgs = append(msgs, Message{Role: role, Text: text, At: idTime(e.ID)})
	}
	return msgs, nil
}

// SaveTurn appends the user message and the reply in one MULTI/EXEC and
// pushes the conversation's expiry out another 24 hours.
func (s *Store) SaveTurn(ctx context.Context, id string, turn []Message) error {
	key := eventsKey(id)
	_, err := s.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		for _, m := range turn {
			p.XAdd(ctx, &redis.XAddArgs{
				Stream: key,
				Values: []any{"role", m.Role, "text", m.Text},
			})
		}
		if s.expireNX {
			p.ExpireNX(ctx, key, chatTTL)
		} else {
			p.Expire(ctx, key, chatTTL)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("save turn for %s: %w", id, err)
	}
	return nil
}

// idTime pulls the millisecond timestamp out of a stream entry id ("1700000000000-0").
func idTime(id string) time.Time {
	ms, _, _ := strings.Cut(id, "-")
	n, err := strconv.ParseInt(ms, 10, 64)
	if err != nil {
		return time.Time{}
	}
	return time.UnixMilli(n)
}
