package web

import (
	"bytes"
	"cmp"
	"context"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"strings"
	"time"

	"github.com/sweeper/sweeper/internal/safetext"
	"github.com/sweeper/sweeper/review"
)

//go:embed templates/*.html static/*
var assets embed.FS

// Prefix is where the page is served.
const Prefix = "/review"

// MinCookieKey is the least length of [Config.CookieKey], in bytes.
const MinCookieKey = 32

// Config configures [New].
type Config struct {
	// Store applies the actions. Required.
	Store *review.Store
	// Reader reads the queue and the tickets. Required.
	Reader *review.Reader
	// Deciders is who may act on a ticket: its owner and the reviewers.
	Deciders review.Deciders
	// Users maps each e-mail a trusted proxy may name to a Slack user id.
	// Anyone not in it sees nothing. The proxy's e-mail matches a key
	// with ASCII letters folded and any other character exactly as
	// written ([safetext.FoldASCII]); two keys that fold to one address
	// for two people are an error.
	Users map[string]string
	// Viewers are Slack user ids who may look but never act.
	Viewers []string
	// ProxyHeader is the header a trusted proxy names the person in.
	// Required.
	ProxyHeader string
	// TrustedProxies are the addresses a request carrying ProxyHeader may
	// come from; from anywhere else it is refused. Required. Only their
	// X-Forwarded-Proto is believed, in either way of signing in.
	TrustedProxies []netip.Prefix
	// CookieKey signs the session cookies: at least [MinCookieKey] bytes.
	CookieKey []byte
	// SessionTTL is how long a session lasts. Default 12h.
	SessionTTL time.Duration
	// InsecureCookies allows the Secure attribute off the session cookie:
	// for a plain-HTTP loopback listener only, where a browser would not
	// send a Secure cookie back. Even then the cookie is Secure for a
	// request that reached sweeper over HTTPS: PublicURL is https, or a
	// trusted proxy says X-Forwarded-Proto: https.
	InsecureCookies bool
	// PublicURL is the page's address as browsers reach it, if known: an
	// https one makes every cookie Secure.
	PublicURL string
	// MessageURL, when set, returns the link to a ticket's Slack message,
	// or "" when it has none.
	MessageURL func(ctx context.Context, ticketID int64) (string, error)
	// GroupTickets, when set, returns the tickets of an alert group (its
	// Slack message says its number): the queue's group filter. Without
	// it the filter is refused.
	GroupTickets func(ctx context.Context, group int64) ([]int64, error)
	// ActiveSilences, when set, returns the silences active now, which the
	// queue and the silences page list.
	ActiveSilences func(ctx context.Context) ([]ListedSilence, error)
	// HeldBy, when set, returns for each ticket's labels, in order, the
	// id of the active silence holding its notifications now, or 0: the
	// queue marks the tickets held.
	HeldBy func(ctx context.Context, labels []review.Labels) ([]int64, error)
	// AddSilence, when set with ExpireSilence, adds the silence a reviewer
	// asks for on the silences page, by the rules of `sweeper silences
	// add`, and returns it with what its author should be warned of. A
	// silence the rules refuse is a *[RefusedError], and nothing is stored.
	AddSilence func(ctx context.Context, draft SilenceDraft) (ListedSilence, []string, error)
	// ExpireSilence, when set with AddSilence, ends silence id now, by a
	// Slack user id: the silences' Expire buttons. [ErrSilenceGone] when it
	// does not exist or has ended already; a *[RefusedError] when the rules
	// refuse.
	ExpireSilence func(ctx context.Context, id int64, by string) (ListedSilence, error)
	// PreviewSilence, when set with AddSilence, tells what the silence a
	// reviewer drafts would hold now — its open tickets and their
	// providers — by the rules AddSilence adds it by, without adding it:
	// the silences form's Preview button. A draft the rules refuse is a
	// *[RefusedError]; a preview needs no comment.
	PreviewSilence func(ctx context.Context, draft SilenceDraft) (SilencePreview, error)
	// Slack, when set, signs people in with Slack instead of through a
	// proxy: ProxyHeader and TrustedProxies are then unused, and a proxy
	// header means nothing.
	Slack *SlackSignIn
	// Logger receives a line per action and per refusal. Default
	// slog.Default().
	Logger *slog.Logger
	// Now is the clock. Default time.Now.
	Now func() time.Time
}

// Handler serves the review page under [Prefix]. Mount it at Prefix+"/".
type Handler struct {
	store    *review.Store
	reader   *review.Reader
	deciders review.Deciders
	users    map[string]string
	mapped   map[string]bool
	viewers  map[string]bool
	header   string
	trusted  []netip.Prefix
	sessions sessions
	// plainOK: the listener is plain loopback and PublicURL is not
	// https, so a request that does not say HTTPS gets a plain cookie.
	plainOK  bool
	link     func(ctx context.Context, ticketID int64) (string, error)
	group    func(ctx context.Context, group int64) ([]int64, error)
	silences func(ctx context.Context) ([]ListedSilence, error)
	heldBy   func(ctx context.Context, labels []review.Labels) ([]int64, error)
	// addSilence and expireSilence change the silences; both or neither.
	addSilence     func(ctx context.Context, draft SilenceDraft) (ListedSilence, []string, error)
	expireSilence  func(ctx context.Context, id int64, by string) (ListedSilence, error)
	previewSilence func(ctx context.Context, draft SilenceDraft) (SilencePreview, error)
	oidc           *oidcClient
	logger         *slog.Logger
	now            func() time.Time
	pages          map[string]*template.Template
	root           http.Handler
}

var _ http.Handler = (*Handler)(nil)

// New returns the review page configured by cfg. Its error names what is
// missing.
func New(cfg Config) (*Handler, error) {
	var errs []error
	if cfg.Store == nil || cfg.Reader == nil {
		errs = append(errs, errors.New("web: Store and Reader are required"))
	}
	if (cfg.AddSilence == nil) != (cfg.ExpireSilence == nil) || (cfg.AddSilence != nil && cfg.ActiveSilences == nil) {
		errs = append(errs, errors.New("web: AddSilence and ExpireSilence go together, with ActiveSilences"))
	}
	switch s := cfg.Slack; {
	case s != nil:
		if s.Issuer == "" || s.ClientID == "" || s.ClientSecret == "" || s.TeamID == "" || s.RedirectURL == "" {
			errs = append(errs, errors.New("web: Sign in with Slack needs its Issuer, ClientID, ClientSecret, TeamID and RedirectURL"))
		}
	case cfg.ProxyHeader == "" || len(cfg.TrustedProxies) == 0:
		errs = append(errs, errors.New("web: ProxyHeader and TrustedProxies are required"))
	}
	if len(cfg.CookieKey) < MinCookieKey {
		errs = append(errs, fmt.Errorf("web: CookieKey must hold at least %d bytes", MinCookieKey))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	h := &Handler{
		store:    cfg.Store,
		reader:   cfg.Reader,
		deciders: cfg.Deciders,
		users:    map[string]string{},
		mapped:   map[string]bool{},
		viewers:  map[string]bool{},
		header:   cfg.ProxyHeader,
		trusted:  cfg.TrustedProxies,
		sessions: sessions{key: cfg.CookieKey, ttl: cmp.Or(cfg.SessionTTL, 12*time.Hour), path: Prefix + "/"},
		plainOK:  cfg.InsecureCookies && !strings.HasPrefix(strings.ToLower(cfg.PublicURL), "https:"),
		link:     cfg.MessageURL,
		group:    cfg.GroupTickets,
		silences: cfg.ActiveSilences,
		heldBy:   cfg.HeldBy,
		logger:   cmp.Or(cfg.Logger, slog.Default()).With("component", "web"),
		now:      cfg.Now,
	}
	for _, email := range slices.Sorted(maps.Keys(cfg.Users)) {
		id, key := cfg.Users[email], emailKey(email)
		if other, ok := h.users[key]; ok && other != id {
			errs = append(errs, fmt.Errorf("web: Users %q and %q are one address (ASCII letters fold) for two people, %s and %s",
				firstKey(cfg.Users, key), email, other, id))
			continue
		}
		h.users[key] = id
		h.mapped[id] = true
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	for _, id := range cfg.Viewers {
		h.viewers[id] = true
		h.mapped[id] = true
	}
	if cfg.Slack != nil {
		h.oidc = &oidcClient{cfg: *cfg.Slack}
		for _, id := range cfg.Slack.Members {
			h.mapped[id] = true
		}
	}
	if h.now == nil {
		h.now = time.Now
	}
	if cfg.AddSilence != nil && cfg.ExpireSilence != nil {
		h.addSilence, h.expireSilence, h.previewSilence = cfg.AddSilence, cfg.ExpireSilence, cfg.PreviewSilence
	}
	var err error
	if h.pages, err = parsePages(); err != nil {
		return nil, err
	}

	mux := http.NewServeMux()
	static, _ := fs.Sub(assets, "static")
	mux.Handle("GET "+Prefix+"/static/", http.StripPrefix(Prefix+"/static/", http.FileServerFS(static)))
	if h.oidc != nil {
		mux.HandleFunc("GET "+Prefix+"/signin", h.signIn)
		mux.HandleFunc("GET "+Prefix+"/callback", h.callback)
	}
	mux.Handle("GET "+Prefix+"/{$}", h.signedIn(h.queue))
	mux.Handle("GET "+Prefix+"/tickets/{id}", h.signedIn(h.ticket))
	mux.Handle("GET "+Prefix+"/tickets/{id}/confirm", h.signedIn(h.confirm))
	mux.Handle("POST "+Prefix+"/tickets/{id}/{action}", h.signedIn(h.posted(h.act)))
	mux.Handle("GET "+Prefix+"/bulk", h.signedIn(h.bulkConfirm))
	mux.Handle("POST "+Prefix+"/bulk", h.signedIn(h.posted(h.bulk)))
	if h.silences != nil {
		mux.Handle("GET "+Prefix+"/silences", h.signedIn(h.silencesList))
	}
	if h.addSilence != nil {
		mux.Handle("POST "+Prefix+"/silences", h.signedIn(h.posted(h.addSilenceForm)))
		mux.Handle("POST "+Prefix+"/silences/{id}/expire", h.signedIn(h.posted(h.expireSilenceForm)))
	}
	mux.Handle(Prefix+"/", h.signedIn(func(w http.ResponseWriter, r *http.Request, _ viewer) {
		h.fail(w, r, http.StatusNotFound, "There is no such page here.")
	}))

	cop := http.NewCrossOriginProtection()
	cop.SetDenyHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.logger.Warn("web: cross-origin request refused", "path", r.URL.Path)
		h.fail(w, r, http.StatusForbidden, "This request came from another site and was refused; nothing was changed.")
	}))
	h.root = cop.Handler(mux)
	return h, nil
}

// ServeHTTP answers one request: with the safety headers always, a page
// for every error, no panic past it, and HTML and CSS gzip-compressed for
// a client that accepts it.
func (h *Handler) ServeHTTP(rw http.ResponseWriter, r *http.Request) {
	w := compress(rw, r)
	defer func() {
		if err := w.Close(); err != nil {
			h.logger.Debug("web: end a compressed response", "path", r.URL.Path, "error", err)
		}
	}()
	hd := w.Header()
	hd.Set("Content-Security-Policy", "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; "+
		"frame-ancestors 'none'; base-uri 'none'")
	hd.Set("X-Frame-Options", "DENY")
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("Referrer-Policy", "same-origin")
	hd.Set("Cache-Control", "no-store")
	defer func() {
		if v := recover(); v != nil {
			if v == http.ErrAbortHandler {
				panic(v)
			}
			h.logger.Error("web: panic", "path", r.URL.Path, "panic", fmt.Sprint(v))
			h.fail(w, r, http.StatusInternalServerError, "Something went wrong on sweeper's side; nothing more was changed.")
		}
	}()
	h.root.ServeHTTP(w, r)
}

// viewer is the person a request is from.
type viewer struct {
	User  string // Slack user id
	Token string // the session's form token
	// ReadOnly: a viewer, who may not act.
	ReadOnly bool
	sess     session
}

// signedIn passes requests from a signed-in, mapped person to next.
//
// A request carrying the proxy header must come from a trusted proxy and
// name a mapped person; it starts a session (or keeps the one it has, for
// the same person). A request without it needs a valid session cookie.
func (h *Handler) signedIn(next func(http.ResponseWriter, *http.Request, viewer)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		now := h.now()
		sess, sessErr := h.sessions.read(r, now)
		if h.oidc != nil {
			// Signed in with Slack: the session is the only identity.
			if sessErr != nil {
				if r.Method == http.MethodGet {
					http.Redirect(w, r, Prefix+"/signin", http.StatusSeeOther)
					return
				}
				h.fail(w, r, http.StatusUnauthorized, "You are not signed in: sign in with Slack, then try again.")
				return
			}
		} else if values := r.Header.Values(h.header); len(values) > 0 {
			if !h.fromTrustedProxy(r) {
				h.logger.Warn("web: identity header from an untrusted address refused", "remote", r.RemoteAddr)
				h.fail(w, r, http.StatusForbidden, "This request names a person but does not come through the trusted proxy; it was refused.")
				return
			}
			user, ok := "", len(values) == 1
			if ok {
				user, ok = h.users[emailKey(values[0])]
			}
			if !ok || user == "" {
				h.logger.Warn("web: a person not in web.users refused")
				h.fail(w, r, http.StatusForbidden, "You are not allowed to see this page: ask for your e-mail to be added to web.users.")
				return
			}
			if sessErr != nil || sess.user != user {
				sess = h.sessions.issue(w, user, now, h.secureCookie(r))
			}
		} else if sessErr != nil {
			h.fail(w, r, http.StatusUnauthorized, "You are not signed in: open this page through your organisation's sign-in proxy.")
			return
		}
		if !h.mapped[sess.user] {
			// Removed from web.users since the session began.
			h.fail(w, r, http.StatusForbidden, "You are not allowed to see this page: ask for your e-mail to be added to web.users.")
			return
		}
		next(w, r, viewer{User: sess.user, Token: h.sessions.token(sess), ReadOnly: h.viewers[sess.user], sess: sess})
	})
}

// emailKey is how an e-mail is compared: trimmed, with its ASCII letters
// folded and every other character exactly as written. Unicode case
// folding would let a look-alike from the proxy (the Kelvin sign U+212A
// for k) name a mapped person.
func emailKey(email string) string { return safetext.FoldASCII(strings.TrimSpace(email)) }

// firstKey is the first of users' keys, in order, whose emailKey is key.
func firstKey(users map[string]string, key string) string {
	for _, email := range slices.Sorted(maps.Keys(users)) {
		if emailKey(email) == key {
			return email
		}
	}
	return ""
}

// fromTrustedProxy reports whether r's connection comes from a trusted
// proxy.
func (h *Handler) fromTrustedProxy(r *http.Request) bool {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	addr, err := netip.ParseAddr(host)
	if err != nil {
		return false
	}
	addr = addr.Unmap()
	for _, p := range h.trusted {
		if p.Contains(addr) {
			return true
		}
	}
	return false
}

// secureCookie reports whether the cookies set in answer to r are Secure:
// always, unless the listener is plain loopback and r reached it over
// plain HTTP — neither over TLS nor through a trusted proxy that says
// X-Forwarded-Proto: https. The header from any other peer is ignored.
func (h *Handler) secureCookie(r *http.Request) bool {
	if !h.plainOK || r.TLS != nil {
		return true
	}
	proto, _, _ := strings.Cut(r.Header.Get("X-Forwarded-Proto"), ",")
	return strings.EqualFold(strings.TrimSpace(proto), "https") && h.fromTrustedProxy(r)
}

// posted checks what every change needs: the session's form token (the
// cross-origin check ran before), a form within size, and a person who
// may act at all.
func (h *Handler) posted(next func(http.ResponseWriter, *http.Request, viewer)) func(http.ResponseWriter, *http.Request, viewer) {
	return func(w http.ResponseWriter, r *http.Request, v viewer) {
		r.Body = http.MaxBytesReader(w, r.Body, 64<<10)
		if err := r.ParseForm(); err != nil {
			h.fail(w, r, http.StatusBadRequest, "This form could not be read; nothing was changed.")
			return
		}
		if !h.sessions.checkToken(v.sess, r.PostForm.Get("token")) {
			h.logger.Warn("web: a change without its session token refused", "path", r.URL.Path)
			h.fail(w, r, http.StatusForbidden, "This form is outdated or did not come from this page; nothing was changed. Reload the page and try again.")
			return
		}
		if v.ReadOnly {
			h.fail(w, r, http.StatusForbidden, "You may look at tickets here but not act on them; nothing was changed.")
			return
		}
		next(w, r, v)
	}
}

// render writes page name with data, status code, whole or not at all.
func (h *Handler) render(w http.ResponseWriter, status int, name string, data any) {
	var buf bytes.Buffer
	if err := h.pages[name].ExecuteTemplate(&buf, "layout", data); err != nil {
		h.logger.Error("web: render", "page", name, "error", err)
		status, buf = http.StatusInternalServerError, *bytes.NewBufferString(errorFallback)
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}

const errorFallback = `<!doctype html><title>sweeper</title><p>Something went wrong on sweeper's side.</p>`

// errorPage is what an error page shows.
type errorPage struct {
	Title, Message string
	Me             viewer
	Status         int
}

// fail answers with an error page.
func (h *Handler) fail(w http.ResponseWriter, _ *http.Request, status int, message string) {
	h.render(w, status, "error", errorPage{Title: http.StatusText(status), Message: message, Status: status})
}

// parsePages parses each page with the layout.
func parsePages() (map[string]*template.Template, error) {
	funcs := template.FuncMap{
		"when": func(t time.Time) string {
			if t.IsZero() {
				return "—"
			}
			return t.UTC().Format("2006-01-02 15:04 UTC")
		},
		"whenp": func(t *time.Time) string {
			if t == nil {
				return "—"
			}
			return t.UTC().Format("2006-01-02 15:04 UTC")
		},
		"person": person,
		"iso":    func(t time.Time) string { return t.UTC().Format(time.RFC3339) },
		"deref":  func(t *time.Time) time.Time { return *t },
		"col": func(name, label string, cols map[string]column) sortable {
			return sortable{Name: name, Label: label, Col: cols[name], Order: cols[name].Order}
		},
		"silenceRows": func(list []ListedSilence, mayChange bool, me viewer) silencesPage {
			return silencesPage{Silences: list, MayChange: mayChange, Me: me}
		},
	}
	pages := map[string]*template.Template{}
	for _, name := range []string{"queue", "ticket", "confirm", "bulk", "silences", "error"} {
		t, err := template.New(name).Funcs(funcs).ParseFS(assets, "templates/layout.html", "templates/parts.html", "templates/"+name+".html")
		if err != nil {
			return nil, fmt.Errorf("web: page %s: %w", name, err)
		}
		pages[name] = t
	}
	return pages, nil
}

// person shows an actor: "slack:U123" as the user id.
func person(actor string) string { return strings.TrimPrefix(actor, "slack:") }
