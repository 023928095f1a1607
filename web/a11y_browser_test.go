package web_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// axeDir holds the package.json and package-lock.json of axe-core, which
// TestInABrowser runs in each page; its node_modules is installed with
// `npm ci` when missing (make test does it first) and never committed.
const axeDir = "testdata/axe"

// axeSource is axe-core's axe.min.js, installed with npm ci into axeDir
// if it is not there yet. Without it the test fails: it never skips.
func axeSource(t *testing.T) string {
	t.Helper()
	path := filepath.Join(axeDir, "node_modules", "axe-core", "axe.min.js")
	if _, err := os.Stat(path); err != nil {
		cmd := exec.Command("npm", "ci", "--no-audit", "--no-fund")
		cmd.Dir = axeDir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("axe-core is not installed and npm ci in web/%s failed: %v\n%s", axeDir, err, out)
		}
	}
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("axe-core: %v", err)
	}
	if !strings.Contains(string(src), "axe") || len(src) < 100_000 {
		t.Fatalf("axe-core: %s is not axe.min.js (%d bytes)", path, len(src))
	}
	return string(src)
}

// widths are the screens every page is checked on: a laptop's and a
// small phone's.
var widths = []int64{1366, 360}

// focusables lists, in document order, the elements a Tab reaches: what
// a keyboard user walks through.
const focusables = `(() => [...document.querySelectorAll('a[href], button, input:not([type=hidden]), select, textarea, summary, [tabindex]:not([tabindex="-1"])')]
	.filter(e => !e.disabled && e.getClientRects().length > 0 && getComputedStyle(e).visibility !== 'hidden' && !e.closest('details:not([open]) > :not(summary)')))()`

// pageFacts are what inspect measures of one page at one width.
type pageFacts struct {
	ScrollWidth int      `json:"scrollWidth"`
	ClientWidth int      `json:"clientWidth"`
	FirstStop   string   `json:"firstStop"`
	SkipTarget  bool     `json:"skipTarget"`
	Offscreen   []string `json:"offscreen"`
	Unnamed     []string `json:"unnamed"`
}

const measure = `(() => {
	const d = document.documentElement, stops = ` + focusables + `;
	const first = stops[0];
	const skip = first && first.matches('a.skip') ? document.getElementById(first.getAttribute('href').slice(1)) : null;
	const off = [...document.querySelectorAll('td.agree, td.differ, td.unknown, main *')].filter(e => {
		const r = e.getBoundingClientRect();
		return r.width > 0 && (r.right > d.clientWidth + 1 || r.left < -1) && !e.closest('.visually-hidden, .skip, .scroll');
	}).slice(0, 5).map(e => e.tagName.toLowerCase() + (e.id ? '#' + e.id : '') + (e.className ? '.' + e.className : '') + ' right ' + Math.round(e.getBoundingClientRect().right));
	const unnamed = [...document.querySelectorAll('input:not([type=hidden]), select, textarea, button')].filter(e =>
		!(e.labels && e.labels.length) && !e.getAttribute('aria-label') && !e.getAttribute('aria-labelledby') && !(e.tagName === 'BUTTON' && e.textContent.trim()))
		.map(e => e.outerHTML.slice(0, 80));
	return {scrollWidth: d.scrollWidth, clientWidth: d.clientWidth, firstStop: first ? first.outerHTML.slice(0, 80) : '',
		skipTarget: !!skip, offscreen: off, unnamed: unnamed};
})()`

// axeRun runs axe-core on the page and returns its violations of impact
// serious or critical, one line each.
const axeRun = `axe.run(document, {resultTypes: ['violations']}).then(r => r.violations
	.filter(v => v.impact === 'serious' || v.impact === 'critical')
	.map(v => v.impact + ' ' + v.id + ': ' + v.help + ' — ' + v.nodes.slice(0, 3).map(n => n.target.join(' ') + ' (' + n.failureSummary.replace(/\s+/g, ' ') + ')').join('; ')))`

// inspect checks the page the browser shows at each of widths: axe-core
// finds no serious or critical violation, nothing is wider than the
// screen (no horizontal scrollbar, no element past its right edge), the
// first Tab stop is a skip link to an element that exists, and every
// control has a name. It takes a screenshot at each width when shot is
// set (name.png at 1366 px, name-phone.png at 360 px). It leaves the
// window at 1366 px.
func inspect(t *testing.T, browser context.Context, axe, page, shot string, write func(name string)) {
	t.Helper()
	for _, w := range widths {
		if err := chromedp.Do(browser, chromedp.EmulateViewport(w, 900)); err != nil {
			t.Fatalf("browser: %s at %d px: %v", page, w, err)
		}
		loaded, err := chromedp.Run(browser, chromedp.Evaluate[bool](`typeof axe !== 'undefined'`))
		if err != nil {
			t.Fatalf("browser: %s: %v", page, err)
		}
		if !loaded {
			if _, err := chromedp.Run(browser, chromedp.Evaluate[any](axe+"\n;true")); err != nil {
				t.Fatalf("browser: load axe-core into %s: %v", page, err)
			}
		}
		violations, err := chromedp.Run(browser, chromedp.Evaluate[[]string](axeRun, chromedp.EvalAwaitPromise))
		if err != nil {
			t.Fatalf("browser: axe-core on %s at %d px: %v", page, w, err)
		}
		for _, v := range violations {
			t.Errorf("%s at %d px: axe-core: %s", page, w, v)
		}
		f, err := chromedp.Run(browser, chromedp.Evaluate[pageFacts](measure))
		if err != nil {
			t.Fatalf("browser: measure %s: %v", page, err)
		}
		if f.ScrollWidth > f.ClientWidth {
			t.Errorf("%s at %d px scrolls sideways: %d px wide in %d", page, w, f.ScrollWidth, f.ClientWidth)
		}
		if len(f.Offscreen) > 0 {
			t.Errorf("%s at %d px: past the screen's edge: %s", page, w, strings.Join(f.Offscreen, "; "))
		}
		if !strings.Contains(f.FirstStop, `class="skip"`) || !f.SkipTarget {
			t.Errorf("%s: the first Tab stop is %s, not a skip link to an element of the page", page, f.FirstStop)
		}
		if len(f.Unnamed) > 0 {
			t.Errorf("%s: controls without a name: %s", page, strings.Join(f.Unnamed, "; "))
		}
		if shot != "" {
			name := shot + ".png"
			if w < 1000 {
				name = shot + "-phone.png"
			}
			write(name)
		}
	}
	if err := chromedp.Do(browser, chromedp.EmulateViewport(1366, 900)); err != nil {
		t.Fatalf("browser: %v", err)
	}
}

// tabStopsBefore counts the Tab stops before the first element sel
// matches, in document order.
func tabStopsBefore(t *testing.T, browser context.Context, sel string) int {
	t.Helper()
	n, err := chromedp.Run(browser, chromedp.Evaluate[int](fmt.Sprintf(`(() => { const stops = %s, first = document.querySelector(%q);
		return first ? stops.indexOf(first) : -1; })()`, focusables, sel)))
	if err != nil {
		t.Fatalf("browser: count Tab stops: %v", err)
	}
	return n
}

// activeIn reports whether the focused element is inside the first
// element sel matches, or is it.
func activeIn(t *testing.T, browser context.Context, sel string) (bool, string) {
	t.Helper()
	type focus struct {
		In   bool   `json:"in"`
		What string `json:"what"`
	}
	f, err := chromedp.Run(browser, chromedp.Evaluate[focus](fmt.Sprintf(`(() => { const a = document.activeElement, s = document.querySelector(%q);
		return {in: !!(s && a && s.contains(a)), what: a ? a.outerHTML.slice(0, 80) : ''}; })()`, sel)))
	if err != nil {
		t.Fatalf("browser: read the focus: %v", err)
	}
	return f.In, f.What
}
