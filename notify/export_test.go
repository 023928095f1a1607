package notify

import (
	"time"
)

// SetIncidentRefresh sets how often d brings ended incidents' root
// messages up to date.
func SetIncidentRefresh(d *Dispatcher, every time.Duration) { d.incidentEvery = every }
