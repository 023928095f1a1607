package providers

import (
	"context"
	"errors"
	"io"
	"net/http"
	"sync"
)

// Whose failure a lookup's failure is. A provider's health
// (health) must count only the provider's own failures: a
// connection refused or reset, a timeout, a 5xx, a 429 past the wait the
// provider asked for ([refusals]). An answer the
// provider gave that cannot be read — a malformed body, a record id the
// ledger cannot hold, an HTML page where JSON was due — is that operation's
// problem: its own budget ends it in a lookup_failed ticket, and it says
// the provider is there. Adapters word their errors their own way, so the
// lookup also watches its HTTP exchanges as they cross the read-only
// transport, which every HTTP adapter sends through.

// exchanges records what the HTTP requests of one lookup got back. Safe for
// concurrent use (an adapter may send requests side by side).
type exchanges struct {
	mu       sync.Mutex
	answered int // responses that were the provider's answer (1xx–4xx but 408 and 429), read to the end
	failed   int // requests that failed, 5xx, 408, 429, and bodies cut off
}

type exchangesKey struct{}

// watchExchanges returns ctx carrying a record of the HTTP exchanges made
// under it, and that record.
func watchExchanges(ctx context.Context) (context.Context, *exchanges) {
	ex := &exchanges{}
	return context.WithValue(ctx, exchangesKey{}, ex), ex
}

// exchangesOf is the record ctx carries, or nil.
func exchangesOf(ctx context.Context) *exchanges {
	ex, _ := ctx.Value(exchangesKey{}).(*exchanges)
	return ex
}

// observe records one exchange's outcome and returns it, with a body that
// records a read cut off by the provider.
func (ex *exchanges) observe(resp *http.Response, err error) (*http.Response, error) {
	if ex == nil {
		return resp, err
	}
	ex.mu.Lock()
	defer ex.mu.Unlock()
	switch {
	case err != nil || resp == nil:
		ex.failed++
	case resp.StatusCode >= 500 || resp.StatusCode == http.StatusRequestTimeout || resp.StatusCode == http.StatusTooManyRequests:
		ex.failed++
	default:
		ex.answered++
		if resp.Body != nil {
			resp.Body = &watchedBody{ReadCloser: resp.Body, ex: ex}
		}
	}
	return resp, err
}

// onlyAnswered reports whether the lookup made HTTP requests and every one
// of them was answered by the provider, bodies read without a fault.
func (ex *exchanges) onlyAnswered() bool {
	if ex == nil {
		return false
	}
	ex.mu.Lock()
	defer ex.mu.Unlock()
	return ex.answered > 0 && ex.failed == 0
}

// watchedBody is a response body whose reading, cut off by anything but
// its end, counts as a failed exchange: a connection reset mid-answer is
// the provider's failure, not an unreadable answer.
type watchedBody struct {
	io.ReadCloser
	ex   *exchanges
	once sync.Once
}

func (b *watchedBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err != nil && !errors.Is(err, io.EOF) {
		b.once.Do(func() {
			b.ex.mu.Lock()
			b.ex.failed++
			b.ex.mu.Unlock()
		})
	}
	return n, err
}

// errUnreadable marks an answer a provider gave that could not be read,
// for [Unreadable], where [Malformed] (which also makes a whole batch
// answer be asked again one operation at a time) is not meant.
var errUnreadable = errors.New("unreadable answer")

type unreadableError struct{ err error }

func (e *unreadableError) Error() string        { return e.err.Error() }
func (e *unreadableError) Unwrap() error        { return e.err }
func (e *unreadableError) Is(target error) bool { return target == errUnreadable }

// unreadable is err, an answer the provider gave that cannot be read, as a
// transient error [Unreadable] recognises.
func unreadable(err error) error { return Transient(&unreadableError{err}) }

// Unreadable reports whether err says the provider answered, but its answer
// could not be read: [Malformed], strict JSON refused ([ErrMalformedJSON]),
// or a record sweeper cannot hold. Such an error is transient for its
// operation — asked again within its budget, then a lookup_failed ticket —
// and is never the provider's failure.
func Unreadable(err error) bool {
	return errors.Is(err, ErrMalformed) || errors.Is(err, ErrMalformedJSON) || errors.Is(err, errUnreadable)
}

// providersFault reports whether err, the error of a request to the
// provider, is the provider's own failure, for its health: transient, and
// either out of time (timedOut), or neither an unreadable answer nor the
// error of a lookup whose every HTTP exchange the provider answered (ex).
// A permanent error and an unsupported search are the provider
// answering; a rate limit is judged by the provider's refusals instead
// ([request.done]).
func providersFault(err error, timedOut bool, ex *exchanges) bool {
	if err == nil {
		return false
	}
	if class, _ := Classify(err); class != ClassTransient {
		return false
	}
	if timedOut {
		return true
	}
	return !Unreadable(err) && !ex.onlyAnswered()
}
