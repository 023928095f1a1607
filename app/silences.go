package app

import (
	"cmp"
	"context"
	"errors"
	"maps"
	"slices"
	"time"

	"github.com/sweeper/sweeper/notify"
	"github.com/sweeper/sweeper/notify/silence"
	"github.com/sweeper/sweeper/web"
)

// The dispatchers meet the silences through notify.Muter alone.
var _ notify.Muter = (*silence.Store)(nil)

// Silences returns the silences' store over s's pool: what the
// dispatchers mute and release by, and what the CLI and the review page
// add, list and expire silences through.
func (s *App) Silences() *silence.Store { return silence.NewStore(s.Pool) }

// KnownToSilences are the providers, workflows and owners the
// configuration names — its providers, the workflows of review.owners and
// slack.channels, its owners — against which a silence asked
// for is checked ([silence.Store.Plan]).
func (s *App) KnownToSilences() silence.Known {
	c := s.Config
	known := silence.Known{Providers: slices.Sorted(maps.Keys(c.Providers)), Workflows: slices.Collect(maps.Keys(c.Review.Owners.Workflows)),
		Owners: s.owners()}
	known.Workflows = slices.AppendSeq(known.Workflows, maps.Keys(c.Slack.Channels.Workflows))
	return known
}

// webSilence is si as the review page shows it.
func webSilence(si silence.Silence) web.ListedSilence {
	return web.ListedSilence{ID: si.ID, Matchers: silence.MatchersText(si.Matchers), EndsAt: si.EndsAt,
		CreatedBy: si.CreatedBy, Comment: si.Comment, HeldTickets: si.HeldTickets}
}

// silenceRefused is err as the review page shows it: a silence the rules
// refuse (a *[silence.RefusedError]) as a *[web.RefusedError], forcible
// when only force overrides it; any other error as it is.
func silenceRefused(err error) error {
	refused, ok := errors.AsType[*silence.RefusedError](err)
	if !ok {
		return err
	}
	return &web.RefusedError{Problems: refused.Problems, Forcible: refused.Forcible}
}

// PreviewSilence is what silence draft d would hold if it were added at
// now ([silence.Store.Preview]): its open tickets, and each provider of
// theirs with how many. Nothing is added. A draft without an end shows
// none. Refusals are *[web.RefusedError].
func PreviewSilence(ctx context.Context, silences *silence.Store, d web.SilenceDraft, known silence.Known,
	now time.Time) (web.SilencePreview, error) {
	req := silence.Request{Matchers: d.Matchers, End: d.End, By: d.By, Comment: d.Comment, Force: d.Force}
	p, err := silences.Preview(ctx, req, known, now)
	if err != nil {
		return web.SilencePreview{}, silenceRefused(err)
	}
	out := web.SilencePreview{Matchers: silence.MatchersText(p.Silence.Matchers), OpenTickets: p.OpenTickets, Warnings: p.Warnings}
	if d.End != "" {
		out.EndsAt = p.Silence.EndsAt
	}
	for _, h := range p.Providers {
		out.Providers = append(out.Providers, web.HeldProvider{Name: cmp.Or(h.Provider, "(none)"), Tickets: h.Tickets})
	}
	return out, nil
}
