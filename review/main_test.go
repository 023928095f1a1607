package review_test

import (
	"testing"

	"github.com/sweeper/sweeper/testkit/dbtest"
)

// The tests mostly wait on the database: four at a time.
func TestMain(m *testing.M) {
	dbtest.Main(m, dbtest.Parallel(4))
}
