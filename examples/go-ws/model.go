package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
)

const systemPrompt = "You are a helpful, concise assistant."

// Model talks to an OpenAI-compatible Chat Completions endpoint with
// stream: true and parses the server-sent events by hand.
type Model struct {
	baseURL string
	apiKey  string
	name    string
	client  *http.Client
}

type chatMessage struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

type chatRequest struct {
	Model    string        `json:"model"`
	Messages []chatMessage `json:"messages"`
	Stream   bool          `json:"stream"`
}

type chatChunk struct {
	Choices []struct {
		Delta struct {
			Content string `json:"content"`
		} `json:"delta"`
		FinishReason *string `json:"finish_reason"`
	} `json:"choices"`
	Error *struct {
		Message string `json:"message"`
	} `json:"error"`
}

// Stream sends the conversation to the model and calls onPiece for every
// non-empty content delta. It returns the whole reply. If onPiece returns an
// error the request is abandoned and that error is returned.
func (m *Model) Stream(ctx context.Context, conv []Msg, onPiece func(string) error) (string, error) {
	msgs := make([]chatMessage, 0, len(conv)+1)
	msgs = append(msgs, chatMessage{Role: "system", Content: systemPrompt})
	for _, c := range conv {
		role := "user"
		if c.R == "a" {
			role = "assistant"
		}
		msgs = append(msgs, chatMessage{Role: role, Content: c.S})
	}
	body, err := json.Marshal(chatRequest{Model: m.name, Messages: msgs, Stream: true})
	if err != nil {
		return "", err
	}

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, m.baseURL+"/chat/completions", bytes.NewReader(body))
	if err != nil {
		return "", err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	if m.apiKey != "" {
		req.Header.Set("Authorization", "Bearer "+m.apiKey)
	}

	resp, err := m.client.Do(req)
	if err != nil {
		return "", fmt.Errorf("model request: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		snippet, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return "", fmt.Errorf("model: HTTP %d: %s", resp.StatusCode, strings.TrimSpace(string(snippet)))
	}

	var full strings.Builder
	var data []string // data lines of the event being read
	done := false

	// dispatch handles one complete SSE event.
	dispatch := func() error {
		if len(data) == 0 {
			return nil
		}
		payload := strings.Join(data, "\n")
		data = data[:0]
		if strings.TrimSpace(payload) == "[DONE]" {
			done = true
			return nil
		}
		var ch chatChunk
		if err := json.Unmarshal([]byte(payload), &ch); err != nil {
			return fmt.Errorf("model: bad chunk %q: %w", payload, err)
		}
		if ch.Error != nil {
			return fmt.Errorf("model error: %s", ch.Error.Message)
		}
		for _, c := range ch.Choices {
			if c.Delta.Content == "" {
				continue
			}
			full.WriteString(c.Delta.Content)
			if err := onPiece(c.Delta.Content); err != nil {
				return err
			}
		}
		return nil
	}

	r := bufio.NewReaderSize(resp.Body, 32*1024)
	for !done {
		line, err := r.ReadString('\n')
		if err != nil && !(errors.Is(err, io.EOF) && line != "") {
			if errors.Is(err, io.EOF) {
				// Stream ended without [DONE]: flush what we have.
				if derr := dispatch(); derr != nil {
					return full.String(), derr
				}
				break
			}
			return full.String(), fmt.Errorf("model stream: %w", err)
		}
		line = strings.TrimRight(line, "\r\n")
		switch {
		case line == "":
			if err := dispatch(); err != nil {
				return full.String(), err
			}
		case strings.HasPrefix(line, ":"):
			// comment / keep-alive
		default:
			field, value, _ := strings.Cut(line, ":")
			value = strings.TrimPrefix(value, " ")
			if field == "data" {
				data = append(data, value)
			}
			// event:, id:, retry: are not used by Chat Completions.
		}
	}
	return full.String(), nil
}
