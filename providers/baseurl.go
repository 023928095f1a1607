package providers

import (
	"errors"
	"net/url"
)

// CheckBaseURL validates an adapter's endpoint or API base: an absolute
// http or https URL, without credentials (they come from *_env keys),
// query or fragment. The error says what is wrong; the caller prefixes the
// key. credentialsFrom names where credentials belong, for the message.
func CheckBaseURL(raw, credentialsFrom string) error {
	u, err := url.Parse(raw)
	switch {
	case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "":
		return errors.New("must be an absolute http or https URL")
	case u.User != nil:
		return errors.New("must not carry credentials; use " + credentialsFrom)
	case u.Fragment != "":
		return errors.New("must not have a fragment")
	}
	return nil
}
