package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"net/http"
	"regexp"
	"strings"
	"time"
)

const (
	historyTurns   = 40 // entries sent to the model as context
	transcriptMax  = 500
	maxQuestionLen = 8000
	saveTimeout    = 5 * time.Second
)

var tokenRe = regexp.MustCompile(`^[0-9a-f]{32}$`)

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func errorJSON(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, map[string]string{"error": msg})
}

// tokenFrom returns the session token from the request header, or "" if it
// is missing or malformed.
func tokenFrom(r *http.Request) string {
	t := strings.TrimSpace(r.Header.Get(tokenHeader))
	if !tokenRe.MatchString(t) {
		return ""
	}
	return t
}

func (a *app) handleIndex(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-cache")
	_, _ = w.Write(indexHTML)
}

// POST /api/session -> {"token": "<32 hex>"}
func (a *app) handleSession(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]string{"token": randomHex(16)})
}

// GET /api/transcript -> {"entries": [entry, ...]} newest first
func (a *app) handleTranscript(w http.ResponseWriter, r *http.Request) {
	token := tokenFrom(r)
	if token == "" {
		errorJSON(w, http.StatusUnauthorized, "missing or invalid "+tokenHeader)
		return
	}
	entries, err := a.store.newestFirst(r.Context(), token, transcriptMax)
	if err != nil {
		log.Printf("transcript %s: %v", short(token), err)
		errorJSON(w, http.StatusInternalServerError, "could not read transcript")
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"entries": entries})
}

// sseWriter writes named server-sent events and flushes after each one.
type sseWriter struct {
	w  http.ResponseWriter
	rc *http.ResponseController
}

func (s *sseWriter) send(event string, payload any) error {
	b, err := json.Marshal(payload)
	if err != nil {
		return err
	}
	if _, err := fmt.Fprintf(s.w, "event: %s\ndata: %s\n\n", event, b); err != nil {
		return err
	}
	return s.rc.Flush()
}

type askRequest struct {
	Question string `json:"question"`
}

// POST /api/ask {"question": "..."} -> text/event-stream
//
//	event: token   data: {"t": "..."}      (repeated)
//	event: finish  data: {}                 (answer stored)
//	event: failure data: {"reason": "..."} (model or storage failed)
func (a *app) handleAsk(w http.ResponseWriter, r *http.Request) {
	token := tokenFrom(r)
	if token == "" {
		errorJSON(w, http.StatusUnauthorized, "missing or invalid "+tokenHeader)
		return
	}
	var req askRequest
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 64<<10)).Decode(&req); err != nil {
		errorJSON(w, http.StatusBadRequest, "body must be JSON {\"question\": \"...\"}")
		return
	}
	question := strings.TrimSpace(req.Question)
	if question == "" {
		errorJSON(w, http.StatusBadRequest, "question is empty")
		return
	}
	if len(question) > maxQuestionLen {
		errorJSON(w, http.StatusBadRequest, "question is too long")
		return
	}

	ctx := r.Context()
	past, err := a.store.history(ctx, token, historyTurns)
	if err != nil {
		log.Printf("ask %s: read history: %v", short(token), err)
		errorJSON(w, http.StatusInternalServerError, "could not read transcript")
		return
	}
	asked := time.Now()

	messages := make([]chatMessage, 0, len(past)+2)
	messages = append(messages, chatMessage{Role: "system", Content: "You are a helpful, concise assistant."})
	for _, e := range past {
		role := "user"
		if e.Speaker == "assistant" {
			role = "assistant"
		}
		messages = append(messages, chatMessage{Role: role, Content: e.Words})
	}
	messages = append(messages, chatMessage{Role: "user", Content: question})

	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("Connection", "keep-alive")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	sse := &sseWriter{w: w, rc: http.NewResponseController(w)}
	_ = sse.rc.Flush()

	answer, err := a.model.stream(ctx, messages, func(piece string) error {
		return sse.send("token", map[string]string{"t": piece})
	})
	if err != nil {
		if ctx.Err() != nil {
			log.Printf("ask %s: client went away: %v", short(token), err)
			return
		}
		log.Printf("ask %s: model: %v", short(token), err)
		_ = sse.send("failure", map[string]string{"reason": "the model call failed"})
		return
	}

	answered := time.Now()
	if answered.UnixMilli() <= asked.UnixMilli() {
		answered = asked.Add(time.Millisecond) // keep the answer after the question
	}
	entries := []entry{
		newEntry("user", question, asked),
		newEntry("assistant", answer, answered),
	}

	if a.bugs.goroutineSave {
		// BUG (goroutine_save): report success before the turn is stored and
		// only log what happens to the write.
		_ = sse.send("finish", struct{}{})
		go func() {
			sctx, cancel := context.WithTimeout(context.Background(), saveTimeout)
			defer cancel()
			if err := a.store.save(sctx, token, entries...); err != nil {
				log.Printf("ask %s: background save failed: %v", short(token), err)
			}
		}()
		return
	}

	// The answer is complete; store it even if the client has just gone.
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), saveTimeout)
	defer cancel()
	if err := a.store.save(sctx, token, entries...); err != nil {
		log.Printf("ask %s: save: %v", short(token), err)
		_ = sse.send("failure", map[string]string{"reason": saveReason(err)})
		return
	}
	_ = sse.send("finish", struct{}{})
}

func saveReason(err error) string {
	if errors.Is(err, context.DeadlineExceeded) {
		return "storing the conversation timed out"
	}
	return "the conversation could not be stored"
}

func short(token string) string {
	if len(token) > 8 {
		return token[:8]
	}
	return token
}
