//go:build unix

package tests

// Headless-browser helpers shared by the console, approval-page and credentials-page tests:
// chromium finds the browser, browserFor starts it, and page (with eval, waitJS, text, confirm)
// drives one page of it.

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// chromium finds Debian's Chromium. In CI (CI set) a missing browser fails
// the test; elsewhere it is skipped, saying how to install it; with -short
// it is skipped.
func chromium(t *testing.T) string {
	t.Helper()
	return debianProgram(t, "chromium", "the browser tests", "/usr/bin/chromium", "/usr/bin/chromium-browser", "chromium")
}

// browserFor starts headless Chromium for t (skipped as chromium says).
func browserFor(t *testing.T) context.Context {
	t.Helper()
	bin := chromium(t)
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(bin), chromedp.NoSandbox, chromedp.DisableGPU, chromedp.UserDataDir(t.TempDir()),
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true), chromedp.Flag("no-first-run", true), chromedp.Flag("disable-quic", true))...)
	t.Cleanup(cancelAlloc)
	browser, cancel := chromedp.NewContext(allocCtx)
	t.Cleanup(cancel)
	// The first run starts the browser: no timeout on its context.
	if err := chromedp.Do(browser, chromedp.Navigate("about:blank")); err != nil {
		t.Fatalf("the browser did not start: %v", err)
	}
	return browser
}

// page drives one console page in the browser.
type page struct {
	t   *testing.T
	ctx context.Context
}

// eval evaluates a JavaScript expression.
func eval[T any](p *page, expr string) T {
	p.t.Helper()
	v, err := chromedp.Run(p.ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		p.t.Fatalf("%s: %v", expr, err)
	}
	return v
}

// waitJS waits (30 s at most) for a JavaScript condition to hold.
func (p *page) waitJS(what, cond string) {
	p.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		ok, err := chromedp.Run(p.ctx, chromedp.Evaluate[bool]("!!("+cond+")"))
		if err == nil && ok {
			return
		}
		if time.Now().After(deadline) {
			html, _ := chromedp.Run(p.ctx, chromedp.OuterHTML(chromedp.CSS("body")))
			p.t.Fatalf("waiting for %s (%s): %v\n%s", what, cond, err, html)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// text is the text of the first element sel matches ("" for none).
func (p *page) text(sel string) string {
	p.t.Helper()
	return eval[string](p, fmt.Sprintf(`(document.querySelector(%q)||{}).textContent||""`, sel))
}

// confirm clicks a two-step button twice (the first click asks to
// confirm).
func (p *page) confirm(sel string) {
	p.t.Helper()
	if err := chromedp.Do(p.ctx, chromedp.Click(chromedp.CSS(sel))); err != nil {
		p.t.Fatalf("click %s: %v", sel, err)
	}
	p.waitJS("the button to ask for confirmation", fmt.Sprintf(`document.querySelector(%q) && document.querySelector(%q).classList.contains("confirming")`, sel, sel))
	if err := chromedp.Do(p.ctx, chromedp.Click(chromedp.CSS(sel))); err != nil {
		p.t.Fatalf("confirm %s: %v", sel, err)
	}
}
