// Package doctor checks a bridge's public URL from outside, the way the
// clients people paste it into (ChatGPT, claude.ai, Claude Desktop and
// Code, VS Code, Cursor) will: through whatever is in front of it — a
// tunnel, a proxy, TLS — over the network, with nothing of the bridge's
// own state. Each check is one Result: what was found, and when it failed
// the likely cause and the fix, in the settings of the proxies people run
// (nginx, HAProxy, Caddy, cloudflared, ngrok).
//
// A check that needs what is not there (the endpoint needs a token the
// run was not given, the internet) is "skip", with why: it does not fail
// the run. A check whose finding only some clients mind is "warn".
//
// It changes nothing it did not create: the session it opens is deleted.
// It imports nothing of the bridge; cmd/stelae-bridge's 'doctor' runs it,
// and the console's panel may.
package doctor
