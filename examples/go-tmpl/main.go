// chatd is a tiny server-rendered chat front end with a fake model behind it.
package main

import (
	"context"
	"crypto/rand"
	"embed"
	"encoding/base32"
	"errors"
	"html/template"
	"io/fs"
	"log"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

func main() {
	redisURL := envOr("REDIS_URL", "redis://localhost:6379/0")
	port := envOr("PORT", "8080")
	bugs := parseBugs(os.Getenv("GO_BUGS"))

	opts, err := redis.ParseURL(redisURL)
	if err != nil {
		log.Fatalf("bad REDIS_URL: %v", err)
	}
	rdb := redis.NewClient(opts)
	defer rdb.Close()

	tmpl := template.Must(template.New("").Funcs(template.FuncMap{
		"initial": initial,
	}).ParseFS(templateFS, "templates/*.html"))

	app := &App{
		store:         &Store{rdb: rdb, expireNX: bugs["expire_nx"]},
		tmpl:          tmpl,
		model:         newFakeModel(),
		goroutineSave: bugs["goroutine_save"],
	}
	for b := range bugs {
		log.Printf("GO_BUGS: %s enabled", b)
	}

	static, _ := fs.Sub(staticFS, "static")
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", app.landing)
	mux.HandleFunc("POST /chat", app.newChat)
	mux.HandleFunc("GET /chat/{id}", app.showChat)
	mux.HandleFunc("POST /chat/{id}/messages", app.postMessage)
	mux.Handle("GET /static/", http.StripPrefix("/static/", http.FileServerFS(static)))

	srv := &http.Server{
		Addr:              ":" + port,
		Handler:           logRequests(mux),
		ReadHeaderTimeout: 5 * time.Second,
	}

	go func() {
		log.Printf("chatd listening on :%s (redis %s)", port, opts.Addr)
		if err := srv.ListenAndServe(); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Fatal(err)
		}
	}()

	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGINT, syscall.SIGTERM)
	<-stop
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = srv.Shutdown(ctx)
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

func parseBugs(s string) map[string]bool {
	out := map[string]bool{}
	for _, b := range strings.Split(s, ",") {
		if b = strings.TrimSpace(b); b != "" {
			out[b] = true
		}
	}
	return out
}

// newChatID returns 12 random bytes as lowercase, unpadded base32 (20 chars).
func newChatID() string {
	var b [12]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err) // crypto/rand does not fail on supported platforms
	}
	return strings.ToLower(base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(b[:]))
}

func validChatID(id string) bool {
	if len(id) != 20 {
		return false
	}
	for _, c := range id {
		if !(c >= 'a' && c <= 'z' || c >= '2' && c <= '7') {
			return false
		}
	}
	return true
}

func logRequests(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		next.ServeHTTP(w, r)
		log.Printf("%s %s %s", r.Method, r.URL.Path, time.Since(start).Round(time.Millisecond))
	})
}
