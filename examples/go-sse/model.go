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

// modelClient talks to an OpenAI-compatible Chat Completions endpoint.
type modelClient struct {
	baseURL string
	apiKey  string
	model   string
	http    *http.Client
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

// stream sends messages to the model and calls onPiece for every content
// delta. It returns the whole answer once the stream ends.
func (m *modelClient) stream(ctx context.Context, messages []chatMessage, onPiece func(string) error) (string, error) {
	body, err := json.Marshal(chatRequest{Model: m.model, Messages: messages, Stream: true})
	if err != nil {
		return "", err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, m.baseURL+"/chat/completions", bytes.NewReader(body))
	if err != nil {
		return "", err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	if m.apiKey != "" {
		req.Header.Set("Authorization", "Bearer "+m.apiKey)
	}

	resp, err := m.http.Do(req)
	if err != nil {
		return "", fmt.Errorf("model request: %w", err)
	}
	defer resp.Body.Close()

	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 2048))
		return "", fmt.Errorf("model returned %s: %s", resp.Status, strings.TrimSpace(string(msg)))
	}

	var answer strings.Builder
	done := false
	err = readSSE(resp.Body, func(data string) (bool, error) {
		if data == "[DONE]" {
			done = true
			return false, nil
		}
		var c chatChunk
		if err := json.Unmarshal([]byte(data), &c); err != nil {
			return false, fmt.Errorf("bad chunk from model: %w", err)
		}
		if c.Error != nil {
			return false, fmt.Errorf("model error: %s", c.Error.Message)
		}
		for _, ch := range c.Choices {
			if ch.Delta.Content == "" {
				continue
			}
			answer.WriteString(ch.Delta.Content)
			if err := onPiece(ch.Delta.Content); err != nil {
				return false, err
			}
		}
		return true, nil
	})
	if err != nil {
		return answer.String(), err
	}
	if !done {
		return answer.String(), errors.New("model stream ended without [DONE]")
	}
	return answer.String(), nil
}

// readSSE parses a text/event-stream body and calls onData with the data of
// each event (multiple data lines joined by "\n"). onData returns false to stop.
func readSSE(r io.Reader, onData func(string) (bool, error)) error {
	br := bufio.NewReaderSize(r, 64*1024)
	var data []string
	haveData := false

	dispatch := func() (bool, error) {
		if !haveData {
			return true, nil
		}
		d := strings.Join(data, "\n")
		data, haveData = data[:0], false
		return onData(d)
	}

	for {
		line, err := br.ReadString('\n')
		if len(line) > 0 || err == nil {
			line = strings.TrimRight(line, "\r\n")
			switch {
			case line == "":
				cont, derr := dispatch()
				if derr != nil || !cont {
					return derr
				}
			case strings.HasPrefix(line, ":"):
				// comment / keep-alive
			default:
				field, value, _ := strings.Cut(line, ":")
				value = strings.TrimPrefix(value, " ")
				if field == "data" {
					data = append(data, value)
					haveData = true
				}
				// event:, id:, retry: are not used by Chat Completions.
			}
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				_, derr := dispatch()
				return derr
			}
			return err
		}
	}
}
