// chatd: a small LLM chat web app, written without the lab (a target of lab init's tests). One
// HTML page that sets the chat_id cookie on GET /, a WebSocket (gorilla) for the chat with frames
// of its own ({"t":"ask"} out; "got" at once, "tok" ... "fin", or "err"), the history a Redis
// Hash (HINCRBY counter, a field a message, EXPIRE in the same MULTI), replies streamed from an
// OpenAI-compatible Chat Completions endpoint. APP_BUGS=store_before_read_done: "fin" sent
// before the store, its error only logged. APP_BUGS=hset_no_expire: no EXPIRE.
package main

import (
	"context"
	"errors"
	"log"
	"net/http"
	"os"
	"os/signal"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
)

// bugs holds the names from APP_BUGS. Every deliberate defect is keyed off
// one of these names and is inactive unless named.
type bugs map[string]bool

func parseBugs(s string) bugs {
	b := bugs{}
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			b[f] = true
		}
	}
	return b
}

func (b bugs) on(name string) bool { return b[name] }

var knownBugs = []string{"store_before_read_done", "hset_no_expire"}

func getenv(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

func main() {
	log.SetFlags(log.LstdFlags | log.Lmicroseconds)

	port := getenv("PORT", "8080")
	redisURL := getenv("REDIS_URL", "redis://127.0.0.1:6379/0")
	baseURL := getenv("OPENAI_BASE_URL", "https://api.openai.com/v1")
	apiKey := os.Getenv("OPENAI_API_KEY")

	b := parseBugs(os.Getenv("APP_BUGS"))
	for name := range b {
		known := false
		for _, k := range knownBugs {
			known = known || k == name
		}
		if !known {
			log.Printf("warning: unknown APP_BUGS entry %q ignored", name)
			delete(b, name)
		}
	}
	if len(b) > 0 {
		names := make([]string, 0, len(b))
		for name := range b {
			names = append(names, name)
		}
		sort.Strings(names)
		log.Printf("APP_BUGS active: %s", strings.Join(names, ","))
	}

	opt, err := redis.ParseURL(redisURL)
	if err != nil {
		log.Fatalf("bad REDIS_URL: %v", err)
	}
	rdb := redis.NewClient(opt)
	defer rdb.Close()
	{
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		if err := rdb.Ping(ctx).Err(); err != nil {
			log.Printf("warning: redis not reachable yet: %v", err)
		}
		cancel()
	}

	app := &App{
		store: &Store{rdb: rdb, ttl: convTTL, noExpire: b.on("hset_no_expire")},
		model: &Model{
			baseURL: strings.TrimRight(baseURL, "/"),
			apiKey:  apiKey,
			name:    "gpt-4o-mini",
			client:  &http.Client{Timeout: 5 * time.Minute},
		},
		bugs: b,
	}

	srv := &http.Server{
		Addr:              "127.0.0.1:" + port,
		Handler:           app.routes(),
		ReadHeaderTimeout: 10 * time.Second,
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	go func() {
		log.Printf("listening on http://%s (model %s at %s)", srv.Addr, app.model.name, app.model.baseURL)
		if err := srv.ListenAndServe(); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Fatalf("listen: %v", err)
		}
	}()

	<-ctx.Done()
	log.Printf("shutting down")
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = srv.Shutdown(sctx)
}
