package main

import (
	"context"
	"crypto/x509"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/stelae-bridge/stelae-bridge/doctor"
)

// This file is 'stelae-bridge doctor URL': the checks of package doctor
// against a public URL, as the clients will see it.

const doctorUsage = `Usage: stelae-bridge doctor [flags] URL

Checks the URL a client is given (https://HOST/{destination}/mcp) from
outside, as ChatGPT, claude.ai, Claude Desktop and Code, VS Code and Cursor
will: TLS, the port, the MCP endpoint through whatever is in front of it,
the session header, streams (buffering, timeouts), CORS, the OAuth metadata
and the tools' count against each client's limit. Each failed check says
what is wrong, the likely cause and the fix. It exits 0 when no check
failed, 1 when one did, 2 on a usage error.

Flags:
`

// runDoctor runs 'stelae-bridge doctor'.
func runDoctor(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("stelae-bridge doctor", flag.ContinueOnError)
	asJSON := fs.Bool("json", false, "print the report as JSON (for scripts)")
	token := fs.String("token", getenv("STELAE_DOCTOR_TOKEN"), "a bearer token to send (a static token of the bridge's), so the checks behind auth run too (env STELAE_DOCTOR_TOKEN)")
	caFile := fs.String("ca", "", "a PEM file of CA certificates to trust besides the system's (a test CA)")
	hold := fs.Duration("hold", 0, "hold a stream open this long to find a proxy that cuts streams (say 100s; 0: not held)")
	wait := fs.Duration("keepalive-wait", 20*time.Second, "how long a stream may deliver nothing before the proxy is said to buffer it")
	offline := fs.Bool("offline", false, "skip the check that has the authorization server fetch a known client's metadata document (claude.ai's) from the internet")
	cimdClient := fs.String("cimd-client", "", "the client metadata document URL that check uses (default claude.ai's)")
	cimdRedirect := fs.String("cimd-redirect", "", "a redirect URI of that client (default claude.ai's)")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), doctorUsage)
		fs.PrintDefaults()
	}
	pos, code, done := parseSubcommand(fs, args, stdout, stderr)
	if done {
		return code
	}
	if len(pos) != 1 {
		fmt.Fprintln(stderr, "stelae-bridge doctor: give one URL, the endpoint's (https://HOST/{destination}/mcp)")
		fs.Usage()
		return 2
	}
	opts := doctor.Options{URL: pos[0], Token: *token, Hold: *hold, KeepaliveWait: *wait, Offline: *offline, CIMDClient: *cimdClient, CIMDRedirect: *cimdRedirect}
	if *caFile != "" {
		pem, err := os.ReadFile(*caFile)
		if err != nil {
			fmt.Fprintln(stderr, "stelae-bridge doctor:", err)
			return 2
		}
		pool, err := x509.SystemCertPool()
		if err != nil {
			pool = x509.NewCertPool()
		}
		if !pool.AppendCertsFromPEM(pem) {
			fmt.Fprintf(stderr, "stelae-bridge doctor: %s holds no PEM certificate\n", *caFile)
			return 2
		}
		opts.RootCAs = pool
	}
	rep := doctor.Run(ctx, opts)
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		_ = enc.Encode(rep)
	} else {
		rep.WriteText(stdout)
		if rep.OK {
			rep.WriteSteps(stdout)
		}
	}
	if !rep.OK {
		return 1
	}
	return 0
}
