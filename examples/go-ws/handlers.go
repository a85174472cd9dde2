package main

import (
	"context"
	"crypto/rand"
	_ "embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"log"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/gorilla/websocket"
)

//go:embed index.html
var indexHTML []byte

const (
	cookieName     = "chat_id"
	cookieMaxAge   = 7 * 24 * 60 * 60
	maxQuestion    = 8000 // characters
	wsReadLimit    = 64 << 10
	wsWriteTimeout = 10 * time.Second
	storeTimeout   = 5 * time.Second
)

type App struct {
	store *Store
	model *Model
	bugs  bugs
}

func (a *App) routes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", a.handleIndex)
	mux.HandleFunc("GET /api/history", a.handleHistory)
	mux.HandleFunc("GET /ws", a.handleWS)
	return mux
}

func newChatID() string {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err)
	}
	return hex.EncodeToString(b[:])
}

func validChatID(s string) bool {
	if len(s) != 32 {
		return false
	}
	_, err := hex.DecodeString(s)
	return err == nil
}

// chatID returns the conversation id from the cookie, or "" if there is no
// usable cookie.
func chatID(r *http.Request) string {
	c, err := r.Cookie(cookieName)
	if err != nil || !validChatID(c.Value) {
		return ""
	}
	return c.Value
}

func (a *App) handleIndex(w http.ResponseWriter, r *http.Request) {
	if chatID(r) == "" {
		http.SetCookie(w, &http.Cookie{
			Name:     cookieName,
			Value:    newChatID(),
			Path:     "/",
			MaxAge:   cookieMaxAge,
			HttpOnly: true,
			SameSite: http.SameSiteLaxMode,
		})
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	_, _ = w.Write(indexHTML)
}

type historyResponse struct {
	Turns []Msg `json:"turns"`
}

func (a *App) handleHistory(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	id := chatID(r)
	turns := []Msg{}
	if id != "" {
		h, err := a.store.History(r.Context(), id)
		if err != nil {
			log.Printf("history %s: %v", id, err)
			w.WriteHeader(http.StatusServiceUnavailable)
			_ = json.NewEncoder(w).Encode(map[string]string{"error": "history unavailable"})
			return
		}
		turns = append(turns, h...)
	}
	_ = json.NewEncoder(w).Encode(historyResponse{Turns: turns})
}

// inFrame is a client -> server WebSocket message: {"t":"ask","q":"..."}.
type inFrame struct {
	T string `json:"t"`
	Q string `json:"q"`
}

// frame is a server -> client WebSocket message. Only the fields that belong
// to the frame type are sent (an empty reply still carries "full":"").
type frame map[string]string

func gotFrame() frame            { return frame{"t": "got"} }
func tokFrame(v string) frame    { return frame{"t": "tok", "v": v} }
func finFrame(full string) frame { return frame{"t": "fin", "full": full} }
func errFrame(msg string) frame  { return frame{"t": "err", "msg": msg} }

var upgrader = websocket.Upgrader{
	ReadBufferSize:  4096,
	WriteBufferSize: 4096,
	// Default CheckOrigin: same host only (or no Origin header).
}

func (a *App) handleWS(w http.ResponseWriter, r *http.Request) {
	id := chatID(r)
	if id == "" {
		http.Error(w, "missing chat_id cookie; load / first", http.StatusUnauthorized)
		return
	}
	conn, err := upgrader.Upgrade(w, r, nil)
	if err != nil {
		return // Upgrade already replied
	}
	defer conn.Close()
	conn.SetReadLimit(wsReadLimit)

	send := func(f frame) error {
		_ = conn.SetWriteDeadline(time.Now().Add(wsWriteTimeout))
		return conn.WriteJSON(f)
	}

	for {
		var in inFrame
		if err := conn.ReadJSON(&in); err != nil {
			var syn *json.SyntaxError
			var typ *json.UnmarshalTypeError
			if errors.As(err, &syn) || errors.As(err, &typ) {
				if send(errFrame("bad frame")) != nil {
					return
				}
				continue
			}
			if !websocket.IsCloseError(err, websocket.CloseNormalClosure, websocket.CloseGoingAway, websocket.CloseNoStatusReceived) {
				log.Printf("ws %s: read: %v", id, err)
			}
			return
		}
		switch in.T {
		case "ask":
			q := strings.TrimSpace(in.Q)
			if q == "" {
				if send(errFrame("empty question")) != nil {
					return
				}
				continue
			}
			if utf8.RuneCountInString(q) > maxQuestion {
				if send(errFrame("question too long")) != nil {
					return
				}
				continue
			}
			if err := a.turn(r.Context(), id, q, send); err != nil {
				log.Printf("ws %s: %v", id, err)
				return
			}
		default:
			if send(errFrame("unknown frame type")) != nil {
				return
			}
		}
	}
}

// turn runs one question/answer exchange. It returns an error only when the
// connection is no longer usable.
func (a *App) turn(ctx context.Context, id, q string, send func(frame) error) error {
	if err := send(gotFrame()); err != nil {
		return err
	}

	hist, err := a.store.History(ctx, id)
	if err != nil {
		log.Printf("turn %s: read history: %v", id, err)
		return send(errFrame("could not load the conversation"))
	}
	conv := append(hist, Msg{R: "u", S: q})

	var sendErr error
	full, err := a.model.Stream(ctx, conv, func(piece string) error {
		if err := send(tokFrame(piece)); err != nil {
			sendErr = err
			return err
		}
		return nil
	})
	if sendErr != nil {
		// Client is gone mid-reply: nothing is stored for this turn.
		return sendErr
	}
	if err != nil {
		log.Printf("turn %s: model: %v", id, err)
		return send(errFrame("the model failed to answer"))
	}

	store := func() error {
		// Not tied to the connection: a store that has started finishes.
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), storeTimeout)
		defer cancel()
		return a.store.Append(sctx, id, Msg{R: "u", S: q}, Msg{R: "a", S: full})
	}

	if a.bugs.on("store_before_read_done") {
		// Reply is announced as complete first; the store runs afterwards
		// and its failure never reaches the client.
		if err := send(finFrame(full)); err != nil {
			return err
		}
		if err := store(); err != nil {
			log.Printf("turn %s: store: %v", id, err)
		}
		return nil
	}

	if err := store(); err != nil {
		log.Printf("turn %s: store: %v", id, err)
		return send(errFrame("could not save the reply"))
	}
	return send(finFrame(full))
}
