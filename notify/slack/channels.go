package slack

import (
	"cmp"
)

// Channels picks the channel of a ticket's alerts (slack.channel and
// slack.channels): the workflow's, else the provider's, else the default.
// Use channel ids (C…): conversations.history, which finds a message after
// an uncertain post, does not take names.
type Channels struct {
	Default   string
	Workflows map[string]string
	Providers map[string]string
}

// For returns the channel for a ticket of workflow and provider.
func (c Channels) For(workflow, provider string) string {
	return cmp.Or(c.Workflows[workflow], c.Providers[provider], c.Default)
}
