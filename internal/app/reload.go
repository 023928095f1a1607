package app

import (
	"maps"
	"slices"
	"strings"
)

// ConfigChanges are the keys in which a configuration differs from the
// running one, by what a reload can do with them.
type ConfigChanges struct {
	// Live are the keys a reload applies to the running daemon.
	Live []string
	// Restart are the keys only a restart applies: the daemon keeps
	// running with their old values.
	Restart []string
}

// liveKeys are the keys (a key, or a table with everything under it) a
// reload applies while the daemon runs; every other key needs a restart.
// A provider's rate_limit is live too ([liveKey]).
var liveKeys = []string{"log.level", "schedules", "review", "routes"}

// liveKey reports whether key may change while the daemon runs.
func liveKey(key string) bool {
	for _, k := range liveKeys {
		if key == k || strings.HasPrefix(key, k+".") {
			return true
		}
	}
	name, setting, ok := strings.Cut(strings.TrimPrefix(key, "providers."), ".")
	return ok && name != "" && strings.HasPrefix(key, "providers.") && setting == "rate_limit"
}

// DiffConfig compares two configurations' [config.Config.Values], the
// running one's and the next one's, and sorts the keys that differ into
// those a reload applies and those that need a restart. A provider block
// added or removed is one key, providers.NAME, which needs a restart. It
// is pure: it compares, and decides nothing else.
func DiffConfig(running, next map[string]string) ConfigChanges {
	var out ConfigChanges
	seen := map[string]bool{}
	keys := slices.Sorted(maps.Keys(running))
	for k := range next {
		if _, ok := running[k]; !ok {
			keys = append(keys, k)
		}
	}
	for _, key := range keys {
		was, inRunning := running[key]
		now, inNext := next[key]
		if inRunning == inNext && was == now {
			continue
		}
		if block, ok := providerBlock(key); ok {
			_, before := running[block+".kind"]
			_, after := next[block+".kind"]
			if before != after {
				key = block
			}
		}
		if seen[key] {
			continue
		}
		seen[key] = true
		if liveKey(key) {
			out.Live = append(out.Live, key)
		} else {
			out.Restart = append(out.Restart, key)
		}
	}
	slices.Sort(out.Live)
	slices.Sort(out.Restart)
	return out
}

// providerBlock is the providers.NAME block key lies in.
func providerBlock(key string) (string, bool) {
	rest, ok := strings.CutPrefix(key, "providers.")
	if !ok {
		return "", false
	}
	name, _, ok := strings.Cut(rest, ".")
	return "providers." + name, ok
}
