package silence_test

import (
	"testing"

	"github.com/sweeper/sweeper/internal/testkit/dbtest"
)

func TestMain(m *testing.M) { dbtest.Main(m) }
