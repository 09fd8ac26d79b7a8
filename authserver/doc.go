// Package authserver is the bridge's own OAuth 2.1 authorization server
// ('auth: {issuer: builtin}'), for people with no identity provider: a
// connector registers (or names its client metadata document), the
// operator approves it on the bridge's page with a passphrase, and the
// connector gets tokens for one destination.
//
// It owns:
//   - the metadata (RFC 8414, also at the OIDC discovery path), the
//     authorization endpoint and its approval page (CSRF token, passphrase
//     compared in constant time, a lockout per address and for the whole
//     server with the operator's own ways in: lockout.go, which the
//     console's sign-in uses too through OperatorSignIn), the token endpoint
//     (authorization_code with PKCE S256, refresh_token with rotation and
//     reuse detection), registration (RFC 7591), revocation (RFC 7009) and
//     the JWKS;
//   - client identification: Client ID Metadata Documents (fetched on their
//     own context, deduplicated and bounded — at once, a minute for
//     everyone and per requesting address, charged only for fetches that
//     reached the network: cimd.go — from public addresses only, ssrf.go),
//     dynamic registration (rate-limited per address,
//     capped, unapproved ones expire), clients pre-registered in the file;
//   - users (users.go): people the operator invites ('stelae-bridge auth
//     invite NAME' prints a one-time link to the invite page, invite.go,
//     where they set their own secret, kept as an argon2id hash:
//     secret.go); each signs in on the approval page with name and secret
//     under a lockout of their own (usersignin.go), and their tokens carry
//     their own subject ("u_" and 32 hex digits, never reused) where the
//     passphrase's carry OperatorSubject. Disabling or removing a user
//     refuses their tokens at once and calls OnUserGone's functions (the
//     bridge stops their children); Users and UserName show them to the
//     rest of the bridge. With no users, everything is as before them;
//   - the credentials page (credentials.go, PathCredentials/{destination}):
//     a user signs in there with name and secret (the operator with the
//     passphrase), under the approval page's lockout, and sets, replaces
//     or deletes the credentials a user-isolated destination asks each
//     user for; no value is ever shown back. The bridge serves the
//     destinations and its encrypted store through Credentials
//     (SetCredentials): this package imports neither. An approval for
//     such a destination whose user has not entered them goes through the
//     page before the client gets its code;
//   - its state in one bbolt file: ES256 signing keys (rotated; the
//     previous one still published), clients, codes and refresh tokens
//     (stored hashed), trusted browsers, users and invites (codes stored
//     hashed, secrets by argon2id);
//   - the Verifier the resource side (package oauth's Policy) checks its
//     tokens with; a revoked client's tokens, and those of a revoked
//     refresh-token family, and those of a user disabled or removed, are
//     refused at once.
//
// It never sees a client's MCP traffic, never stores a code, refresh token
// or secret in clear, and never logs a token, code, secret or the
// passphrase. Its
// issuer URL is the bridge's public URL of each request (WithBase), so it
// serves under whatever name clients reach the bridge by.
//
// The specification (MCP 2025-11-25, basic/authorization) decides:
// "Authorization servers MUST implement OAuth 2.1 with appropriate security
// measures for both confidential and public clients"; PKCE is required
// (OAuth 2.1), so code_challenge_methods_supported lists S256 and plain is
// refused; "For public clients, authorization servers MUST rotate refresh
// tokens"; "All authorization server endpoints MUST be served over HTTPS"
// — the bridge's public URL behind a tunnel is https.
package authserver
