// Package oauth makes the bridge an OAuth 2.1 resource server (MCP
// authorization, 2025-06-18 and later; RFC 9728, RFC 8707, RFC 6750): it
// validates the access tokens an 'auth:' block's issuer hands out.
//
// It owns:
//   - RemoteIssuer: an authorization server reached over HTTP — metadata
//     by RFC 8414 or OIDC discovery (its issuer must match exactly), the
//     JWKS at its jwks_uri, kept for a while, fetched again on an unknown
//     key id at most every MinRefresh (so a flood of bad tokens cannot
//     hammer the issuer), kept in use when a later fetch fails;
//   - Verifier, the seam: anything that checks a token's signature and
//     lifetime and returns its Claims (an issuer whose keys the bridge
//     holds itself is one more Verifier);
//   - Policy: audience (the endpoint's own resource URL, RFC 8707),
//     allowed subjects and required scopes;
//   - the documents and challenges clients read: protected-resource
//     metadata (RFC 9728) and WWW-Authenticate (RFC 6750, RFC 9728 §5.1).
//
// It never hand-rolls cryptography (go-jose verifies signatures and
// standard claims), never accepts "none" or HMAC, and never logs or keeps a
// token: only its claims. It knows nothing of routes or sessions: package
// bridge decides which Policy guards a request and puts the principal in
// the request's context.
//
// The specification (MCP 2025-11-25, basic/authorization) decides: "MCP
// servers MUST implement the OAuth 2.0 Protected Resource Metadata
// (RFC9728) specification to indicate the locations of authorization
// servers"; "MCP servers MUST validate that access tokens were issued
// specifically for them as the intended audience, according to RFC 8707
// Section 2"; "Invalid or expired tokens MUST receive a HTTP 401 response";
// 403 is for "Invalid scopes or insufficient permissions"; and "MCP servers
// MUST NOT accept or transit any other tokens" — the child never sees one.
package oauth
