// Package peruser is what a child of its own per user needs beyond the
// bridge's routing ('isolation: user' with 'credentials:', issue 35): the
// user's credentials for a destination and the child that stands in while
// they are missing.
//
// It owns:
//   - where a user's credentials come from (credentials.go): the
//     operator's provisioning (-credentials-dir: DIR/DESTINATION/NAME of
//     NAME=value lines, for a user whose name the operator gave, and
//     DIR/DESTINATION/oauth/SUBJECT for an external issuer's), and over it
//     what the user entered (credstore, encrypted at rest); Of takes the
//     declared variables only and names the required ones that are
//     missing or not of their pattern, never a value; UserDestination is
//     the destination with them in its child's environment;
//   - the stand-in (standin.go): an in-process MCP server that answers a
//     user without their credentials — the handshake, the destination's
//     tools as its users' children listed them, and every call with what
//     to supply and where (a URL-mode elicitation of the credentials page
//     first, where there is one) — so that no half-configured child
//     starts.
//
// The values reach nothing but the environment of that user's child:
// never its argv, a log line, an error or a page. It imports config,
// session (a User), credstore, dispatch (a meta key), jsonrpc and
// supervisor (the Child the stand-in is); the bridge calls it when it
// makes a user's endpoint.
package peruser
