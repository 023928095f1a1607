package review_test

import (
	"testing"

	"github.com/sweeper/sweeper/testkit/dbtest"
)

func TestMain(m *testing.M) { dbtest.Main(m) }
