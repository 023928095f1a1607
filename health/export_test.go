package health

import "time"

// Forget drops what t read of the state and when it last asked for a
// probe's turn, as a second passing does: for tests that change the row
// under it.
func (t *Tracker) Forget() {
	t.mu.Lock()
	t.notBefore = time.Time{}
	t.mu.Unlock()
	t.forget()
}
