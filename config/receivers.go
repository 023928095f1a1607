package config

import (
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"
)

// Receivers a route may name.
const (
	ReceiverSlack     = "slack"
	ReceiverPagerDuty = "pagerduty"
	ReceiverWebhook   = "webhook"
)

// Receivers lists the receivers a route may name.
var Receivers = []string{ReceiverSlack, ReceiverPagerDuty, ReceiverWebhook}

// DefaultPagerDutyURL is PagerDuty's Events API v2 endpoint.
const DefaultPagerDutyURL = "https://events.pagerduty.com/v2/enqueue"

// PagerDuty configures the PagerDuty receiver (Events API v2). It is on
// when RoutingKeyEnv is set; a route sends it tickets.
type PagerDuty struct {
	// RoutingKeyEnv names the environment variable (or its _FILE variant)
	// holding the integration's routing key. Empty: PagerDuty is off.
	RoutingKeyEnv string `toml:"routing_key_env"`
	// URL is the Events API endpoint. Default
	// https://events.pagerduty.com/v2/enqueue.
	URL string `toml:"url"`
	// GiveUpAfter is how long a row's deliveries may fail before it is
	// parked for a person (`sweeper outbox replay`). Default 24h, at least
	// 1m.
	GiveUpAfter Duration `toml:"give_up_after"`
}

// On reports whether the PagerDuty receiver is configured.
func (p PagerDuty) On() bool { return p.RoutingKeyEnv != "" }

// Webhook configures the webhook receiver: one signed JSON POST per ticket
// event routed to it. It is on when URL is set.
type Webhook struct {
	// URL receives the events (https, or http to a loopback address).
	// Empty: the webhook is off.
	URL string `toml:"url"`
	// SecretEnv names the environment variable (or its _FILE variant)
	// holding the secret the Sweeper-Signature header is computed with.
	// Required with URL.
	SecretEnv string `toml:"secret_env"`
	// Timeout bounds one request. Default 10s.
	Timeout Duration `toml:"timeout"`
	// GiveUpAfter is how long a row's deliveries may fail before it is
	// parked for a person (`sweeper outbox replay`); an answer 410 Gone
	// parks it at once. Default 24h, at least 1m.
	GiveUpAfter Duration `toml:"give_up_after"`
}

// On reports whether the webhook receiver is configured.
func (w Webhook) On() bool { return w.URL != "" }

// RouteEntry sends the events of the tickets it matches to a receiver. Empty
// matchers match anything; Level is the least escalation level of the
// ticket (0 when it opens, 1 after its first escalation, …). A ticket that
// reached a receiver stays there for its later events.
type RouteEntry struct {
	// Receiver is slack, pagerduty or webhook. Required.
	Receiver string `toml:"receiver"`
	// Provider, Workflow and Reason match the ticket's ledger provider
	// block, workflow and reason.
	Provider string `toml:"provider,omitempty"`
	Workflow string `toml:"workflow,omitempty"`
	Reason   string `toml:"reason,omitempty"`
	// Level is the escalation level from which the route applies. Default
	// 0: from the ticket's opening.
	Level int `toml:"level,omitempty"`
}

// EffectiveRoutes are the routes the daemon writes for the enqueue
// trigger: the configured ones and, when none names Slack, one last route
// sending every ticket to Slack, as before routes existed.
func (c *Config) EffectiveRoutes() []RouteEntry {
	routes := slices.Clone(c.Routes)
	if !slices.ContainsFunc(routes, func(r RouteEntry) bool { return r.Receiver == ReceiverSlack }) {
		routes = append(routes, RouteEntry{Receiver: ReceiverSlack})
	}
	return routes
}

// String is how check-config shows the route.
func (r RouteEntry) String() string {
	var match []string
	for _, m := range []struct{ key, value string }{{"provider", r.Provider}, {"workflow", r.Workflow}, {"reason", r.Reason}} {
		if m.value != "" {
			match = append(match, fmt.Sprintf("%s = %q", m.key, m.value))
		}
	}
	if r.Level > 0 {
		match = append(match, fmt.Sprintf("level >= %d", r.Level))
	}
	if len(match) == 0 {
		return "every ticket -> " + r.Receiver
	}
	return strings.Join(match, ", ") + " -> " + r.Receiver
}

// Ticket reasons a route may match (review's).
var routeReasons = []string{"not_found", "multiple_matches", "payload_mismatch", "ambiguous_owner", "lookup_failed",
	"lookup_unsupported", "invalid_operation", "in_flight", "provider_failed", "provider_reversed",
	"duplicate_effect", "effect_after_failed"}

// validateReceivers checks the pagerduty, webhook and routes keys.
func (c *Config) validateReceivers(v *validator, getenv Getenv, opts Options) {
	pd := c.PagerDuty
	if pd.On() {
		v.secretEnv("pagerduty.routing_key_env", pd.RoutingKeyEnv, true, only(!opts.NoSlack, getenv))
	}
	v.receiverURL("pagerduty.url", pd.URL)
	v.duration("pagerduty.give_up_after", pd.GiveUpAfter, time.Minute)
	w := c.Webhook
	if w.On() {
		v.receiverURL("webhook.url", w.URL)
		v.secretEnv("webhook.secret_env", w.SecretEnv, true, only(!opts.NoSlack, getenv))
	} else if w.SecretEnv != "" {
		v.add("webhook.secret_env", "set webhook.url too")
	}
	v.duration("webhook.timeout", w.Timeout, time.Second)
	v.duration("webhook.give_up_after", w.GiveUpAfter, time.Minute)
	for i, r := range c.Routes {
		key := fmt.Sprintf("routes[%d]", i)
		switch r.Receiver {
		case ReceiverSlack:
		case ReceiverPagerDuty:
			if !pd.On() {
				v.add(key+".receiver", "pagerduty: set pagerduty.routing_key_env too")
			}
		case ReceiverWebhook:
			if !w.On() {
				v.add(key+".receiver", "webhook: set webhook.url too")
			}
		case "":
			v.add(key+".receiver", "required: one of %s", strings.Join(Receivers, ", "))
		default:
			v.add(key+".receiver", "must be one of %s, got %q", strings.Join(Receivers, ", "), r.Receiver)
		}
		if r.Reason != "" && !slices.Contains(routeReasons, r.Reason) {
			v.add(key+".reason", "must be a ticket reason (%s), got %q", strings.Join(routeReasons, ", "), r.Reason)
		}
		if n := len(c.Review.Escalation); r.Level < 0 || r.Level > n {
			v.add(key+".level", "must be between 0 (the ticket's opening) and %d (the last of review.escalation)", n)
		}
	}
}

// receiverURL checks an outbound receiver's URL: https, or http to a
// loopback address (a local relay, a test); no credentials in it.
func (v *validator) receiverURL(key, raw string) {
	if raw == "" {
		return
	}
	u, err := url.Parse(raw)
	switch {
	case err != nil || u.Host == "":
		v.add(key, "must be an http(s) URL")
	case u.User != nil:
		v.add(key, "must not carry credentials")
	case u.Scheme == "https":
	case u.Scheme == "http" && (u.Hostname() == "localhost" || u.Hostname() == "127.0.0.1" || u.Hostname() == "::1"):
	default:
		v.add(key, "must be an https URL (or http to localhost)")
	}
}
