package main

import (
	"context"
	"math/rand/v2"
	"time"
)

// fakeModel stands in for the real LLM backend: it thinks for 80-200 ms and
// then says one of a handful of canned things.
type fakeModel struct {
	replies []string
}

func newFakeModel() *fakeModel {
	return &fakeModel{replies: []string{
		"Good question. Let me think about that for a moment... I'd say it depends on the details.",
		"Here's a short answer: yes, but test it before you rely on it.",
		"I'm not sure I follow. Could you rephrase that?",
		"Interesting! Could you tell me a bit more about what you're trying to do?",
		"That sounds reasonable to me. Anything else?",
	}}
}

func (m *fakeModel) Reply(ctx context.Context, prompt string) (string, error) {
	delay := 80*time.Millisecond + rand.N(121*time.Millisecond)
	t := time.NewTimer(delay)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return "", ctx.Err()
	case <-t.C:
	}
	return m.replies[rand.IntN(len(m.replies))], nil
}
