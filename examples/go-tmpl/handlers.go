package main

import (
	"bytes"
	"context"
	"errors"
	"html/template"
	"log"
	"net/http"
	"strings"
	"time"
)

const maxPromptLen = 4000

type App struct {
	store         *Store
	tmpl          *template.Template
	model         *fakeModel
	goroutineSave bool // GO_BUGS=goroutine_save
}

// msgView is what the "message" template renders.
type msgView struct {
	Role  string // "user" / "assistant", as stored
	Who   string // css suffix: "you" / "bot"
	Label string // shown in the badge
	Text  string
	ISO   string
	Clock string
}

func viewOf(m Message) msgView {
	v := msgView{Role: m.Role, Text: m.Text, Who: "bot", Label: "Assistant"}
	if m.Role == "user" {
		v.Who, v.Label = "you", "You"
	}
	if !m.At.IsZero() {
		t := m.At.UTC()
		v.ISO = t.Format(time.RFC3339)
		v.Clock = t.Format("15:04")
	}
	return v
}

func viewsOf(msgs []Message) []msgView {
	out := make([]msgView, len(msgs))
	for i, m := range msgs {
		out[i] = viewOf(m)
	}
	return out
}

func initial(label string) string {
	if label == "" {
		return "?"
	}
	return strings.ToUpper(label[:1])
}

// wantsFragment is true for requests made by static/chat.js.
func wantsFragment(r *http.Request) bool {
	return r.Header.Get("X-Requested-With") == "fetch"
}

func (a *App) render(w http.ResponseWriter, status int, name string, data any) {
	var buf bytes.Buffer
	if err := a.tmpl.ExecuteTemplate(&buf, name, data); err != nil {
		log.Printf("template %s: %v", name, err)
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_, _ = buf.WriteTo(w)
}

// fail answers with a short HTML snippet for the script, or a full page otherwise.
func (a *App) fail(w http.ResponseWriter, r *http.Request, status int, msg string) {
	data := map[string]any{"Status": status, "Message": msg}
	if wantsFragment(r) {
		a.render(w, status, "error_snippet", data)
		return
	}
	a.render(w, status, "error_page", data)
}

func (a *App) storeFailed(w http.ResponseWriter, r *http.Request, err error) {
	log.Printf("store error: %v", err)
	a.fail(w, r, http.StatusBadGateway, "The chat store is unavailable right now. Please try again.")
}

func (a *App) landing(w http.ResponseWriter, r *http.Request) {
	a.render(w, http.StatusOK, "landing", nil)
}

func (a *App) newChat(w http.ResponseWriter, r *http.Request) {
	id := newChatID()
	if err := a.store.CreateChat(r.Context(), id); err != nil {
		a.storeFailed(w, r, err)
		return
	}
	http.Redirect(w, r, "/chat/"+id, http.StatusSeeOther)
}

// lookupChat writes 404/502 itself and returns false when the handler should stop.
func (a *App) lookupChat(w http.ResponseWriter, r *http.Request) (string, bool) {
	id := r.PathValue("id")
	if !validChatID(id) {
		a.fail(w, r, http.StatusNotFound, "No such conversation.")
		return "", false
	}
	ok, err := a.store.ChatExists(r.Context(), id)
	if err != nil {
		a.storeFailed(w, r, err)
		return "", false
	}
	if !ok {
		a.fail(w, r, http.StatusNotFound, "No such conversation.")
		return "", false
	}
	return id, true
}

func (a *App) showChat(w http.ResponseWriter, r *http.Request) {
	id, ok := a.lookupChat(w, r)
	if !ok {
		return
	}
	msgs, err := a.store.History(r.Context(), id)
	if err != nil {
		a.storeFailed(w, r, err)
		return
	}
	a.render(w, http.StatusOK, "chat", map[string]any{
		"ID":       id,
		"Messages": viewsOf(msgs),
	})
}

func (a *App) postMessage(w http.ResponseWriter, r *http.Request) {
	id, ok := a.lookupChat(w, r)
	if !ok {
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, 64<<10)
	if err := r.ParseForm(); err != nil {
		a.fail(w, r, http.StatusBadRequest, "Could not read the form.")
		return
	}
	q := strings.TrimSpace(r.PostForm.Get("q"))
	switch {
	case q == "":
		a.fail(w, r, http.StatusBadRequest, "Type a message first.")
		return
	case len(q) > maxPromptLen:
		a.fail(w, r, http.StatusBadRequest, "That message is too long.")
		return
	}

	reply, err := a.model.Reply(r.Context(), q)
	if err != nil {
		if errors.Is(err, context.Canceled) {
			return // client went away
		}
		a.fail(w, r, http.StatusGatewayTimeout, "The assistant did not answer in time.")
		return
	}

	now := time.Now()
	turn := []Message{
		{Role: "user", Text: q, At: now},
		{Role: "assistant", Text: reply, At: now},
	}

	if a.goroutineSave {
		go func() {
			if err := a.store.SaveTurn(context.Background(), id, turn); err != nil {
				log.Printf("background save failed: %v", err)
			}
		}()
	} else if err := a.store.SaveTurn(r.Context(), id, turn); err != nil {
		a.storeFailed(w, r, err)
		return
	}

	if wantsFragment(r) {
		w.Header().Set("Vary", "X-Requested-With")
		a.render(w, http.StatusOK, "turn", viewsOf(turn))
		return
	}
	http.Redirect(w, r, "/chat/"+id+"#compose", http.StatusSeeOther)
}
