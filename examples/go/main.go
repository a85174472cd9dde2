// A chat backend in Go (net/http and go-redis v9), written unlike the lab's other examples: a
// create call answers a nested thread object, the history is the thread itself, each thread is a
// Redis Sorted Set, and every reply of a lab message reads the same ("Noted: 6 words."). A target
// for `lab investigate`; correct by default.
//
//	REDIS_URL=redis://127.0.0.1:19521/0 PORT=19525 examples/go/chatd
//
// Listens on 127.0.0.1 only. Contract:
//
//	POST /api/threads -> 201 {"thread": {"id": "<hex>", "created_ms": ...}}
//	POST /api/threads/{id}/messages {"text": "..."} -> 200 {"reply": {"role": "assistant", "text": "..."},
//	  "seq": n}; no text -> 400 JSON; an unknown thread -> 404 JSON; Redis failing -> 503 JSON.
//	GET /api/threads/{id} -> {"thread": {"id": ..., "messages": [{"seq", "role", "text"}, ...]}}, oldest first.
//	Storage: Sorted Set thread:{id}:log, a member per message scored by its sequence number (from
//	INCRBY thread:{id}:seq), written with the TTL in one MULTI; two hours, renewed with each turn.
//	go-redis re-sends a command whose connection broke (MaxRetries, 3 by default): the MULTI's
//	members and scores are the same each time, so a re-sent turn is stored once.
//
// GO_CHAT_BUGS=detached (a bug): the turn is saved by a goroutine started after the answer is
// written, with the request's context -- which net/http cancels as the handler returns. Whether
// the write gets out first is a race; its error is only logged.
//
// GO_CHAT_BUGS=pushed (a bug): the rows go to a List by one RPUSH, the TTLs by commands of their
// own (no MULTI) -- and go-redis re-sends, by default (MaxRetries 3), a single command whose
// connection broke before its reply came: a reply lost on the way back stores the turn twice.
// (It does not re-send a MULTI once written, and the Sorted Set's members make a re-send a no-op.)
package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"log"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
)

const ttl = 2 * time.Hour

type message struct {
	Seq  int64  `json:"seq"`
	Role string `json:"role"`
	Text string `json:"text"`
}

type server struct {
	rdb      *redis.Client
	detached bool
	pushed   bool
}

func logKey(id string) string  { return "thread:" + id + ":log" }
func seqKey(id string) string  { return "thread:" + id + ":seq" }
func metaKey(id string) string { return "thread:" + id + ":meta" }

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func fail(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, map[string]string{"error": msg})
}

func (s *server) create(w http.ResponseWriter, r *http.Request) {
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	id := hex.EncodeToString(b)
	now := time.Now().UnixMilli()
	if err := s.rdb.Set(r.Context(), metaKey(id), now, ttl).Err(); err != nil {
		fail(w, http.StatusServiceUnavailable, "storage unavailable")
		return
	}
	writeJSON(w, http.StatusCreated, map[string]any{"thread": map[string]any{"id": id, "created_ms": now}})
}

// save writes both rows and renews the TTLs in one MULTI.
func (s *server) save(ctx context.Context, id string, seq int64, user, reply string) error {
	u, _ := json.Marshal(message{seq - 1, "user", user})
	a, _ := json.Marshal(message{seq, "assistant", reply})
	if s.pushed {
		if err := s.rdb.RPush(ctx, logKey(id), u, a).Err(); err != nil {
			return err
		}
		for _, k := range []string{logKey(id), seqKey(id), metaKey(id)} {
			if err := s.rdb.Expire(ctx, k, ttl).Err(); err != nil {
				return err
			}
		}
		return nil
	}
	_, err := s.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.ZAdd(ctx, logKey(id), redis.Z{Score: float64(seq - 1), Member: u}, redis.Z{Score: float64(seq), Member: a})
		p.Expire(ctx, logKey(id), ttl)
		p.Expire(ctx, seqKey(id), ttl)
		p.Expire(ctx, metaKey(id), ttl)
		return nil
	})
	return err
}

func (s *server) send(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Text string `json:"text"`
	}
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil || strings.TrimSpace(body.Text) == "" {
		fail(w, http.StatusBadRequest, "text is required")
		return
	}
	id, ctx := r.PathValue("id"), r.Context()
	n, err := s.rdb.Exists(ctx, metaKey(id)).Result()
	if err != nil {
		fail(w, http.StatusServiceUnavailable, "storage unavailable")
		return
	}
	if n == 0 {
		fail(w, http.StatusNotFound, "unknown thread")
		return
	}
	seq, err := s.rdb.IncrBy(ctx, seqKey(id), 2).Result()
	if err != nil {
		fail(w, http.StatusServiceUnavailable, "storage unavailable")
		return
	}
	reply := "Noted: " + strconv.Itoa(len(strings.Fields(body.Text))) + " words."
	if s.detached {
		writeJSON(w, http.StatusOK, map[string]any{"reply": message{seq, "assistant", reply}, "seq": seq})
		go func() { // the request's context: cancelled once this handler returns
			if err := s.save(ctx, id, seq, body.Text, reply); err != nil {
				log.Printf("saving thread %s failed: %v", id, err)
			}
		}()
		return
	}
	if err := s.save(ctx, id, seq, body.Text, reply); err != nil {
		fail(w, http.StatusServiceUnavailable, "storage unavailable")
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"reply": message{seq, "assistant", reply}, "seq": seq})
}

func (s *server) thread(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	read := s.rdb.ZRange
	if s.pushed {
		read = s.rdb.LRange
	}
	rows, err := read(r.Context(), logKey(id), 0, -1).Result()
	if err != nil {
		fail(w, http.StatusServiceUnavailable, "storage unavailable")
		return
	}
	msgs := make([]message, 0, len(rows))
	for _, row := range rows {
		var m message
		if json.Unmarshal([]byte(row), &m) == nil {
			msgs = append(msgs, m)
		}
	}
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusOK, map[string]any{"thread": map[string]any{"id": id, "messages": msgs}})
}

func main() {
	opt, err := redis.ParseURL(os.Getenv("REDIS_URL"))
	if err != nil {
		log.Fatalf("REDIS_URL: %v", err)
	}
	opt.DialTimeout, opt.ReadTimeout, opt.WriteTimeout = 3*time.Second, 5*time.Second, 5*time.Second
	bugs := os.Getenv("GO_CHAT_BUGS")
	s := &server{rdb: redis.NewClient(opt), detached: strings.Contains(bugs, "detached"), pushed: strings.Contains(bugs, "pushed")}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /api/threads", s.create)
	mux.HandleFunc("POST /api/threads/{id}/messages", s.send)
	mux.HandleFunc("GET /api/threads/{id}", s.thread)
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, map[string]bool{"ok": true})
	})
	srv := &http.Server{Addr: "127.0.0.1:" + os.Getenv("PORT"), Handler: mux}
	go func() {
		if err := srv.ListenAndServe(); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Fatal(err)
		}
	}()
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
	<-stop
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = srv.Shutdown(ctx)
	_ = s.rdb.Close()
}
