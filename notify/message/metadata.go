package message

import "github.com/slack-go/slack"

// EventType is the event_type of the metadata of every message sweeper
// posts, a ticket's, an alert group's or an incident's alike.
const EventType = "sweeper_ticket"

// Subject is what a message is about, as its metadata names it: a ticket,
// an alert group or a provider incident.
type Subject struct {
	// idKey is the metadata's key for id: "ticket_id", "group_id" or
	// "incident_id".
	idKey string
	id    int64
}

// AboutTicket is the subject of ticket id's messages.
func AboutTicket(id int64) Subject { return Subject{idKey: "ticket_id", id: id} }

// AboutGroup is the subject of alert group id's own message.
func AboutGroup(id int64) Subject { return Subject{idKey: "group_id", id: id} }

// AboutIncident is the subject of provider incident id's messages.
func AboutIncident(id int64) Subject { return Subject{idKey: "incident_id", id: id} }

// Metadata is what a message about s, delivering the outbox row of
// dedupeKey, carries to be found again after an uncertain post ([Carries]):
// under [EventType], the key and s's id. Opaque ids only: metadata is
// visible to the whole workspace. It is the one builder of the metadata,
// for the messages built here and for the dispatcher's posts and edits.
func Metadata(dedupeKey string, s Subject) slack.SlackMetadata {
	return slack.SlackMetadata{EventType: EventType, EventPayload: map[string]any{
		"dedupe_key": dedupeKey, s.idKey: s.id,
	}}
}

// Carries reports whether m, a message read back from Slack, is the one
// posted for dedupeKey: its [Metadata] holds that key.
func Carries(m slack.Message, dedupeKey string) bool {
	if m.Metadata.EventType != EventType {
		return false
	}
	key, _ := m.Metadata.EventPayload["dedupe_key"].(string)
	return key == dedupeKey
}
