package kinds_test

import (
	"testing"

	"github.com/sweeper/sweeper/providers/kinds"
)

// TestAllKindsAreDistinctAndBuildable: every kind has a name of its own
// and settings that validate as a type, so a block can name it.
func TestAllKindsAreDistinctAndBuildable(t *testing.T) {
	t.Parallel()
	seen := map[string]bool{}
	for _, k := range kinds.All() {
		if k.Name == "" || seen[k.Name] {
			t.Errorf("kind %q: empty or listed twice", k.Name)
		}
		seen[k.Name] = true
		if k.NewSettings == nil || k.New == nil || k.NewSettings() == nil {
			t.Errorf("kind %s: no settings or constructor", k.Name)
		}
	}
}
