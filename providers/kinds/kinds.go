// Package kinds is the one list of the adapter kinds sweeper is built
// with, which the command, the configuration's tests and the documentation
// tests all read. Adding an adapter is a package under providers/, a line
// here, and a block in config.example.toml.
package kinds

import (
	"github.com/sweeper/sweeper/providers"
	"github.com/sweeper/sweeper/providers/gcal"
	"github.com/sweeper/sweeper/providers/httplookup"
	"github.com/sweeper/sweeper/providers/hubspot"
	"github.com/sweeper/sweeper/providers/mailgun"
	"github.com/sweeper/sweeper/providers/postgres"
	"github.com/sweeper/sweeper/providers/postmark"
	"github.com/sweeper/sweeper/providers/quickbooks"
	"github.com/sweeper/sweeper/providers/sendgrid"
	"github.com/sweeper/sweeper/providers/sim"
	"github.com/sweeper/sweeper/providers/stripe"
	"github.com/sweeper/sweeper/providers/twilio"
	"github.com/sweeper/sweeper/providers/xero"
)

// All returns every kind, in the order configuration errors list them.
func All() providers.Kinds {
	return providers.Kinds{
		sim.Kind,
		httplookup.Kind,
		stripe.Kind,
		twilio.Kind,
		postmark.Kind,
		mailgun.Kind,
		sendgrid.Kind,
		postgres.Kind,
		hubspot.Kind,
		gcal.Kind,
		xero.Kind,
		quickbooks.Kind,
	}
}
