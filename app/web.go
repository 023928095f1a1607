package app

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"

	"github.com/sweeper/sweeper/config"
	"github.com/sweeper/sweeper/notify/outbox"
	"github.com/sweeper/sweeper/notify/silence"
	"github.com/sweeper/sweeper/review"
	"github.com/sweeper/sweeper/web"
)

// ErrWebOff: web.enabled is false.
var ErrWebOff = errors.New("the review page is off (web.enabled = false)")

// ReviewPage returns the review page over the app's database, with the
// identities of web.users, the rule of slack.reviewers, and the cookie key
// of SWEEPER_WEB_COOKIE_KEY (or _FILE); or ErrWebOff. It is served on
// WebListen.
func (s *App) ReviewPage() (*web.Handler, error) {
	cfg := s.Config.Web
	if !cfg.Enabled {
		return nil, ErrWebOff
	}
	key, err := config.Secret(s.getenv, config.EnvWebCookieKey)
	if err != nil {
		return nil, fmt.Errorf("web.enabled: %w", err)
	}
	var trusted []netip.Prefix
	for _, cidr := range cfg.TrustedProxies {
		p, err := netip.ParsePrefix(cidr)
		if err != nil {
			return nil, fmt.Errorf("web.trusted_proxies: %w", err)
		}
		trusted = append(trusted, p.Masked())
	}
	var slackSignIn *web.SlackSignIn
	insecure := PlainLoopback(s.WebListen())
	if cfg.Auth == config.WebAuthSlack {
		secret, err := config.Secret(s.getenv, config.EnvSlackClientSecret)
		if err != nil {
			return nil, fmt.Errorf("web.auth: %w", err)
		}
		slackSignIn = &web.SlackSignIn{Issuer: cfg.Issuer, ClientID: cfg.SlackClientID, ClientSecret: secret,
			TeamID: s.Config.Slack.TeamID, RedirectURL: strings.TrimSuffix(cfg.PublicURL, "/") + web.Prefix + "/callback",
			Members: s.people()}
	}
	messages, groups := outbox.NewStore(s.Pool), outbox.NewGroups(s.Pool)
	silences := s.Silences()
	return web.New(web.Config{
		Store:           s.Reviews(),
		Reader:          s.Tickets(),
		Deciders:        review.NewDeciders(s.Config.Slack.Reviewers),
		Users:           cfg.Users,
		Viewers:         cfg.Viewers,
		ProxyHeader:     cfg.ProxyHeader,
		TrustedProxies:  trusted,
		CookieKey:       []byte(key),
		SessionTTL:      cfg.SessionTTL.Duration,
		InsecureCookies: insecure,
		PublicURL:       cfg.PublicURL,
		Slack:           slackSignIn,
		GroupTickets: func(ctx context.Context, group int64) ([]int64, error) {
			g, err := groups.Group(ctx, group)
			return g.Tickets, err
		},
		ActiveSilences: func(ctx context.Context) ([]web.ListedSilence, error) {
			list, err := silences.List(ctx, silence.Filter{States: []string{silence.Active}, Limit: 50})
			out := make([]web.ListedSilence, 0, len(list))
			for _, si := range list {
				out = append(out, webSilence(si))
			}
			return out, err
		},
		HeldBy: silences.HeldBy,
		AddSilence: func(ctx context.Context, d web.SilenceDraft) (web.ListedSilence, []string, error) {
			req := silence.Request{Matchers: d.Matchers, End: d.End, By: d.By, Comment: d.Comment, Force: d.Force}
			added, plan, err := silences.Request(ctx, req, s.KnownToSilences(), s.now())
			if err != nil {
				return web.ListedSilence{}, nil, silenceRefused(err)
			}
			out := webSilence(added)
			out.OpenTickets = plan.OpenTickets
			return out, plan.Warnings, nil
		},
		PreviewSilence: func(ctx context.Context, d web.SilenceDraft) (web.SilencePreview, error) {
			return PreviewSilence(ctx, silences, d, s.KnownToSilences(), s.now())
		},
		ExpireSilence: func(ctx context.Context, id int64, by string) (web.ListedSilence, error) {
			si, err := silences.Expire(ctx, id, by)
			if errors.Is(err, silence.ErrNotFound) || errors.Is(err, silence.ErrEnded) {
				return web.ListedSilence{}, fmt.Errorf("%w: %w", web.ErrSilenceGone, err)
			}
			if err != nil {
				return web.ListedSilence{}, silenceRefused(err)
			}
			return webSilence(si), nil
		},
		MessageURL: func(ctx context.Context, id int64) (string, error) {
			root, err := messages.RootOf(ctx, outbox.Notification{TicketID: id})
			if err != nil || !root.Live {
				return "", err
			}
			return SlackMessageURL(root.Channel, root.TS), nil
		},
		Logger: s.Logger,
		Now:    s.now,
	})
}

// people are the Slack user ids the configuration names as reviewers or
// owners: who may sign in with Slack besides web.users and web.viewers.
func (s *App) people() []string {
	return append(s.owners(), s.Config.Slack.Reviewers...)
}

// owners are the owners the configuration names: review.default_owner,
// review.owners' and the escalation levels'.
func (s *App) owners() []string {
	c := s.Config
	out := []string{c.Review.DefaultOwner}
	for _, owners := range []map[string]string{c.Review.Owners.Workflows, c.Review.Owners.Providers} {
		for _, id := range owners {
			out = append(out, id)
		}
	}
	for _, level := range c.Review.Escalation {
		out = append(out, level.Owner)
	}
	return out
}

// Assignees is whom a ticket may be reassigned to, from every surface:
// the people the configuration names as owners or reviewers, and
// web.users' ids but for those who are viewers alone (they may never
// act), by Slack user id when Slack is on.
func (s *App) Assignees() review.Assignees {
	known := s.people()
	viewers := map[string]bool{}
	for _, id := range s.Config.Web.Viewers {
		viewers[id] = true
	}
	for _, id := range s.Config.Web.Users {
		if !viewers[id] {
			known = append(known, id)
		}
	}
	return review.NewAssignees(s.Config.Slack.Channel != "", known)
}

// WebListen is the address the review page is served on: the admin
// listener when http.admin_listen is set — the page is for the people who
// review, beside the other pages they open, and not on the listener that
// faces Slack — else http.listen.
func (s *App) WebListen() string {
	if s.Config.HTTP.AdminListen != "" {
		return s.Config.HTTP.AdminListen
	}
	return s.Config.HTTP.Listen
}

// PlainLoopback reports whether listen (host:port) binds a loopback
// address only, where the page is reached over plain HTTP from the same
// machine and a Secure cookie would never come back.
func PlainLoopback(listen string) bool {
	host, _, err := net.SplitHostPort(listen)
	if err != nil {
		return false
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	addr, err := netip.ParseAddr(host)
	return err == nil && addr.IsLoopback()
}

// SlackMessageURL is the link to message ts in channel.
func SlackMessageURL(channel, ts string) string {
	return "https://slack.com/archives/" + channel + "/p" + strings.ReplaceAll(ts, ".", "")
}
