package gcal

import (
	"context"
	"fmt"

	"github.com/sweeper/sweeper/providers"
)

// RecordNamespace implements providers.RecordNamespacer: an event belongs
// to one calendar, and calendar_id names it, so blocks of one calendar
// share their records. It reads the calendar once
// (GET /calendar/v3/calendars/{calendarId}, read-only) so that a key that
// cannot read the calendar leaves the provider not ready at start, and
// answers "google_calendar:" and the calendar's id as Google gives it.
func (a *Adapter) RecordNamespace(ctx context.Context) (string, error) {
	body, err := a.get(ctx, "/calendar/v3/calendars/"+a.calendar, nil, false)
	if err != nil {
		return "", err
	}
	var cal struct {
		Kind string `json:"kind"`
		ID   string `json:"id"`
	}
	if err := providers.DecodeJSON(body, &cal); err != nil || cal.Kind != "calendar#calendar" || cal.ID == "" {
		return "", providers.Malformed(fmt.Errorf("%s: GET calendar: malformed answer: no calendar id", a.name))
	}
	return "google_calendar:" + cal.ID, nil
}

// AccountHint implements providers.AccountHinter: the calendar id, without
// a request; "" for "primary", which is each service account's own.
func (c *Config) AccountHint(func(string) string) string {
	if c.CalendarID == "" || c.CalendarID == "primary" {
		return ""
	}
	return "google_calendar:" + c.CalendarID
}
