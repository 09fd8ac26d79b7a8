//go:build unix

package tests

// The built-in authorization server's approval page in headless Chromium: it renders, names the
// client and the destination, refuses a wrong passphrase, and sends the browser to the client's
// redirect URI with a code.

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestApprovalPageInABrowser: the approval page in headless Chromium — it
// renders, names the client and the destination, refuses a wrong
// passphrase, and with the right one sends the browser to the client's
// redirect URI with a code.
func TestApprovalPageInABrowser(t *testing.T) {
	bin := chromium(t)
	b, _ := builtinBridge(t, t.TempDir())
	// The client's redirect URI is a loopback page of the test's (as a
	// native app's would be): the browser must arrive there.
	arrived := make(chan string, 1)
	cb := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/callback" {
			http.NotFound(w, r) // the browser's favicon.ico
			return
		}
		select {
		case arrived <- r.URL.String():
		default:
		}
		fmt.Fprint(w, "<p>back at the client</p>")
	}))
	defer cb.Close()
	c := newOAuthClient(t, b.srv.URL)
	c.redirectURI = cb.URL + "/callback"
	c.register()
	_, challenge := pkce("browser")
	authURL := c.authorizeURL(challenge, b.url("notes"))

	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(bin), chromedp.NoSandbox, chromedp.DisableGPU, chromedp.UserDataDir(t.TempDir()),
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true), chromedp.Flag("no-first-run", true), chromedp.Flag("disable-quic", true))...)
	defer cancelAlloc()
	browser, cancel := chromedp.NewContext(allocCtx)
	defer cancel()
	// The first run starts the browser: no timeout on its context.
	if err := chromedp.Do(browser, chromedp.Navigate(authURL)); err != nil {
		t.Fatalf("the browser did not open the page: %v", err)
	}
	ctx, cancelT := context.WithTimeout(browser, 60*time.Second)
	defer cancelT()
	text := func(sel string) string {
		t.Helper()
		v, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(sel)))
		if err != nil {
			t.Fatalf("%s: %v", sel, err)
		}
		return strings.TrimSpace(v)
	}
	if err := chromedp.Do(ctx, chromedp.WaitVisible(chromedp.CSS("#passphrase"))); err != nil {
		t.Fatalf("the page did not render: %v", err)
	}
	if client, dest, host := text("#client"), text("#destination"), text("#redirect-host"); client != "Test Connector" || dest != "notes" || host != strings.TrimPrefix(cb.URL, "http://") {
		t.Errorf("the page shows client %q, destination %q, redirect host %q", client, dest, host)
	}
	// A wrong passphrase: the page again, saying so.
	if err := chromedp.Do(ctx,
		chromedp.SendKeys(chromedp.CSS("#passphrase"), "not the passphrase"),
		chromedp.Click(chromedp.CSS("#approve")),
		chromedp.WaitVisible(chromedp.CSS("#problem")),
	); err != nil {
		loc, _ := chromedp.Run(browser, chromedp.Location())
		page, _ := chromedp.Run(browser, chromedp.OuterHTML(chromedp.CSS("html")))
		t.Fatalf("wrong passphrase: %v (at %s)\n%s", err, loc, page)
	}
	if problem := text("#problem"); !strings.Contains(problem, "Wrong passphrase") {
		t.Errorf("after a wrong passphrase the page says %q", problem)
	}
	// The right one: the browser goes to the client's redirect URI (which
	// does not exist: the navigation to it is what is checked).
	if err := chromedp.Do(ctx,
		chromedp.SendKeys(chromedp.CSS("#passphrase"), testPassphrase),
		chromedp.Click(chromedp.CSS("#approve")),
	); err != nil {
		t.Fatalf("approve: %v", err)
	}
	var got string
	select {
	case got = <-arrived:
	case <-ctx.Done():
		t.Fatal("the browser did not arrive at the redirect URI")
	}
	u, _ := url.Parse(got)
	if u.Path != "/callback" || u.Query().Get("code") == "" || u.Query().Get("state") != "st-1" || u.Query().Get("iss") != b.srv.URL {
		t.Errorf("the browser arrived at %s; want /callback with code, state and iss", got)
	}

	// Someone else guesses from the same address (as behind a tunnel)
	// until the page is locked; the browser that approved before still
	// gets in (its trusted-browser cookie).
	locked := false
	for range 30 {
		if resp, _ := c.approve(authURL, "wrong guess"); resp.StatusCode == http.StatusTooManyRequests {
			locked = true
			break
		}
	}
	if !locked {
		t.Fatal("30 wrong guesses were not locked out")
	}
	if err := chromedp.Do(ctx,
		chromedp.Navigate(authURL),
		chromedp.WaitVisible(chromedp.CSS("#passphrase")),
		chromedp.SendKeys(chromedp.CSS("#passphrase"), testPassphrase),
		chromedp.Click(chromedp.CSS("#approve")),
	); err != nil {
		t.Fatalf("approve during the attack: %v", err)
	}
	select {
	case got = <-arrived:
	case <-ctx.Done():
		page, _ := chromedp.Run(browser, chromedp.OuterHTML(chromedp.CSS("html")))
		t.Fatalf("the operator's browser was held by the others' wrong guesses:\n%s", page)
	}
	if u, _ := url.Parse(got); u.Query().Get("code") == "" {
		t.Errorf("during the attack the browser arrived at %s; want a code", got)
	}
}
