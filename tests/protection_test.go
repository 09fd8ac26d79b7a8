//go:build unix

package tests

// A protection the operator asked for is never silently absent: a passphrase protects a file
// without an 'auth:' block (the README's commands), across reloads; what cannot be protected as
// asked is refused at the start, saying how.

import (
	"context"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stelae-bridge/stelae-bridge/tests/fakemcp"
)

// binaryWithEnv runs the bridge binary with extra environment variables.
func binaryWithEnv(t *testing.T, env []string, args ...string) *binaryProc {
	t.Helper()
	cmd := exec.Command(bridgeBinary(t), append([]string{"-listen", "127.0.0.1:0", "-state-dir", t.TempDir()}, args...)...)
	cmd.Env = append(os.Environ(), env...)
	return runBinary(t, cmd)
}

// refusedAtStart runs the binary, which must exit at once with an error
// saying every one of want.
func refusedAtStart(t *testing.T, env []string, args []string, want ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bridgeBinary(t), append([]string{"-listen", "127.0.0.1:0", "-state-dir", t.TempDir()}, args...)...)
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	if err == nil || ctx.Err() != nil {
		t.Fatalf("the bridge started (or hung: %v); want it refused:\n%s", ctx.Err(), out)
	}
	for _, w := range want {
		if !strings.Contains(string(out), w) {
			t.Errorf("the refusal does not say %q:\n%s", w, out)
		}
	}
}

// TestPassphraseProtectsAsWritten: the README's command — a passphrase and
// an https public URL — with a destinations file that has no 'auth:'
// block serves a bridge the built-in authorization server protects: the
// banner says so, a request without a token gets 401 pointing at the
// resource metadata, and a reload of the same file keeps it protected.
// (The bridge once started open: 200 to anyone at the public URL.)
func TestPassphraseProtectsAsWritten(t *testing.T) {
	config := fakeDestinations(t, map[string]string{"fake": fakemcp.ModeServer})
	// An operator token too, to read the metrics: it does not change
	// what a client without one is told.
	tokens := writeTokens(t, "operator-token-of-the-protection-test")
	p := binaryWithEnv(t, []string{"STELAE_OAUTH_PASSPHRASE=a long passphrase for the test"},
		"-config", config, "-public-url", "https://bridge.example.test", "-auth-tokens-file", tokens)
	waitFor(t, 10*time.Second, "the banner", func() bool { return strings.Contains(p.logs.String(), "operator console") })
	if banner := p.logs.String(); !strings.Contains(banner, "OAuth: the built-in authorization server") || !strings.Contains(banner, "has no 'auth:' block") {
		t.Errorf("the banner does not say the built-in server protects the destinations:\n%s", banner)
	}
	unauthenticated := func(what string) {
		t.Helper()
		r := mustRequest(t, http.MethodPost, p.base+"/fake/mcp", "", initBody)
		if r.status != http.StatusUnauthorized || !strings.Contains(r.header.Get("WWW-Authenticate"), "resource_metadata=") {
			t.Fatalf("%s: initialize without a token: %d %v %s; want 401 with resource_metadata (OAuth)", what, r.status, r.header, r.body)
		}
	}
	unauthenticated("at the start")
	r := mustRequest(t, http.MethodGet, p.base+"/.well-known/oauth-authorization-server", "", "")
	if r.status != http.StatusOK || !strings.Contains(string(r.body), "https://bridge.example.test") {
		t.Errorf("the built-in server's metadata: %d %s", r.status, r.body)
	}
	// A reload of the same file changes nothing (it once dropped the
	// implicit block: "applied", and the destination open).
	if err := p.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	metrics := func() map[string]float64 {
		return scrapeURL(t, p.base, "Authorization", "Bearer operator-token-of-the-protection-test")
	}
	waitFor(t, 10*time.Second, "the reload", func() bool {
		m := metrics()
		return m[`stelae_config_reloads_total{result="unchanged"}`]+m[`stelae_config_reloads_total{result="applied"}`] > 0
	})
	if m := metrics(); m[`stelae_config_reloads_total{result="unchanged"}`] != 1 {
		t.Errorf("the reload of the same file: applied %v, unchanged %v; want unchanged", m[`stelae_config_reloads_total{result="applied"}`], m[`stelae_config_reloads_total{result="unchanged"}`])
	}
	unauthenticated("after a reload")
}

// writeTokens writes a tokens file.
func writeTokens(t *testing.T, tokens ...string) string {
	t.Helper()
	path := t.TempDir() + "/tokens"
	if err := os.WriteFile(path, []byte(strings.Join(tokens, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestOpenAtAPublicURLRefused: an https -public-url with a destination no
// credential protects is refused at the start, naming the destination and
// the ways to protect it, unless -public-open says it is meant to be; a
// passphrase beside 'auth:' blocks that all name another issuer is
// refused too, and so is 'isolation: user' with no users to tell apart.
func TestOpenAtAPublicURLRefused(t *testing.T) {
	config := fakeDestinations(t, map[string]string{"fake": fakemcp.ModeServer})
	refusedAtStart(t, nil, []string{"-config", config, "-public-url", "https://bridge.example.test"},
		"destination fake would be open", "auth: {issuer: builtin}", "-auth-tokens-file", "-public-open")
	p := binaryWithEnv(t, nil, "-config", config, "-public-url", "https://bridge.example.test", "-public-open")
	c := newClient(t, p.base+"/fake/mcp")
	c.initialize()
	echoCall(t, c, `"open"`, "open on purpose")

	// A child per user with nothing to tell users apart (issue 35).
	perUser := fakeDestinationsWith(t, map[string]string{"fake": fakemcp.ModeServer}, "    isolation: user\n")
	refusedAtStart(t, nil, []string{"-config", perUser}, "destination fake is 'isolation: user'", "nothing tells its users apart", "NAME: TOKEN")

	issuer := fakeDestinationsWith(t, map[string]string{"fake": fakemcp.ModeServer}, "    auth:\n      issuer: https://idp.example.test\n")
	refusedAtStart(t, []string{"STELAE_OAUTH_PASSPHRASE=a long passphrase for the test"}, []string{"-config", issuer},
		"a passphrase is set", "names another issuer")
}
