package web

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// cookieName is the session cookie's name.
const cookieName = "sweeper_review"

// session is a signed-in person: their Slack user id, when the session
// ends, and the nonce its form token derives from.
type session struct {
	user    string
	expires time.Time
	nonce   string
}

// sessions signs and reads session cookies with one key.
type sessions struct {
	key  []byte
	ttl  time.Duration
	path string
}

var errBadSession = errors.New("no valid session")

func (s sessions) sign(payload string) string {
	m := hmac.New(sha256.New, s.key)
	m.Write([]byte("session\x00" + payload))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// issue starts a session for user, set on w (a Secure cookie when secure),
// and returns it.
func (s sessions) issue(w http.ResponseWriter, user string, now time.Time, secure bool) session {
	b := make([]byte, 16)
	rand.Read(b) //nolint:errcheck // crypto/rand.Read never fails (Go 1.24+)
	sess := session{user: user, expires: now.Add(s.ttl).Truncate(time.Second), nonce: hex.EncodeToString(b)}
	payload := sess.user + "|" + strconv.FormatInt(sess.expires.Unix(), 10) + "|" + sess.nonce
	http.SetCookie(w, &http.Cookie{
		Name:     cookieName,
		Value:    base64.RawURLEncoding.EncodeToString([]byte(payload)) + "." + s.sign(payload),
		Path:     s.path,
		Expires:  sess.expires,
		MaxAge:   int(s.ttl / time.Second),
		HttpOnly: true,
		Secure:   secure,
		SameSite: http.SameSiteLaxMode,
	})
	return sess
}

// read returns the session r's cookie holds, when its signature holds and
// it has not expired.
func (s sessions) read(r *http.Request, now time.Time) (session, error) {
	c, err := r.Cookie(cookieName)
	if err != nil {
		return session{}, errBadSession
	}
	enc, sig, ok := strings.Cut(c.Value, ".")
	if !ok {
		return session{}, errBadSession
	}
	raw, err := base64.RawURLEncoding.DecodeString(enc)
	if err != nil {
		return session{}, errBadSession
	}
	payload := string(raw)
	if !hmac.Equal([]byte(sig), []byte(s.sign(payload))) {
		return session{}, errBadSession
	}
	parts := strings.Split(payload, "|")
	if len(parts) != 3 || parts[0] == "" || parts[2] == "" {
		return session{}, errBadSession
	}
	exp, err := strconv.ParseInt(parts[1], 10, 64)
	if err != nil || !now.Before(time.Unix(exp, 0)) {
		return session{}, errBadSession
	}
	return session{user: parts[0], expires: time.Unix(exp, 0), nonce: parts[2]}, nil
}

// token is the session's form token: every POST must carry it.
func (s sessions) token(sess session) string {
	m := hmac.New(sha256.New, s.key)
	m.Write([]byte("form\x00" + sess.nonce))
	return hex.EncodeToString(m.Sum(nil)[:16])
}

// checkToken reports whether got is sess's form token.
func (s sessions) checkToken(sess session, got string) bool {
	return got != "" && hmac.Equal([]byte(got), []byte(s.token(sess)))
}
