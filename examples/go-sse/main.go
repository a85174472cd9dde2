// chatd: a small streaming chat server, written without the lab (a target of lab investigate:
// examples/go-sse.toml).
//
// One page at "/", a session token handed out by POST /api/session and sent
// back in the X-Chat-Token header, answers streamed as server-sent events
// (event: token ... event: finish, or event: failure when the store fails), and
// a per-session transcript kept in a Redis sorted set, its EXPIRE renewed in the
// same MULTI. The model is called over plain net/http (OPENAI_BASE_URL).
//
// APP_BUGS=goroutine_save: finish sent, the store left to a goroutine whose error is
// only logged -> acked_write_refused, stored_after_answer. APP_BUGS=no_renew: the
// EXPIRE set only with the first entry -> ttl_not_renewed.
package main

import (
	"context"
	_ "embed"
	"errors"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
)

//go:embed index.html
var indexHTML []byte

const (
	tokenHeader = "X-Chat-Token"
	modelName   = "gpt-4o-mini"
)

// bugs holds the deliberately wrong behaviours switched on by APP_BUGS.
type bugs struct {
	goroutineSave bool // finish is sent first, the store runs in a goroutine and its error is only logged
	noRenew       bool // EXPIRE only set when the first entry is written
}

func parseBugs(s string) bugs {
	var b bugs
	for _, name := range strings.Split(s, ",") {
		switch strings.TrimSpace(name) {
		case "":
		case "goroutine_save":
			b.goroutineSave = true
		case "no_renew":
			b.noRenew = true
		default:
			log.Printf("APP_BUGS: unknown flag %q ignored", name)
		}
	}
	return b
}

type app struct {
	store *store
	model *modelClient
	bugs  bugs
}

func getenv(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

func main() {
	log.SetFlags(log.LstdFlags | log.Lmicroseconds)

	opts, err := redis.ParseURL(getenv("REDIS_URL", "redis://127.0.0.1:6379/0"))
	if err != nil {
		log.Fatalf("REDIS_URL: %v", err)
	}
	rdb := redis.NewClient(opts)
	defer rdb.Close()

	b := parseBugs(os.Getenv("APP_BUGS"))
	a := &app{
		store: &store{rdb: rdb, ttl: 2 * time.Hour, noRenew: b.noRenew},
		model: &modelClient{
			baseURL: strings.TrimRight(getenv("OPENAI_BASE_URL", "https://api.openai.com/v1"), "/"),
			apiKey:  os.Getenv("OPENAI_API_KEY"),
			model:   modelName,
			http:    &http.Client{Transport: http.DefaultTransport},
		},
		bugs: b,
	}

	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", a.handleIndex)
	mux.HandleFunc("POST /api/session", a.handleSession)
	mux.HandleFunc("POST /api/ask", a.handleAsk)
	mux.HandleFunc("GET /api/transcript", a.handleTranscript)

	addr := net.JoinHostPort("127.0.0.1", getenv("PORT", "8080"))
	srv := &http.Server{
		Addr:              addr,
		Handler:           logRequests(mux),
		ReadHeaderTimeout: 10 * time.Second,
		// No WriteTimeout: answers are streamed and may take a while.
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	go func() {
		log.Printf("chatd listening on http://%s (bugs: goroutine_save=%v no_renew=%v)", addr, b.goroutineSave, b.noRenew)
		if err := srv.ListenAndServe(); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Fatalf("listen: %v", err)
		}
	}()

	<-ctx.Done()
	log.Printf("shutting down")
	shutCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_ = srv.Shutdown(shutCtx)
}

type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (r *statusRecorder) WriteHeader(code int) {
	r.status = code
	r.ResponseWriter.WriteHeader(code)
}

// Unwrap lets http.ResponseController reach the real writer (for Flush).
func (r *statusRecorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

func logRequests(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		rec := &statusRecorder{ResponseWriter: w, status: http.StatusOK}
		next.ServeHTTP(rec, r)
		log.Printf("%s %s %d %s", r.Method, r.URL.Path, rec.status, time.Since(start).Round(time.Millisecond))
	})
}
