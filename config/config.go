// Package config loads sweeper's TOML configuration: strict decoding (an
// unknown key is an error), defaults, environment overrides, and validation
// whose messages name the key ("providers.stripe.stale_after: must be at
// least 1m"), all problems at once.
//
// Secrets never live in the file: credentials are named by environment
// variable (*_env keys, SLACK_BOT_TOKEN, SLACK_SIGNING_SECRET,
// SWEEPER_RIVERUI_USER, SWEEPER_RIVERUI_PASSWORD), and a database URL in the
// file may not carry a password.
package config

import (
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/BurntSushi/toml"
	"github.com/robfig/cron/v3"

	"github.com/sweeper/sweeper/internal/safetext"
	"github.com/sweeper/sweeper/ledger"
)

// Environment variables sweeper reads.
const (
	EnvConfig            = "SWEEPER_CONFIG"
	EnvDatabaseURL       = "SWEEPER_DATABASE_URL"
	EnvSlackToken        = "SLACK_BOT_TOKEN"
	EnvSlackSigning      = "SLACK_SIGNING_SECRET"
	EnvRiverUIUser       = "SWEEPER_RIVERUI_USER"
	EnvRiverUIPass       = "SWEEPER_RIVERUI_PASSWORD"
	EnvWebCookieKey      = "SWEEPER_WEB_COOKIE_KEY"
	EnvSlackClientSecret = "SLACK_CLIENT_SECRET"
	DefaultPath          = "sweeper.toml"
	defaultListen        = "127.0.0.1:8080"
	defaultPriority      = "normal"
	defaultMaxConns      = 20
	defaultBatchSize     = 500
	maxBatchSize         = 10000
	maxLookupBudget      = 12 * time.Hour
	maxShutdownGrace     = time.Hour
)

// Config is the whole configuration. The zero value is not usable: use
// [Load] or [Parse], which apply defaults and validate.
type Config struct {
	// Database is where the ledger, sweeper's tables and River's live.
	Database Database `toml:"database"`
	// Ledger names the table the operations live in: ledger.operations,
	// or a table of the shop's own, mapped.
	Ledger Ledger `toml:"ledger"`
	// Schedules are the periodic jobs' cron expressions.
	Schedules Schedules `toml:"schedules"`
	// Sweep tunes the stale scan.
	Sweep Sweep `toml:"sweep"`
	// River tunes the job queue.
	River River `toml:"river"`
	// Providers are the lookup adapters by ledger provider name: a ledger
	// row whose provider column is NAME is looked up with [providers.NAME].
	Providers map[string]*Provider `toml:"-"`
	// Review sets who owns tickets, for how long, and how they escalate.
	Review Review `toml:"review"`
	// Slack is where review alerts go.
	Slack Slack `toml:"slack"`
	// HTTP is the daemon's own endpoint (health, metrics, Slack actions).
	HTTP HTTP `toml:"http"`
	// Log sets how much every command logs, and in which format.
	Log Log `toml:"log"`
	// Web is the review page: the queue of tickets in a browser.
	Web Web `toml:"web"`
	// Retention says how long finished work is kept.
	Retention Retention `toml:"retention"`
	// PagerDuty and Webhook are receivers besides Slack; Routes say which
	// tickets go to which receiver (every ticket to Slack by default).
	PagerDuty PagerDuty    `toml:"pagerduty"`
	Webhook   Webhook      `toml:"webhook"`
	Routes    []RouteEntry `toml:"routes"`

	// sources says where each key's value came from, by path: the
	// environment (with its variable's name) or the file; any other key
	// has its default.
	sources map[string]string
	// ledgerTable is the table [Ledger] names, once validated.
	ledgerTable *ledger.Table
}

// Database configures the connection.
type Database struct {
	// URL is a postgres:// URL. SWEEPER_DATABASE_URL overrides it, and is the
	// only place a password may appear (or PGPASSWORD, or ~/.pgpass).
	URL string `toml:"url"`
	// MaxConns caps the connection pool. Default 20.
	MaxConns int32 `toml:"max_conns"`
	// AllowMaintenanceDatabase lets URL name the database called
	// postgres, which a cluster is created with for administration and
	// which is refused otherwise: a copied example would put sweeper's
	// tables there. Some hosted offers give only that one. Default false.
	AllowMaintenanceDatabase bool `toml:"allow_maintenance_database"`
}

// Schedules holds cron expressions in the standard five-field syntax
// (cron.ParseStandard), descriptors such as "@every 30s" included; an
// optional CRON_TZ= prefix sets the time zone (UTC otherwise). An expression
// that never fires ("0 0 30 2 *") or fires more often than once a second
// ("@every 500ms") is refused.
type Schedules struct {
	// Sweep finds stale pending operations. Default "*/5 * * * *".
	Sweep string `toml:"sweep"`
	// Escalate looks at tickets past their deadline. Default "* * * * *".
	Escalate string `toml:"escalate"`
	// Notify delivers the outbox to Slack (when slack.channel is set).
	// Default "@every 5s".
	Notify string `toml:"notify"`
	// Prune deletes what retention.outbox no longer keeps. Default
	// "@every 1h".
	Prune string `toml:"prune"`
	// Audit looks settled operations of the providers with audit = true
	// up once more (see [Provider.Audit]). Default "@every 5m".
	Audit string `toml:"audit"`
}

// Sweep tunes the stale scan.
type Sweep struct {
	// BatchSize is how many rows one keyset page of the scan reads.
	// Default 500, at most 10000.
	BatchSize int `toml:"batch_size"`
	// QueryTimeout bounds each page's query. Default 30s.
	QueryTimeout Duration `toml:"query_timeout"`
	// Timeout bounds a whole sweep. River rescues jobs left running by a
	// crashed process only after the longest job timeout, so this also
	// bounds how long a crash can delay settling. Default 2m.
	Timeout Duration `toml:"timeout"`
}

// Retention says how long finished work is kept before the prune job
// (schedules.prune) or River deletes it. Tickets and their audit events are
// kept for good: the database refuses their deletion (append-only).
type Retention struct {
	// Outbox is how long a ticket's Slack outbox rows are kept once the
	// ticket is resolved and every one of its rows is final (sent, skipped
	// or dismissed), counted from the last of them. Rows of open tickets,
	// pending or parked rows, and the rows of alert groups and incidents
	// are kept. Default 720h (30 days), at least 1h.
	Outbox Duration `toml:"outbox"`
	// Jobs is how long River keeps its completed and cancelled jobs;
	// River's own cleaner deletes them (discarded jobs keep River's 7
	// days). Default 24h, at least 1m.
	Jobs Duration `toml:"jobs"`
	// ResolvedTickets is how long a resolved ticket and its audit events
	// are kept, counted from its resolution; "0s", the default, keeps them
	// for good. When set, the prune job first writes each ticket due, with
	// its events, to a file in ArchiveDir (the JSON lines of `sweeper
	// tickets export --format jsonl`), then deletes it with its outbox rows;
	// sweeper.ticket_archives keeps which file holds each. At least 24h,
	// and not shorter than Outbox.
	ResolvedTickets Duration `toml:"resolved_tickets"`
	// ArchiveDir is the existing directory the archive files are written
	// to; required with ResolvedTickets, an absolute path.
	ArchiveDir string `toml:"archive_dir"`
}

// River tunes the job queue.
type River struct {
	// MaxWorkers is how many lookups one process runs at once. Default 100.
	MaxWorkers int `toml:"max_workers"`
	// ShutdownGrace is how long running jobs get to finish after SIGTERM or
	// SIGINT before they are cancelled (a cancelled lookup is retried by
	// the next process). Default 30s, between 1s and 1h.
	ShutdownGrace Duration `toml:"shutdown_grace"`
}

// Provider is one [providers.NAME] block: the keys every kind shares, and
// the kind's own settings.
type Provider struct {
	// Kind selects the adapter: one of the kinds sweeper was built with.
	Kind string `toml:"kind"`
	// StaleAfter is how long a pending row waits before it is looked up.
	// Default 15m, at least 1m.
	StaleAfter Duration `toml:"stale_after"`
	// LookupTimeout bounds one call to the provider. Default 10s.
	LookupTimeout Duration `toml:"lookup_timeout"`
	// LookupBudget bounds all attempts for one operation, retries included;
	// past it the operation gets a lookup_failed ticket. Default 10m.
	LookupBudget Duration `toml:"lookup_budget"`
	// RateLimit is the most requests per second the cluster sends the
	// provider: each process keeps it, and every replica takes from one
	// bucket in PostgreSQL (health's Rate). Default 10.
	RateLimit float64 `toml:"rate_limit"`
	// Concurrency is the most requests in flight to the provider from this
	// process. Default 4.
	Concurrency int `toml:"concurrency"`
	// SettleWindow is how long after an operation's first attempt an empty
	// answer proves nothing yet, because the provider's search may lag: the
	// lookup is tried again when the window ends, without spending an
	// attempt or budget, and only then is "not found" decided. Default: the
	// kind's (Stripe 10m, Postmark and SendGrid 5m, Mailgun 30m, others 0s);
	// at most 24h.
	SettleWindow Duration `toml:"settle_window"`
	// OutageAfter is how many different operations the provider must fail
	// in a row, in one process, with no answer in between, to be down for
	// the whole cluster (its own failures: timeouts, 5xx, dropped
	// connections — an answer it gave that cannot be read is the
	// operation's, not the provider's; so are the failures of an
	// operation it failed while it answered others): its lookups then pause,
	// spending no budget and opening no lookup_failed ticket, until a probe
	// is answered. 0 turns it off: every operation's lookups spend their
	// own budget, and end as lookup_failed. Default 5, at most 1000.
	OutageAfter int `toml:"outage_after"`
	// InFlightFor is how long after an operation's first attempt a record
	// the provider reports still in flight (a scheduled message, an
	// uncaptured authorisation, a payment processing) is waited for: the
	// lookup is asked again meanwhile, spending no attempt or budget, and
	// only past it does an in_flight ticket open (which is looked up again
	// on the re-lookup schedule and settles by itself). Default 1h, between
	// 1m and 960h (40 days).
	InFlightFor Duration `toml:"in_flight_for"`
	// RecordNamespace, for an http or postgres block, names the system its
	// records live in, when several blocks look into one: blocks of a kind
	// naming one record_namespace hold a record to one operation among all
	// their rows. Default none: the block is a namespace of its own. Other
	// kinds' namespace is the account they reach, read at start.
	RecordNamespace string `toml:"record_namespace,omitempty"`
	// MaxOutage is how long the provider may stay down for the cluster
	// before its waiting operations — the stale pending ones, those its
	// lookups hold included — move to review in one step, as lookup_failed
	// tickets that say for how long it was down; they are looked up again
	// when it answers, and settle by themselves then. 0 never moves them:
	// they wait for the provider however long it is down. Default 1h; 0 or
	// between 1m and 720h.
	MaxOutage Duration `toml:"max_outage"`
	// Audit turns on the audit of the provider's settled operations: each
	// done or failed operation is looked up once more, audit_after after it
	// settled, and a second record of a done operation's effect
	// (duplicate_effect) or the effect of a failed one (effect_after_failed)
	// becomes a ticket; the ledger row is never changed. One request per
	// operation, or per batch for a provider that batches. Default false.
	Audit bool `toml:"audit"`
	// AuditAfter is how long after an operation settled it is audited:
	// long enough for a late duplicate to appear and for the provider's
	// search to list it. Default 1h, between 1m and 720h.
	AuditAfter Duration `toml:"audit_after"`
	// AuditLookback is how far back settled operations are audited, counted
	// from now; older ones are left alone. Default 72h, at least
	// audit_after, at most 2160h (90 days).
	AuditLookback Duration `toml:"audit_lookback"`
	// AuditRate is the most audit requests a second this process sends the
	// provider; each also takes its turn in rate_limit, shared with the
	// lookups, which come first. Default (0) 1, or rate_limit when that is
	// lower; at most rate_limit.
	AuditRate float64 `toml:"audit_rate"`

	// Settings holds the kind's own keys (url, token_env, rules, …).
	Settings Settings `toml:"-"`
}

// NamespaceKinds are the kinds whose blocks may name a record_namespace:
// their records live wherever their URL or query says, which no account
// names.
var NamespaceKinds = []string{"http", "postgres"}

// Review configures tickets.
type Review struct {
	// DefaultOwner owns a ticket when no workflow or provider owner matches.
	// Required. A Slack user id (U…) when Slack is on.
	DefaultOwner string `toml:"default_owner"`
	// Owners maps a workflow or provider name to the ticket's owner; a
	// workflow owner wins over a provider owner.
	Owners Owners `toml:"owners"`
	// Window is how long the first owner has before the ticket escalates.
	// Default 24h.
	Window Duration `toml:"window"`
	// Priority is a new ticket's priority. Default "normal".
	Priority string `toml:"priority"`
	// Escalation lists the levels an expired ticket moves through, in order.
	Escalation []EscalationLevel `toml:"escalation"`
	// RepeatEvery is how often the last level re-alerts once its window has
	// passed. Default: the last level's window.
	RepeatEvery Duration `toml:"repeat_every,omitempty"`
	// MaxRepeats caps those re-alerts. Default 3.
	MaxRepeats int `toml:"max_repeats"`
	// AckTimeout is how long an acknowledgement holds at level 0 (the first
	// owner), and at every escalation level that sets no ack_timeout of its
	// own: once it has passed, a ticket still open at the level it was
	// acknowledged at is re-alerted once and escalates again as if nobody
	// had acknowledged it. Default 0s: no timeout; else at least 1m.
	AckTimeout Duration `toml:"ack_timeout,omitempty"`
	// RelookupAfter is when an open not_found or lookup_failed ticket is
	// first looked up again, from its opening; each later re-lookup waits
	// twice as long, up to RelookupMax. A ticket whose record turns up is
	// resolved as done by itself. Default 1m, at least 10s.
	RelookupAfter Duration `toml:"relookup_after"`
	// RelookupMax caps the wait between re-lookups. Default 1h, at least
	// relookup_after.
	RelookupMax Duration `toml:"relookup_max"`
}

// Owners maps names to owners.
type Owners struct {
	Workflows map[string]string `toml:"workflows"`
	Providers map[string]string `toml:"providers"`
}

// EscalationLevel is one step of the escalation policy.
type EscalationLevel struct {
	// Owner takes the ticket at this level. Required.
	Owner string `toml:"owner"`
	// Priority at this level: low, normal, high or urgent. Required.
	Priority string `toml:"priority"`
	// Window is how long this level's owner has before the next step.
	// Required, at least 1m.
	Window Duration `toml:"window"`
	// AckTimeout is how long an acknowledgement at this level holds.
	// Default: review.ack_timeout; "0s" turns it off at this level.
	AckTimeout Duration `toml:"ack_timeout,omitempty"`
}

// Slack configures review alerts and the buttons on them.
type Slack struct {
	// Channel receives alerts; empty turns Slack off. Needs SLACK_BOT_TOKEN,
	// and SLACK_SIGNING_SECRET to verify button clicks.
	Channel string `toml:"channel"`
	// Channels overrides Channel per workflow or provider (workflow wins).
	Channels Owners `toml:"channels"`
	// APIURL overrides Slack's Web API base URL (tests, proxies). Default
	// https://slack.com/api/.
	APIURL string `toml:"api_url"`
	// Reviewers are Slack user ids (U… or W…) allowed to act on any ticket
	// from Slack, besides the ticket's owner. Default: none (the owner only).
	Reviewers []string `toml:"reviewers"`
	// TeamID, when set, is the only Slack workspace (T…, or E… for an
	// Enterprise Grid org) whose button clicks are accepted. Default "": not
	// checked.
	TeamID string `toml:"team_id"`
	// AppID, when set, is the only Slack app (A…) whose button clicks are
	// accepted. Default "": not checked.
	AppID string `toml:"app_id"`
	// MaxAlertAge is the age past which an alert is not posted but parked
	// in the outbox: every ticket event writes an outbox row, Slack on or
	// off, and turning Slack on must not post a backlog of stale alerts.
	// Default 24h; greater than 0.
	MaxAlertAge Duration `toml:"max_alert_age"`
	// GroupWait is how long a ticket's first alert waits before it is
	// posted: a ticket resolved by then is never alerted, and the tickets
	// opened meanwhile for the same provider and reason in the same channel
	// may be posted as one group. Default 30s; 0 posts at once.
	GroupWait Duration `toml:"group_wait"`
	// GroupThreshold is how many tickets, at least, opened within the wait
	// for the same provider and reason and bound for the same channel, are
	// posted as one group message rather than one message each; a ticket
	// whose alert is due while such a group has open tickets joins it.
	// Default 3; 0 never groups.
	GroupThreshold *int `toml:"group_threshold"`
	// GroupDetailLimit is how many tickets of one alert group, at most, get
	// their own alert in its thread; the others are counted in the group's
	// message (their outbox rows folded), which says how to list them all.
	// It bounds too the messages of their own that a folded ticket's owner
	// gets per group and group_interval (an escalation to them, a
	// contradiction), at least one.
	// Default 10; 0: none, the group's message alone; at most 1000.
	GroupDetailLimit *int `toml:"group_detail_limit"`
	// GroupInterval is how often, at most, an alert group's message is
	// edited to its counts, across every replica (Alertmanager's
	// group_interval). Default 1m, at least 5s.
	GroupInterval Duration `toml:"group_interval"`
	// IncidentRefresh is how often, at most, the messages of a provider
	// incident that ended within the last hour (its root and its closing
	// reply) are edited to the counts as the provider's backlog settles;
	// each only when its counts changed. Default 30s, at least 5s.
	IncidentRefresh Duration `toml:"incident_refresh"`
}

// DefaultGroupThreshold is slack.group_threshold's default.
const DefaultGroupThreshold = 3

// DefaultGroupDetailLimit is slack.group_detail_limit's default;
// MaxGroupDetailLimit its greatest value.
const (
	DefaultGroupDetailLimit = 10
	MaxGroupDetailLimit     = 1000
)

// DetailLimit is slack.group_detail_limit, or its default when unset.
func (s Slack) DetailLimit() int {
	if s.GroupDetailLimit == nil {
		return DefaultGroupDetailLimit
	}
	return *s.GroupDetailLimit
}

// Threshold is slack.group_threshold, or its default when unset.
func (s Slack) Threshold() int {
	if s.GroupThreshold == nil {
		return DefaultGroupThreshold
	}
	return *s.GroupThreshold
}

// HTTP configures the daemon's endpoints.
type HTTP struct {
	// Listen is host:port. Default 127.0.0.1:8080 (loopback only). It
	// serves what must face outside (Slack interactivity), and, unless
	// AdminListen is set, the admin endpoints too.
	Listen string `toml:"listen"`
	// AdminListen is host:port for the admin endpoints — /metrics,
	// /healthz, /readyz and River's UI — apart from Listen, so that what
	// faces Slack does not expose them and a scrape flood cannot crowd the
	// probes. Default "": served on Listen.
	AdminListen string `toml:"admin_listen"`
	// MetricsRefresh is how often one background loop reads the state
	// gauges (operations, tickets, outbox, jobs, provider health) from the
	// database, on one connection of its own; /metrics serves the last
	// reading from memory and never queries. Default 15s, between 1s and
	// 10m.
	MetricsRefresh Duration `toml:"metrics_refresh"`
	// RiverUI serves River's web UI (jobs and queues) at /riverui, behind
	// HTTP basic auth with the credentials in SWEEPER_RIVERUI_USER and
	// SWEEPER_RIVERUI_PASSWORD, both required. The UI can cancel, retry
	// and delete jobs and pause queues. Default false.
	RiverUI bool `toml:"river_ui"`
}

// Ways to sign in to the review page ([Web.Auth]).
const (
	// WebAuthProxy trusts a proxy in front of sweeper (oauth2-proxy and
	// the like) to have signed the person in: it names them by e-mail in
	// a header, which [Web.Users] maps to a Slack user id.
	WebAuthProxy = "proxy"
	// WebAuthSlack is Sign in with Slack (OpenID Connect): the person's
	// Slack user id comes from Slack itself, from the workspace
	// slack.team_id.
	WebAuthSlack = "slack"
)

// WebAuths lists the values web.auth accepts.
var WebAuths = []string{WebAuthProxy, WebAuthSlack}

// DefaultSlackIssuer is web.issuer's default: Slack's OpenID issuer.
const DefaultSlackIssuer = "https://slack.com"

// Web configures the review page, served under /review/ on the admin
// listener (http.admin_listen) when there is one, else on http.listen: it
// is a surface for the people who review, not for Slack, and belongs
// beside the other endpoints people open rather than on the one that
// faces Slack's requests.
type Web struct {
	// Enabled serves the page. Needs SWEEPER_WEB_COOKIE_KEY (or _FILE),
	// at least 32 bytes, which signs the session cookies. Default false.
	Enabled bool `toml:"enabled"`
	// Auth is how people sign in: "proxy" (a trusted proxy names them in
	// ProxyHeader) or "slack" (Sign in with Slack). Default "proxy".
	Auth string `toml:"auth"`
	// SlackClientID is the Slack app's client id, for auth = "slack"; its
	// secret is SLACK_CLIENT_SECRET (or _FILE). The workspace is checked
	// against slack.team_id, which is then required.
	SlackClientID string `toml:"slack_client_id"`
	// PublicURL is the page's address as browsers reach it
	// (https://sweeper.example.com), for auth = "slack": Slack sends people
	// back to PublicURL/review/callback.
	PublicURL string `toml:"public_url"`
	// Issuer is the OpenID Connect issuer for auth = "slack". Default
	// https://slack.com.
	Issuer string `toml:"issuer"`
	// ProxyHeader is the header in which the proxy names the signed-in
	// person by e-mail. Default "X-Forwarded-Email".
	ProxyHeader string `toml:"proxy_header"`
	// TrustedProxies are the CIDRs the proxy connects from (e.g.
	// ["127.0.0.1/32"]); a request from anywhere else that carries
	// ProxyHeader is refused. Required with auth = "proxy".
	TrustedProxies []string `toml:"trusted_proxies"`
	// Users maps each e-mail the proxy may name to a Slack user id
	// ("anna@example.com" = "U0ANNA"): the identity every action is
	// checked and recorded with. Anyone not mapped sees nothing. With
	// auth = "slack", the Slack user ids allowed in are these, the
	// viewers, slack.reviewers and the owners review names.
	Users map[string]string `toml:"users"`
	// Viewers are Slack user ids (among Users' values) who may look but
	// never act. Default: none.
	Viewers []string `toml:"viewers"`
	// SessionTTL is how long a session cookie lasts. Default 12h, between
	// 5m and 168h.
	SessionTTL Duration `toml:"session_ttl"`
}

// Log configures the logs every command writes to stderr.
type Log struct {
	// Level is the least severe level logged: "debug", "info", "warn" or
	// "error". Default "info".
	Level string `toml:"level"`
	// Format is "json" (one JSON object a line) or "text" (slog's
	// key=value lines). Default "": text when stderr is a terminal, JSON
	// otherwise (a container's log collector, a file).
	Format string `toml:"format"`
}

// Log levels and formats log.level and log.format accept.
var (
	LogLevels  = []string{"debug", "info", "warn", "error"}
	LogFormats = []string{"json", "text"}
)

// DefaultMetricsRefresh is http.metrics_refresh unless set.
const DefaultMetricsRefresh = 15 * time.Second

// Priorities are the ticket priorities, lowest first.
var Priorities = []string{"low", "normal", "high", "urgent"}

// Getenv looks up an environment variable; os.Getenv in production, a map
// in tests.
type Getenv func(string) string

// Options change what loading checks.
type Options struct {
	// NoLookups is for commands that never call a provider (tickets,
	// outbox, notify, migrate, healthcheck): the providers' credentials
	// (token_env, dsn_env, …) are not read, so an unset variable is no
	// problem. The variables' names are still checked, and everything
	// else is as strict as without it.
	NoLookups bool
	// NoSlack is for commands that never call Slack (tickets, outbox,
	// migrate, healthcheck, providers): SLACK_BOT_TOKEN and
	// SLACK_SIGNING_SECRET need not be set; their names are still checked.
	NoSlack bool
	// NoInteractivity is for commands that post to Slack but serve no
	// button clicks (sweep --once, escalate --once, notify):
	// SLACK_SIGNING_SECRET need not be set.
	NoInteractivity bool
	// NoRiverUI is for every command but run, which alone serves River's
	// UI: its credentials need not be set.
	NoRiverUI bool
	// NoWeb is for every command but run, which alone serves the review
	// page: its cookie key need not be set.
	NoWeb bool
	// Environ is the process's environment as os.Environ gives it: each
	// SWEEPER_ variable in it that sets no key (a typo such as
	// SWEEPER_SWEP_BATCH_SIZE) is a problem, as an unknown key in the file
	// is. Nil checks nothing.
	Environ []string
}

// only is getenv when a command reads the secret, nil (names checked, no
// value required) when it does not.
func only(reads bool, getenv Getenv) Getenv {
	if !reads {
		return nil
	}
	return getenv
}

// Load reads the file at path and returns the validated configuration. The
// error lists every problem found, one per line.
func Load(path string, kinds Kinds, getenv Getenv) (*Config, error) {
	return LoadWith(path, kinds, getenv, Options{})
}

// LoadWith is [Load] with options.
func LoadWith(path string, kinds Kinds, getenv Getenv, opts Options) (*Config, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return ParseWith(string(b), kinds, getenv, opts)
}

// Parse decodes TOML text, applies defaults and the environment, and
// validates. Decoding stops at a syntax or type error (reported with its
// line); otherwise every unknown key and every invalid value is reported.
func Parse(text string, kinds Kinds, getenv Getenv) (*Config, error) {
	return ParseWith(text, kinds, getenv, Options{})
}

// ParseWith is [Parse] with options.
func ParseWith(text string, known Kinds, getenv Getenv, opts Options) (*Config, error) {
	kinds := kindList(known)
	// Decoding over the defaults keeps an explicit zero ("batch_size = 0")
	// apart from an absent key: the first is validated, the second defaulted.
	var raw struct {
		Config
		Providers map[string]toml.Primitive `toml:"providers"`
	}
	raw.Config = Default()
	// The environment's keys go into the file's tree before it is decoded,
	// so that they are decoded, defaulted and validated as the file's are.
	var tree map[string]any
	if _, err := toml.Decode(text, &tree); err != nil {
		return nil, decodeError(err)
	}
	fromEnv, problems := applyEnvironment(tree, kinds, getenv)
	problems = append(problems, unknownEnv(opts.Environ, tree, kinds)...)
	if len(fromEnv) > 0 {
		var b strings.Builder
		if err := toml.NewEncoder(&b).Encode(tree); err != nil {
			return nil, err
		}
		text = b.String()
	}
	md, err := toml.Decode(text, &raw)
	if err != nil {
		return nil, decodeError(err)
	}
	cfg := raw.Config
	cfg.sources = sourcesOf(tree, fromEnv, getenv)
	cfg.Providers = map[string]*Provider{}
	skip := map[string]bool{} // blocks whose kind is unknown: their keys are not "unknown keys"
	for _, name := range sortedKeys(raw.Providers) {
		p := defaultProvider()
		if err := md.PrimitiveDecode(raw.Providers[name], p); err != nil {
			return nil, fmt.Errorf("providers.%s: %w", name, err)
		}
		cfg.Providers[name] = p
		i := slices.IndexFunc(kinds, func(k Kind) bool { return k.Name == p.Kind })
		if i < 0 {
			skip[name] = true
			continue
		}
		if !p.SettleWindow.set {
			p.SettleWindow = NewDuration(kinds[i].SettleWindow)
		}
		p.Settings = kinds[i].NewSettings()
		if err := md.PrimitiveDecode(raw.Providers[name], p.Settings); err != nil {
			return nil, fmt.Errorf("providers.%s: %w", name, err)
		}
		if d, ok := p.Settings.(Defaulter); ok {
			d.ApplyDefaults()
		}
	}
	for _, key := range md.Undecoded() {
		if len(key) >= 2 && key[0] == "providers" && skip[key[1]] {
			continue
		}
		problems = append(problems, fmt.Errorf("%s: unknown key", key))
	}
	var urlProblems []error
	cfg.Database.URL, urlProblems = databaseURL(cfg.Database.URL, getenv)
	problems = append(problems, urlProblems...)
	if len(urlProblems) == 0 && cfg.Database.URL != "" {
		problems = append(problems, checkDatabaseChoice(cfg.Database.URL, cfg.Database.AllowMaintenanceDatabase)...)
	}
	problems = append(problems, placeholders(tree)...)
	problems = append(problems, cfg.validate(kinds, getenv, opts)...)
	if len(problems) > 0 {
		return nil, &Error{Problems: problems}
	}
	if n := len(cfg.Review.Escalation); n > 0 && !cfg.Review.RepeatEvery.set {
		cfg.Review.RepeatEvery = cfg.Review.Escalation[n-1].Window
	}
	for i := range cfg.Review.Escalation {
		if !cfg.Review.Escalation[i].AckTimeout.set {
			cfg.Review.Escalation[i].AckTimeout = cfg.Review.AckTimeout
		}
	}
	return &cfg, nil
}

// typeError is how the TOML decoder words a value of the wrong type: it
// carries the key, not a line.
var typeError = regexp.MustCompile(`^toml: \(last key "([^"]*)"\): (.*)$`)

// decodeError is err from the TOML decoder as a user reads it: a syntax
// error names its line already; a value of the wrong type is named by its
// key, in the configuration's own (lower-case) spelling.
func decodeError(err error) error {
	if m := typeError.FindStringSubmatch(err.Error()); m != nil {
		return &Error{Problems: []error{fmt.Errorf("%s: %s", strings.ToLower(m[1]), m[2])}}
	}
	return err
}

// Error lists every problem found in a configuration.
type Error struct {
	Problems []error
}

func (e *Error) Error() string {
	lines := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		lines[i] = p.Error()
	}
	return strings.Join(lines, "\n")
}

// Unwrap exposes the problems to errors.Is and errors.As.
func (e *Error) Unwrap() []error { return e.Problems }

// Default returns the configuration an empty file gives: every default
// applied, no providers, no owner (which Validate requires).
func Default() Config {
	return Config{
		Database:  Database{MaxConns: defaultMaxConns},
		Schedules: Schedules{Sweep: "*/5 * * * *", Escalate: "* * * * *", Notify: "@every 5s", Prune: "@every 1h", Audit: "@every 5m"},
		Sweep:     Sweep{BatchSize: defaultBatchSize, QueryTimeout: NewDuration(30 * time.Second), Timeout: NewDuration(2 * time.Minute)},
		River:     River{MaxWorkers: 100, ShutdownGrace: NewDuration(30 * time.Second)},
		Review: Review{
			Window:        NewDuration(24 * time.Hour),
			Priority:      defaultPriority,
			MaxRepeats:    3,
			RelookupAfter: NewDuration(time.Minute),
			RelookupMax:   NewDuration(time.Hour),
		},
		Slack: Slack{MaxAlertAge: NewDuration(24 * time.Hour), GroupWait: NewDuration(30 * time.Second),
			GroupInterval: NewDuration(time.Minute), IncidentRefresh: NewDuration(30 * time.Second)},
		HTTP: HTTP{Listen: defaultListen, MetricsRefresh: NewDuration(DefaultMetricsRefresh)},
		Log:  Log{Level: "info"},
		Web: Web{Auth: WebAuthProxy, ProxyHeader: "X-Forwarded-Email", Issuer: DefaultSlackIssuer,
			SessionTTL: NewDuration(12 * time.Hour)},
		Retention: Retention{Outbox: NewDuration(720 * time.Hour), Jobs: NewDuration(24 * time.Hour)},
		PagerDuty: PagerDuty{URL: DefaultPagerDutyURL, GiveUpAfter: NewDuration(24 * time.Hour)},
		Webhook:   Webhook{Timeout: NewDuration(10 * time.Second), GiveUpAfter: NewDuration(24 * time.Hour)},
	}
}

func defaultProvider() *Provider {
	return &Provider{
		StaleAfter:    NewDuration(15 * time.Minute),
		LookupTimeout: NewDuration(10 * time.Second),
		LookupBudget:  NewDuration(10 * time.Minute),
		RateLimit:     10,
		Concurrency:   4,
		OutageAfter:   5,
		InFlightFor:   NewDuration(DefaultInFlightFor),
		MaxOutage:     NewDuration(time.Hour),
		AuditAfter:    NewDuration(time.Hour),
		AuditLookback: NewDuration(72 * time.Hour),
	}
}

// DefaultInFlightFor is a provider's in_flight_for unless its block sets
// one.
const DefaultInFlightFor = time.Hour

// maxMaxOutage is the longest max_outage: a month.
const maxMaxOutage = 720 * time.Hour

var (
	providerNameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$`)
	envNameRE      = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
	slackUserRE    = regexp.MustCompile(`^[UW][A-Z0-9]{2,20}$`) // as review.SlackUserID
	slackChannelRE = regexp.MustCompile(`^[CG][A-Z0-9]{2,}$`)
	slackTeamRE    = regexp.MustCompile(`^[TE][A-Z0-9]{2,}$`)
	slackAppRE     = regexp.MustCompile(`^A[A-Z0-9]{2,}$`)
)

func (c *Config) validate(kinds []Kind, getenv Getenv, opts Options) []error {
	var v validator
	slackOn := c.Slack.Channel != ""
	if slackOn && !slackChannelRE.MatchString(c.Slack.Channel) {
		v.add("slack.channel", "must be a channel id (C… or G…), not a name: got %q", c.Slack.Channel)
	}
	c.validateRuntime(&v)
	c.validateLedger(&v)
	c.validateProviders(&v, kinds, getenv, opts)
	c.validateReview(&v, slackOn)
	c.validateSlack(&v, slackOn, getenv, opts)
	c.validateHTTP(&v, getenv, opts)
	c.validateWeb(&v, slackOn, getenv, opts)
	c.validateReceivers(&v, getenv, opts)
	c.validateLog(&v)
	return v.errs
}

// validateRuntime checks the database, schedules, sweep and River keys.
func (c *Config) validateRuntime(v *validator) {
	if c.Database.MaxConns < 2 {
		v.add("database.max_conns", "must be at least 2")
	}

	for _, sch := range []struct{ key, expr string }{
		{"schedules.sweep", c.Schedules.Sweep}, {"schedules.escalate", c.Schedules.Escalate}, {"schedules.notify", c.Schedules.Notify},
		{"schedules.prune", c.Schedules.Prune}, {"schedules.audit", c.Schedules.Audit},
	} {
		if err := checkSchedule(sch.expr, time.Now()); err != nil {
			v.add(sch.key, "%v", err)
		}
	}

	if c.Sweep.BatchSize < 1 || c.Sweep.BatchSize > maxBatchSize {
		v.add("sweep.batch_size", "must be between 1 and %d", maxBatchSize)
	}
	v.duration("sweep.query_timeout", c.Sweep.QueryTimeout, time.Second)
	v.duration("sweep.timeout", c.Sweep.Timeout, time.Second)
	if c.Sweep.Timeout.err == nil && c.Sweep.QueryTimeout.err == nil && c.Sweep.Timeout.Duration < c.Sweep.QueryTimeout.Duration {
		v.add("sweep.timeout", "must be at least sweep.query_timeout (%s)", c.Sweep.QueryTimeout)
	}
	if c.River.MaxWorkers < 1 || c.River.MaxWorkers > 10000 {
		v.add("river.max_workers", "must be between 1 and 10000")
	}
	v.duration("river.shutdown_grace", c.River.ShutdownGrace, time.Second)
	if c.River.ShutdownGrace.Duration > maxShutdownGrace {
		v.add("river.shutdown_grace", "must be at most %s", formatDuration(maxShutdownGrace))
	}

	v.duration("retention.outbox", c.Retention.Outbox, time.Hour)
	v.duration("retention.jobs", c.Retention.Jobs, time.Minute)
	d := c.Retention.ResolvedTickets
	if d.err == nil && d.Duration == 0 {
		if c.Retention.ArchiveDir != "" {
			v.add("retention.archive_dir", "is set but retention.resolved_tickets is not: tickets are kept for good and nothing is archived; remove the key or set a retention")
		}
		return
	}
	switch {
	case d.err != nil:
		v.add("retention.resolved_tickets", "%v", d.err)
	case d.Duration < minTicketRetention:
		v.add("retention.resolved_tickets", "must be \"0s\" (keep for good) or at least %s", formatDuration(minTicketRetention))
	case d.Duration < c.Retention.Outbox.Duration:
		v.add("retention.resolved_tickets", "must not be shorter than retention.outbox (%s): a ticket's alerts are kept that long", formatDuration(c.Retention.Outbox.Duration))
	}
	// The archive is checked whatever is wrong with the retention, so both
	// mistakes are told at once; a malformed retention needs no archive
	// named yet.
	if d.err == nil || c.Retention.ArchiveDir != "" {
		v.archiveDir("retention.archive_dir", c.Retention.ArchiveDir)
	}
}

// validateProviders checks each [providers.NAME] block: the common keys,
// then the kind's own settings and the secrets it names.
func (c *Config) validateProviders(v *validator, kinds []Kind, getenv Getenv, opts Options) {
	kindNames := make([]string, len(kinds))
	for i, k := range kinds {
		kindNames[i] = k.Name
	}
	for _, name := range sortedKeys(c.Providers) {
		p, prefix := c.Providers[name], "providers."+name+"."
		if !providerNameRE.MatchString(name) {
			v.add("providers."+name, "name must be 1-64 letters, digits, '.', '_' or '-', as in the ledger's provider column")
		}
		switch {
		case p.Kind == "":
			v.add(prefix+"kind", "required: one of %s", strings.Join(kindNames, ", "))
		case p.Settings == nil:
			v.add(prefix+"kind", "unknown kind %q: one of %s", p.Kind, strings.Join(kindNames, ", "))
		}
		v.duration(prefix+"stale_after", p.StaleAfter, time.Minute)
		if p.StaleAfter.Duration > maxStaleAfter {
			// An operation older than this has been pending for weeks: a
			// longer wait is a typo for a shorter one, not a policy.
			v.add(prefix+"stale_after", "must be at most %s", formatDuration(maxStaleAfter))
		}
		v.duration(prefix+"lookup_timeout", p.LookupTimeout, 100*time.Millisecond)
		if p.LookupTimeout.Duration > 5*time.Minute {
			v.add(prefix+"lookup_timeout", "must be at most 5m")
		}
		v.duration(prefix+"lookup_budget", p.LookupBudget, time.Second)
		if p.LookupBudget.Duration > maxLookupBudget {
			// A lookup job has at most 1000 attempts, at most a minute apart:
			// a longer budget would outlive its job.
			v.add(prefix+"lookup_budget", "must be at most %s", formatDuration(maxLookupBudget))
		}
		if p.LookupBudget.err == nil && p.LookupTimeout.err == nil && p.LookupBudget.Duration < p.LookupTimeout.Duration {
			v.add(prefix+"lookup_budget", "must be at least lookup_timeout (%s)", p.LookupTimeout)
		}
		switch {
		case !(p.RateLimit > 0) || math.IsInf(p.RateLimit, 0): // NaN fails > 0 too
			v.add(prefix+"rate_limit", "must be a finite number greater than 0 (requests per second)")
		case p.RateLimit < MinRateLimit || p.RateLimit > MaxRateLimit:
			// Below, one request waits more than 16 minutes for the next and
			// lookup jobs are snoozed for ages; above, no provider allows it.
			v.add(prefix+"rate_limit", "must be between %g and %g requests per second, not %g", MinRateLimit, float64(MaxRateLimit), p.RateLimit)
		}
		switch {
		case p.SettleWindow.err != nil:
			v.add(prefix+"settle_window", "%v", p.SettleWindow.err)
		case p.SettleWindow.Duration < 0 || p.SettleWindow.Duration > 24*time.Hour:
			v.add(prefix+"settle_window", "must be between 0s and 24h")
		}
		switch {
		case p.InFlightFor.err != nil:
			v.add(prefix+"in_flight_for", "%v", p.InFlightFor.err)
		case p.InFlightFor.Duration < time.Minute || p.InFlightFor.Duration > 960*time.Hour:
			v.add(prefix+"in_flight_for", "must be between 1m and 960h (40 days)")
		}
		if p.OutageAfter < 0 || p.OutageAfter > 1000 {
			v.add(prefix+"outage_after", "must be between 0 (off) and 1000")
		}
		switch d := p.MaxOutage.Duration; {
		case p.MaxOutage.err != nil:
			v.add(prefix+"max_outage", "%v", p.MaxOutage.err)
		case d != 0 && (d < time.Minute || d > maxMaxOutage):
			v.add(prefix+"max_outage", "must be 0 (never) or between 1m and %s", formatDuration(maxMaxOutage))
		}
		c.validateAudit(v, prefix, p)
		if p.Concurrency < 1 || p.Concurrency > 1000 {
			v.add(prefix+"concurrency", "must be between 1 and 1000")
		}
		switch {
		case p.RecordNamespace == "":
		case !slices.Contains(NamespaceKinds, p.Kind):
			v.add(prefix+"record_namespace", "only %s blocks name one: a %s block's records belong to the account it reaches, read at start",
				strings.Join(NamespaceKinds, " and "), p.Kind)
		case !providerNameRE.MatchString(p.RecordNamespace):
			v.add(prefix+"record_namespace", "must be 1-64 letters, digits, '.', '_' or '-'")
		}
		if p.Settings == nil {
			continue
		}
		for _, err := range p.Settings.Validate() {
			v.errs = append(v.errs, fmt.Errorf("%s%w", prefix, err))
		}
		if sim, ok := p.Settings.(simulated); ok && !sim.Acknowledged() {
			v.add(prefix+"simulated", "kind %s answers from the rules in this file, not from a provider: it settles nothing real. "+
				"Set simulated = true in the block if that is what you want (the demo, tests, benchmarks)", p.Kind)
		}
		if holder, ok := p.Settings.(SecretHolder); ok {
			env := getenv
			if opts.NoLookups {
				env = nil // names only: the adapter is never built
			}
			for _, s := range holder.SecretEnvs() {
				v.secretEnv(prefix+s.Key, s.Name, s.Required, env)
			}
		}
	}
}

// validateReview checks owners, the review window, escalation levels and
// re-lookups. Owners must be Slack user ids when Slack is on.
func (c *Config) validateReview(v *validator, slackOn bool) {
	v.owner("review.default_owner", c.Review.DefaultOwner, slackOn)
	for _, group := range []struct {
		kind   string
		owners map[string]string
	}{{"workflows", c.Review.Owners.Workflows}, {"providers", c.Review.Owners.Providers}} {
		for _, name := range sortedKeys(group.owners) {
			v.owner("review.owners."+group.kind+"."+name, group.owners[name], slackOn)
			if group.kind == "providers" && c.Providers[name] == nil {
				v.add("review.owners.providers."+name, "no [providers.%s] block", name)
			}
		}
	}
	v.duration("review.window", c.Review.Window, time.Minute)
	v.priority("review.priority", c.Review.Priority)
	for i, level := range c.Review.Escalation {
		prefix := fmt.Sprintf("review.escalation[%d].", i)
		v.owner(prefix+"owner", level.Owner, slackOn)
		v.priority(prefix+"priority", level.Priority)
		v.duration(prefix+"window", level.Window, time.Minute)
		v.ackTimeout(prefix+"ack_timeout", level.AckTimeout)
	}
	v.ackTimeout("review.ack_timeout", c.Review.AckTimeout)
	if c.Review.RepeatEvery.set {
		v.duration("review.repeat_every", c.Review.RepeatEvery, time.Minute)
	}
	if c.Review.MaxRepeats < 0 || c.Review.MaxRepeats > 100 {
		v.add("review.max_repeats", "must be between 0 and 100")
	}
	v.duration("review.relookup_after", c.Review.RelookupAfter, 10*time.Second)
	v.duration("review.relookup_max", c.Review.RelookupMax, 10*time.Second)
	if c.Review.RelookupMax.Duration < c.Review.RelookupAfter.Duration {
		v.add("review.relookup_max", "%s is shorter than review.relookup_after (%s)", c.Review.RelookupMax, c.Review.RelookupAfter)
	}
}

// validateSlack checks the [slack] keys that need Slack on, and Slack's
// own ids, channels and alert pacing.
func (c *Config) validateSlack(v *validator, slackOn bool, getenv Getenv, opts Options) {
	if slackOn {
		v.secretEnv("slack.channel", EnvSlackToken, true, only(!opts.NoSlack, getenv))
		v.secretEnv("slack.channel", EnvSlackSigning, true, only(!opts.NoSlack && !opts.NoInteractivity, getenv))
	}
	for i, reviewer := range c.Slack.Reviewers {
		key := fmt.Sprintf("slack.reviewers[%d]", i)
		switch {
		case !slackOn:
			v.add(key, "set slack.channel too: reviewers act from Slack")
		case reviewer == "" || strings.ContainsAny(reviewer, " \t\n,"):
			v.add(key, "must name one person, got %q", reviewer)
		case !slackUserRE.MatchString(reviewer):
			v.add(key, "must be a Slack user id (U… or W…), got %q", reviewer)
		}
	}
	for _, id := range []struct {
		key, value string
		re         *regexp.Regexp
		want       string
	}{{"slack.team_id", c.Slack.TeamID, slackTeamRE, "a Slack team id (T… or E…)"}, {"slack.app_id", c.Slack.AppID, slackAppRE, "a Slack app id (A…)"}} {
		switch {
		case id.value == "":
		case !slackOn && !(id.key == "slack.team_id" && c.Web.Auth == WebAuthSlack):
			v.add(id.key, "set slack.channel too: it checks Slack button clicks")
		case !id.re.MatchString(id.value):
			v.add(id.key, "must be %s, got %q", id.want, id.value)
		}
	}
	for _, group := range []struct {
		kind     string
		channels map[string]string
	}{{"workflows", c.Slack.Channels.Workflows}, {"providers", c.Slack.Channels.Providers}} {
		for _, name := range sortedKeys(group.channels) {
			if !slackChannelRE.MatchString(group.channels[name]) {
				v.add("slack.channels."+group.kind+"."+name, "must be a channel id (C… or G…), not a name: got %q", group.channels[name])
			} else if !slackOn {
				v.add("slack.channels."+group.kind+"."+name, "set slack.channel too: overrides need Slack on")
			}
		}
	}
	switch d := c.Slack.MaxAlertAge; {
	case d.err != nil:
		v.add("slack.max_alert_age", "%v", d.err)
	case d.Duration <= 0:
		v.add("slack.max_alert_age", "must be greater than 0")
	}
	switch d := c.Slack.GroupWait; {
	case d.err != nil:
		v.add("slack.group_wait", "%v", d.err)
	case d.Duration < 0:
		v.add("slack.group_wait", "must not be negative")
	}
	if n := c.Slack.GroupThreshold; n != nil && *n < 0 {
		v.add("slack.group_threshold", "must not be negative")
	}
	if n := c.Slack.GroupDetailLimit; n != nil && (*n < 0 || *n > MaxGroupDetailLimit) {
		v.add("slack.group_detail_limit", "must be between 0 (the group's message alone) and %d", MaxGroupDetailLimit)
	}
	// An alert group's message is edited at most once per interval: more
	// often than every 5s, the edits of a busy channel's groups would take
	// the share of its one call a second that its alerts need.
	v.duration("slack.group_interval", c.Slack.GroupInterval, 5*time.Second)
	// Each refresh may edit two messages of an incident, in the channel's
	// pace of one call a second: more often than every 5s, the edits would
	// take a large share of what the channel's alerts need.
	v.duration("slack.incident_refresh", c.Slack.IncidentRefresh, 5*time.Second)
	if c.Slack.APIURL != "" {
		if u, err := url.Parse(c.Slack.APIURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			v.add("slack.api_url", "must be an http(s) URL")
		}
	}
}

// headerNameRE is an HTTP header name (RFC 9110's token).
var headerNameRE = regexp.MustCompile("^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")

// validateWeb checks the review page's keys; only when it is enabled is
// anything required.
func (c *Config) validateWeb(v *validator, slackOn bool, getenv Getenv, opts Options) {
	w := c.Web
	if !slices.Contains(WebAuths, w.Auth) {
		v.add("web.auth", "must be one of %s, got %q", strings.Join(WebAuths, ", "), w.Auth)
	}
	if !headerNameRE.MatchString(w.ProxyHeader) {
		v.add("web.proxy_header", "must be an HTTP header name, e.g. X-Forwarded-Email, got %q", w.ProxyHeader)
	}
	for i, cidr := range w.TrustedProxies {
		if _, err := netip.ParsePrefix(cidr); err != nil {
			v.add(fmt.Sprintf("web.trusted_proxies[%d]", i), "must be a CIDR such as 10.0.0.0/8 or 127.0.0.1/32, got %q", cidr)
		}
	}
	if w.Enabled && w.Auth == WebAuthProxy && len(w.TrustedProxies) == 0 {
		v.add("web.trusted_proxies", "required with web.auth = \"proxy\": the addresses the proxy connects from")
	}
	if u, err := url.Parse(w.Issuer); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		v.add("web.issuer", "must be an http(s) URL, e.g. %s", DefaultSlackIssuer)
	}
	if w.PublicURL != "" {
		if u, err := url.Parse(w.PublicURL); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.User != nil {
			v.add("web.public_url", "must be an http(s) URL as browsers reach the page, e.g. https://sweeper.example.com")
		}
	}
	if w.Enabled && w.Auth == WebAuthSlack {
		if w.SlackClientID == "" {
			v.add("web.slack_client_id", "required with web.auth = \"slack\": the Slack app's client id")
		}
		if w.PublicURL == "" {
			v.add("web.public_url", "required with web.auth = \"slack\": where Slack sends people back")
		}
		if c.Slack.TeamID == "" {
			v.add("slack.team_id", "required with web.auth = \"slack\": the workspace whose people may sign in")
		}
		v.secretEnv("web.auth", EnvSlackClientSecret, true, only(!opts.NoWeb, getenv))
	}
	ids := map[string]bool{}
	folded := map[string]string{} // an address with ASCII letters folded → its first key
	for _, email := range sortedKeys(w.Users) {
		key := "web.users." + strconv.Quote(email)
		if !strings.Contains(email, "@") || strings.ContainsAny(email, " \t\n,") {
			v.add(key, "must be an e-mail address as the proxy sends it")
		}
		f := safetext.FoldASCII(strings.TrimSpace(email))
		if first, ok := folded[f]; ok && w.Users[first] != w.Users[email] {
			v.add(key, "is the address of web.users.%s (ASCII letters fold) for another person: keep one", strconv.Quote(first))
		} else if !ok {
			folded[f] = email
		}
		v.owner(key, w.Users[email], slackOn)
		ids[w.Users[email]] = true
	}
	for i, id := range w.Viewers {
		if !ids[id] {
			v.add(fmt.Sprintf("web.viewers[%d]", i), "%q is none of web.users' ids: map the viewer's e-mail to it", id)
		}
	}
	switch d := w.SessionTTL; {
	case d.err != nil:
		v.add("web.session_ttl", "%v", d.err)
	case d.Duration < 5*time.Minute || d.Duration > 168*time.Hour:
		v.add("web.session_ttl", "must be between 5m and 168h")
	}
	if w.Enabled {
		v.secretEnv("web.enabled", EnvWebCookieKey, true, only(!opts.NoWeb, getenv))
		if getenv != nil && !opts.NoWeb {
			if key, err := Secret(getenv, EnvWebCookieKey); err == nil && len(key) < MinWebCookieKey {
				v.add("web.enabled", "%s must hold at least %d bytes (e.g. openssl rand -hex 32)", EnvWebCookieKey, MinWebCookieKey)
			}
		}
	}
}

// MinWebCookieKey is the least length, in bytes, of the review page's
// cookie key.
const MinWebCookieKey = 32

// validateHTTP checks the listen address and the River UI's credentials.
func (c *Config) validateHTTP(v *validator, getenv Getenv, opts Options) {
	if _, port, err := net.SplitHostPort(c.HTTP.Listen); err != nil || port == "" {
		v.add("http.listen", "must be host:port, e.g. 127.0.0.1:8080")
	}
	if c.HTTP.AdminListen != "" {
		if _, port, err := net.SplitHostPort(c.HTTP.AdminListen); err != nil || port == "" {
			v.add("http.admin_listen", "must be host:port, e.g. 127.0.0.1:9090, or empty to serve the admin endpoints on http.listen")
		} else if c.HTTP.AdminListen == c.HTTP.Listen {
			v.add("http.admin_listen", "must differ from http.listen (leave it empty to serve both on one listener)")
		}
	}
	switch {
	case c.HTTP.MetricsRefresh.err != nil:
		v.add("http.metrics_refresh", "%v", c.HTTP.MetricsRefresh.err)
	case c.HTTP.MetricsRefresh.Duration < time.Second || c.HTTP.MetricsRefresh.Duration > 10*time.Minute:
		v.add("http.metrics_refresh", "must be between 1s and 10m")
	}
	if c.HTTP.RiverUI {
		// The UI has no authentication of its own and can change jobs.
		v.secretEnv("http.river_ui", EnvRiverUIUser, true, only(!opts.NoRiverUI, getenv))
		v.secretEnv("http.river_ui", EnvRiverUIPass, true, only(!opts.NoRiverUI, getenv))
	}
}

// SlogLevel is Level as a slog level (INFO for a level Validate refuses).
func (l Log) SlogLevel() slog.Level {
	switch l.Level {
	case "debug":
		return slog.LevelDebug
	case "warn":
		return slog.LevelWarn
	case "error":
		return slog.LevelError
	}
	return slog.LevelInfo
}

// validateLog checks the log's level and format.
func (c *Config) validateLog(v *validator) {
	if !slices.Contains(LogLevels, c.Log.Level) {
		v.add("log.level", "must be one of %s, got %q", strings.Join(LogLevels, ", "), c.Log.Level)
	}
	if c.Log.Format != "" && !slices.Contains(LogFormats, c.Log.Format) {
		v.add("log.format", "must be json or text (or empty: text on a terminal, JSON otherwise), got %q", c.Log.Format)
	}
}

// checkSchedule parses a cron expression as the job client does
// (cron.ParseStandard) and refuses one that cannot work as written: one
// that never fires, since cron's Next then returns the zero time and the
// job would silently never run, and an interval under a second, which cron
// silently rounds up to one second.
func checkSchedule(expr string, now time.Time) error {
	spec := expr
	if strings.HasPrefix(spec, "TZ=") || strings.HasPrefix(spec, "CRON_TZ=") {
		// cron cuts the zone name at the first space, and panics when
		// there is none.
		_, rest, ok := strings.Cut(spec, " ")
		if !ok {
			return fmt.Errorf("invalid cron expression %q: a time zone and no schedule after it", expr)
		}
		spec = strings.TrimSpace(rest)
	}
	schedule, err := cron.ParseStandard(expr)
	if err != nil {
		return fmt.Errorf("invalid cron expression %q: %w", expr, err)
	}
	if every, ok := strings.CutPrefix(spec, "@every "); ok {
		if d, err := time.ParseDuration(every); err == nil && d < time.Second {
			return fmt.Errorf("%q fires more often than once a second (cron would run it every second)", expr)
		}
	}
	if schedule.Next(now).IsZero() {
		// cron looks five years ahead: February 30, April 31.
		return fmt.Errorf("%q never fires (no time in the next five years matches it)", expr)
	}
	return nil
}

// databaseURL returns the URL sweeper connects with — SWEEPER_DATABASE_URL,
// or its _FILE, over the file's database.url — and the problems of each.
// The file's URL is checked even when overridden: a password there is in
// the file either way. No problem quotes a URL.
func databaseURL(fileURL string, getenv Getenv) (string, []error) {
	var problems []error
	add := func(format string, args ...any) {
		problems = append(problems, fmt.Errorf("database.url: "+format, args...))
	}
	if fileURL != "" {
		err := CheckDatabaseURL(fileURL)
		if err != nil {
			add("%w", err)
		}
		if !errors.Is(err, ErrMalformedURL) && hasPassword(fileURL) {
			add("must not contain a password; put the URL in %s, or the password in PGPASSWORD or ~/.pgpass", EnvDatabaseURL)
		}
	}
	envURL, err := Secret(getenv, EnvDatabaseURL)
	switch {
	case err == nil:
		if err := CheckDatabaseURL(envURL); err != nil {
			source := EnvDatabaseURL
			if getenv(EnvDatabaseURL) == "" {
				source += "_FILE"
			}
			add("%s %w", source, err)
		}
		return envURL, problems
	case getenv(EnvDatabaseURL) != "" || getenv(EnvDatabaseURL+"_FILE") != "":
		add("%w", err)
	case fileURL == "":
		add("required (or set %s)", EnvDatabaseURL)
	}
	return fileURL, problems
}

// Errors of [CheckDatabaseURL]. Neither quotes the URL.
var (
	ErrNotPostgresURL = errors.New("must be a postgres:// URL")
	ErrMalformedURL   = errors.New("does not parse as a URL; percent-encode @ / # ? in the password (%40 %2F %23 %3F)")
)

// CheckDatabaseURL returns nil for a postgres:// (or postgresql://) URL
// that Go's net/url and PostgreSQL's own parser (libpq's rules, which pgx
// follows) read the same way, so that what sweeper redacts for display is
// what pgx takes for the password and the host. Otherwise it returns
// [ErrNotPostgresURL] or [ErrMalformedURL], which quote nothing of raw: an
// unescaped @ / # or ? in a password splits it differently in each parser
// and strands part of it where it would be printed, or looked up in DNS as
// a host name.
func CheckDatabaseURL(raw string) error {
	rest, ok := strings.CutPrefix(raw, "postgres://")
	if !ok {
		rest, ok = strings.CutPrefix(raw, "postgresql://")
	}
	if !ok {
		// pgx reads anything else as key=value settings.
		return ErrNotPostgresURL
	}
	// net/url ends the authority at the first '/', '?' or '#'; libpq ends
	// the user info at the first '@' before any '/', and knows no fragment.
	// They agree when there is no '#' and every '@' — at most one — is in
	// the authority. An '@' in a database name or parameter is written %40.
	end := strings.IndexAny(rest, "/?#")
	if end < 0 {
		end = len(rest)
	}
	authority := rest[:end]
	if strings.ContainsAny(rest[end:], "@#") || strings.Count(authority, "@") > 1 {
		return ErrMalformedURL
	}
	hosts := authority[strings.LastIndex(authority, "@")+1:]
	if hosts != "" {
		for _, hostPort := range strings.Split(hosts, ",") {
			if !validHostPort(hostPort) {
				return ErrMalformedURL
			}
		}
	}
	if _, err := url.Parse(raw); err != nil {
		return ErrMalformedURL
	}
	return nil
}

var hostNameRE = regexp.MustCompile(`^[A-Za-z0-9_]([A-Za-z0-9_-]*[A-Za-z0-9_])?(\.[A-Za-z0-9_]([A-Za-z0-9_-]*[A-Za-z0-9_])?)*\.?$`)

// validHostPort reports whether s is host[:port] with host a host name, an
// IPv4 address or a bracketed IPv6 address (or empty: the default), and
// port empty or a number up to 65535.
func validHostPort(s string) bool {
	host, port := s, ""
	if strings.HasPrefix(s, "[") {
		end := strings.IndexByte(s, ']')
		if end < 0 {
			return false
		}
		if ip := net.ParseIP(s[1:end]); ip == nil || ip.To4() != nil {
			return false
		}
		host, port = "", s[end+1:]
		if port != "" {
			var ok bool
			if port, ok = strings.CutPrefix(port, ":"); !ok {
				return false
			}
		}
	} else if i := strings.IndexByte(s, ':'); i >= 0 {
		host, port = s[:i], s[i+1:]
	}
	if host != "" && !hostNameRE.MatchString(host) {
		return false
	}
	if port == "" {
		return true
	}
	n, err := strconv.Atoi(port)
	return err == nil && n >= 1 && n <= 65535 && strings.Trim(port, "0123456789") == ""
}

// validator gathers problems, each prefixed with its key.
type validator struct {
	errs []error
}

func (v *validator) add(key, format string, args ...any) {
	v.errs = append(v.errs, fmt.Errorf("%s: %s", key, fmt.Sprintf(format, args...)))
}

// Bounds of providers.NAME.rate_limit, in requests per second.
const (
	MinRateLimit = 0.001
	MaxRateLimit = 10000.0
)

// maxStaleAfter bounds providers.NAME.stale_after: 40 days.
const maxStaleAfter = 960 * time.Hour

func (v *validator) duration(key string, d Duration, least time.Duration) {
	switch {
	case d.err != nil:
		v.add(key, "%v", d.err)
	case d.Duration < least:
		v.add(key, "must be at least %s", formatDuration(least))
	}
}

// ackTimeout checks an ack timeout: 0s (none), or at least a minute, the
// escalation scan's own period.
func (v *validator) ackTimeout(key string, d Duration) {
	switch {
	case d.err != nil:
		v.add(key, "%v", d.err)
	case d.Duration < 0:
		v.add(key, "must not be negative: 0s for no timeout, or at least 1m")
	case d.Duration > 0 && d.Duration < time.Minute:
		v.add(key, "must be 0s (no timeout) or at least 1m")
	}
}

// minTicketRetention is the shortest retention.resolved_tickets.
const minTicketRetention = 24 * time.Hour

// archiveDir checks that dir, where resolved tickets are archived before
// they are deleted, is an absolute path to an existing directory.
func (v *validator) archiveDir(key, dir string) {
	switch {
	case dir == "":
		v.add(key, "is required with retention.resolved_tickets: tickets are written there before they are deleted")
		return
	case !filepath.IsAbs(dir):
		v.add(key, "%q must be an absolute path", dir)
		return
	}
	info, err := os.Stat(dir)
	switch {
	case err != nil:
		v.add(key, "%v", err)
	case !info.IsDir():
		v.add(key, "%q is not a directory", dir)
	}
}

func (v *validator) priority(key, p string) {
	if !slices.Contains(Priorities, p) {
		v.add(key, "must be one of %s", strings.Join(Priorities, ", "))
	}
}

func (v *validator) owner(key, owner string, slackOn bool) {
	switch {
	case owner == "":
		v.add(key, "required: one person who owns the ticket")
	case strings.ContainsAny(owner, " \t\n,"):
		v.add(key, "must name one person, got %q", owner)
	case slackOn && !slackUserRE.MatchString(owner):
		v.add(key, "must be a Slack user id (U… or W…) when Slack is on, got %q", owner)
	}
}

// secretEnv checks the variable name a key gives and, with getenv, that the
// variable is set (when required) and not set twice; a nil getenv checks
// the name only.
func (v *validator) secretEnv(key, name string, required bool, getenv Getenv) {
	switch {
	case name == "":
		if required {
			v.add(key, "required: the name of an environment variable")
		}
	case !envNameRE.MatchString(name):
		v.add(key, "%q is not an environment variable name", name)
	case getenv == nil:
		// Not read: the name is all there is to check.
	default:
		// Set twice is an error even for an optional credential: the
		// adapter would read one of the two.
		_, err := Secret(getenv, name)
		if twice, ok := errors.AsType[*setTwiceError](err); ok {
			v.add(key, "%v", twice)
		} else if required && err != nil {
			v.add(key, "environment variable %s is not set (nor %s_FILE)", name, name)
		}
	}
}

// Secret returns the value of the secret named by environment variable name:
// the variable itself, or the contents of the file named by name_FILE
// (trailing newline removed), the convention of Docker and Kubernetes
// secrets. Both set is an error naming both: either could be the stale one,
// so neither is chosen. Every credential sweeper reads goes through here.
// The error never carries the value.
func Secret(getenv Getenv, name string) (string, error) {
	v, file := getenv(name), getenv(name+"_FILE")
	switch {
	case v != "" && file != "":
		return "", &setTwiceError{name: name}
	case v != "":
		return v, nil
	case file == "":
		return "", fmt.Errorf("environment variable %s is not set (nor %s_FILE)", name, name)
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return "", fmt.Errorf("%s_FILE: %w", name, err)
	}
	v = strings.TrimRight(string(b), "\r\n")
	if v == "" {
		return "", fmt.Errorf("%s_FILE: %s is empty", name, file)
	}
	return v, nil
}

// setTwiceError is [Secret]'s error when both NAME and NAME_FILE are set.
type setTwiceError struct{ name string }

func (e *setTwiceError) Error() string {
	return fmt.Sprintf("both %s and %s_FILE are set; set only one", e.name, e.name)
}

// BlockSecret is [Secret] for a credential a provider block names by key
// (e.g. "secret_key_env"): name empty is "required", and every error
// starts with the key.
func BlockSecret(getenv Getenv, key, name string) (string, error) {
	if name == "" {
		return "", fmt.Errorf("%s: required: the name of an environment variable", key)
	}
	v, err := Secret(getenv, name)
	if err != nil {
		return "", fmt.Errorf("%s: %w", key, err)
	}
	return v, nil
}

// SecretSet reports whether [Secret] would find a value for name.
func SecretSet(getenv Getenv, name string) bool {
	_, err := Secret(getenv, name)
	return err == nil
}

// hasPassword reports whether a database URL carries a secret: a password
// in its user info, or any parameter whose name ends in "password"
// (password, sslpassword, …).
func hasPassword(raw string) bool {
	u, err := url.Parse(raw)
	if err != nil {
		return strings.Contains(strings.ToLower(raw), "password=")
	}
	if u.User != nil {
		if _, set := u.User.Password(); set {
			return true
		}
	}
	for key, values := range u.Query() {
		if isPasswordParam(key) && strings.Join(values, "") != "" {
			return true
		}
	}
	return false
}

// isPasswordParam reports whether a connection parameter holds a secret.
func isPasswordParam(key string) bool {
	return strings.HasSuffix(strings.ToLower(key), "password")
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// validateAudit checks a provider block's audit keys.
func (c *Config) validateAudit(v *validator, prefix string, p *Provider) {
	switch d := p.AuditAfter; {
	case d.err != nil:
		v.add(prefix+"audit_after", "%v", d.err)
	case d.Duration < time.Minute || d.Duration > 720*time.Hour:
		v.add(prefix+"audit_after", "must be between 1m and 720h")
	}
	switch d := p.AuditLookback; {
	case d.err != nil:
		v.add(prefix+"audit_lookback", "%v", d.err)
	case d.Duration > 2160*time.Hour:
		v.add(prefix+"audit_lookback", "must be at most 2160h (90 days)")
	case p.AuditAfter.err == nil && d.Duration <= p.AuditAfter.Duration:
		v.add(prefix+"audit_lookback", "must be longer than audit_after (%s): the audit looks at operations settled between the two", p.AuditAfter)
	}
	switch {
	case p.AuditRate == 0: // the default
	case !(p.AuditRate > 0) || math.IsInf(p.AuditRate, 0):
		v.add(prefix+"audit_rate", "must be a finite number greater than 0 (requests per second)")
	case p.RateLimit > 0 && p.AuditRate > p.RateLimit:
		v.add(prefix+"audit_rate", "must be at most rate_limit (%g): the audit's requests take their turn in it", p.RateLimit)
	}
}

// AuditRequestsPerSecond is the provider's audit_rate in effect: its own,
// or by default 1, or rate_limit when that is lower.
func (p *Provider) AuditRequestsPerSecond() float64 {
	if p.AuditRate > 0 {
		return p.AuditRate
	}
	return min(1, p.RateLimit)
}
