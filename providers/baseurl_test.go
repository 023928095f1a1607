package providers_test

import (
	"net/url"
	"testing"

	"github.com/sweeper/sweeper/providers"
)

func TestCheckAPIBase(t *testing.T) {
	t.Parallel()
	for raw, want := range map[string]string{
		"":                            "",
		"https://api.example.com/v3":  "",
		"ftp://api.example.com":       "api_base: must be an absolute http or https URL",
		"https://u:p@api.example.com": "api_base: must not carry credentials; use key_env",
		"https://api.example.com/#x":  "api_base: must not have a fragment",
		"https://api.example.com/?a":  "api_base: must not have a query or a fragment",
		"https://api.example.com/?":   "api_base: must not have a query or a fragment",
	} {
		err := providers.CheckAPIBase(raw, "key_env")
		if got := errText(err); got != want {
			t.Errorf("CheckAPIBase(%q) = %q, want %q", raw, got, want)
		}
	}
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func TestRebase(t *testing.T) {
	t.Parallel()
	u, _ := url.Parse("https://api.example.com/v3/a%2Fb/events")
	if got := providers.Rebase(*u, nil); got.String() != u.String() {
		t.Errorf("nil base: %s", got.String())
	}
	base, _ := url.Parse("http://127.0.0.1:8080/proxy/")
	if got, want := providers.Rebase(*u, base), "http://127.0.0.1:8080/proxy/v3/a%2Fb/events"; got.String() != want {
		t.Errorf("Rebase = %s, want %s", got.String(), want)
	}
}
