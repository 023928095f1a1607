package providers_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/sweeper/sweeper/providers"
)

// TestQuoteKeepsNoText: an error wrapping a provider's text reads as the
// adapter's words, the text's length and a digest — the same digest for
// the same text, another for another — and carries the text apart, through
// classification and redaction.
func TestQuoteKeepsNoText(t *testing.T) {
	t.Parallel()
	const said = "Votre code Acme est G-482913 : https://acme.example/l/9fQ2xZ7kLmN0pR"
	wrap := func(text string) error {
		return providers.Redact(providers.Permanent(fmt.Errorf("acme: HTTP 400 (code 1234): %w", providers.Quote(text))), "jane.doe@example.com")
	}
	err := wrap(said)
	msg := err.Error()
	for _, secret := range []string{"G-482913", "acme.example", "9fQ2xZ7kLmN0pR", "Votre code"} {
		if strings.Contains(msg, secret) {
			t.Errorf("error %q quotes %q", msg, secret)
		}
	}
	if want := "acme: HTTP 400 (code 1234): [provider text: 68 characters, digest "; !strings.HasPrefix(msg, want) {
		t.Errorf("error %q; want it to start %q", msg, want)
	}
	if class, _ := providers.Classify(err); class != providers.ClassPermanent {
		t.Errorf("class %s, want permanent", class)
	}
	var text *providers.ProviderText
	if !errors.As(err, &text) || text.Text() != said {
		t.Errorf("the text is not carried apart: %v", err)
	}
	if again := wrap(said).Error(); again != msg {
		t.Errorf("the same text digests as %q, then %q", msg, again)
	}
	if other := wrap(said + ".").Error(); other == msg || !strings.Contains(other, "69 characters") {
		t.Errorf("another text digests as %q, the first as %q", other, msg)
	}
}
