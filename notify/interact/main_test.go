package interact_test

import (
	"testing"

	"github.com/sweeper/sweeper/testkit/dbtest"
)

// TestMain drops the package's shared database when its tests are done.
func TestMain(m *testing.M) { dbtest.Main(m) }
