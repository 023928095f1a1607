package web

import (
	"crypto/hmac"
	"net/http"
	"net/url"

	"github.com/sweeper/sweeper/internal/safetext"
)

// maxFlash is the most characters a flash message carries.
const maxFlash = 1000

// seeOther answers a POST with 303 See Other to path (under [Prefix]) with
// query q, carrying notice — what the action did — or problem — why it
// did nothing — for the page it lands on: a reload of that page is a GET
// and changes nothing. The message is signed with the session key, so a
// link from elsewhere cannot put words on sweeper's page.
func (h *Handler) seeOther(w http.ResponseWriter, r *http.Request, path string, q url.Values, notice, problem string) {
	if q == nil {
		q = url.Values{}
	}
	notice, problem = safetext.TruncateChars(notice, maxFlash), safetext.TruncateChars(problem, maxFlash)
	if notice != "" || problem != "" {
		q.Set("notice", notice)
		q.Set("problem", problem)
		q.Set("sig", h.sessions.sign(flashPayload(notice, problem)))
		if notice == "" {
			q.Del("notice")
		}
		if problem == "" {
			q.Del("problem")
		}
	}
	target := Prefix + path
	if len(q) > 0 {
		target += "?" + q.Encode()
	}
	http.Redirect(w, r, target, http.StatusSeeOther)
}

// flash reads what [Handler.seeOther] carried to this page; nothing when
// the signature does not hold.
func (h *Handler) flash(r *http.Request) (notice, problem string) {
	q := r.URL.Query()
	notice, problem = q.Get("notice"), q.Get("problem")
	if notice == "" && problem == "" {
		return "", ""
	}
	if !hmac.Equal([]byte(q.Get("sig")), []byte(h.sessions.sign(flashPayload(notice, problem)))) {
		return "", ""
	}
	return notice, problem
}

func flashPayload(notice, problem string) string { return "flash\x00" + notice + "\x00" + problem }
