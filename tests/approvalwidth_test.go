//go:build unix

package tests

// The built-in server's approval page at phone width (390 px) in headless Chromium: a long client
// id wraps inside the page, which does not scroll sideways.

import (
	"context"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/stelae-bridge/stelae-bridge/authserver"
	"github.com/stelae-bridge/stelae-bridge/config"
	"github.com/stelae-bridge/stelae-bridge/tests/fakemcp"
)

// TestApprovalPageAtPhoneWidth: the built-in server's approval page in
// headless Chromium at 390 px: a long client id (a metadata document's
// URL) wraps inside the page — the page does not scroll sideways and the
// id's box ends within the viewport — so the operator reads all of what
// they approve. The screenshot goes to $STELAE_SCREENSHOTS, else a
// temporary directory.
func TestApprovalPageAtPhoneWidth(t *testing.T) {
	browser := browserFor(t)
	const longID = "https://connector.example/oauth/mcp-client-metadata-documents/a-rather-long-path-segment/client-metadata.json"
	as, err := authserver.Open(filepath.Join(t.TempDir(), "oauth.db"), authserver.Options{Passphrase: testPassphrase,
		Clients: []authserver.Client{{ID: longID, Name: "Long Id Connector", RedirectURIs: []string{"https://connector.example/cb"}}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { as.Close() })
	b := newBridge(t, map[string]string{"notes": fakemcp.ModeServer}, bridgeConfig{auth: &config.Auth{Issuer: config.IssuerBuiltin}, authServer: as})
	_, challenge := pkce("phone")
	q := url.Values{"response_type": {"code"}, "client_id": {longID}, "redirect_uri": {"https://connector.example/cb"}, "state": {"s"},
		"code_challenge": {challenge}, "code_challenge_method": {"S256"}, "resource": {b.url("notes")}}
	ctx, cancel := context.WithTimeout(browser, time.Minute)
	defer cancel()
	p := &page{t: t, ctx: ctx}
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(390, 844, chromedp.EmulateScale(1), chromedp.EmulateMobile)); err != nil {
		t.Fatal(err)
	}
	resp, err := chromedp.Run(ctx, chromedp.NavigateResponse(b.srv.URL+authserver.PathAuthorize+"?"+q.Encode()))
	if err != nil || resp.Status != http.StatusOK {
		t.Fatalf("the approval page: %v %v", err, resp)
	}
	p.waitJS("the page", `document.querySelector("#approve")`)
	if got := p.text("dd code"); got != longID {
		t.Errorf("the page shows the client id %q, want %q", got, longID)
	}
	// A phone widens its layout to content that does not fit (innerWidth
	// grows): either width past 390 px is the page not fitting.
	if over := eval[float64](p, `Math.max(document.documentElement.scrollWidth, window.innerWidth) - 390`); over > 1 {
		t.Errorf("the approval page is %v px wider than a 390 px phone (it scrolls sideways, the client id cut)", over)
	}
	if right := eval[float64](p, `document.querySelector("dd code").getBoundingClientRect().right`); right > 390 {
		t.Errorf("the client id's box ends at %v px, past the 390 px viewport", right)
	}
	img, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatal(err)
	}
	dir := os.Getenv("STELAE_SCREENSHOTS")
	if dir == "" {
		dir = t.TempDir()
	}
	if err := os.WriteFile(filepath.Join(dir, "approval-phone.png"), img, 0o644); err != nil {
		t.Fatal(err)
	}
}
