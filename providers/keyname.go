package providers

import (
	"errors"
	"regexp"
)

// keyNameRE is a plain name of at most 40 characters, which needs no
// escaping in a URL's query nor in a provider's query language.
var keyNameRE = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,40}$`)

// CheckKeyName validates name, the value of key: the name under which a
// workflow sends the op_key to its provider (a metadata key, a custom
// argument, a user variable). It must be 1-40 letters, digits, '_', '-'
// or '.'; the error starts with key.
func CheckKeyName(key, name string) error {
	if !keyNameRE.MatchString(name) {
		return errors.New(key + ": must be 1-40 letters, digits, '_', '-' or '.'")
	}
	return nil
}
