package doctor

// The fixes, in the settings of the proxies and tunnels people put in
// front of the bridge (deploy/ has whole configurations).
const (
	fixBuffering = "turn response buffering off for the MCP path: nginx 'proxy_buffering off;' (and 'proxy_cache off;'), " +
		"HAProxy 'option http-no-delay' (HAProxy does not buffer streams by default: look for a compression or cache filter), " +
		"Caddy 'flush_interval -1' in reverse_proxy, cloudflared: nothing to set (check a Cloudflare cache rule), ngrok: nothing to set"
	fixStreamTimeout = "let streams stay open: nginx 'proxy_read_timeout 1h;' (with 'proxy_buffering off;'), HAProxy 'timeout tunnel 1h' " +
		"(it governs a stream once its answer began; 'timeout server' the wait for the answer), Caddy: none by default, cloudflared: none, ngrok: none; " +
		"or lower the bridge's -keepalive below the proxy's timeout"
	fixWellKnown = "forward /.well-known/ to the bridge as well as the MCP path: nginx 'location /.well-known/ { proxy_pass http://BRIDGE; }', " +
		"HAProxy 'use_backend bridge if { path_beg /.well-known/ }', Caddy 'reverse_proxy /.well-known/* BRIDGE', " +
		"cloudflared/ngrok: route the whole hostname, not one path"
	fixOAuthPaths = "forward /oauth/ to the bridge (its authorization server): nginx 'location /oauth/ { proxy_pass http://BRIDGE; }', " +
		"HAProxy 'use_backend bridge if { path_beg /oauth/ }', Caddy 'reverse_proxy /oauth/* BRIDGE', cloudflared/ngrok: route the whole hostname"
	fixHost = "let the bridge accept the Host clients send: give it -public-url https://HOST (or -allowed-hosts HOST), " +
		"or have the proxy send the bridge's own Host (nginx 'proxy_set_header Host $host;' with -allowed-hosts, HAProxy 'http-request set-header Host …')"
	fixPublicURL     = "give the bridge -public-url with the URL clients use (scheme, host and port as they see them), so the metadata names it"
	fixSessionHeader = "pass the Mcp-Session-Id header both ways: nginx passes it (check 'proxy_pass_request_headers' and any 'proxy_hide_header'), " +
		"HAProxy passes it (check 'http-request del-header'), and a CDN must not cache or strip it"
	fixCIMD = "use the bridge's built-in authorization server (auth: {issuer: builtin}), which publishes client_id_metadata_document_supported and \"none\", " +
		"or turn client ID metadata documents on at your issuer"
	fixTools = "give this client a profile with fewer tools ('profiles:' in destinations.yaml, or a destination's 'tools:' filter)"
	fixCORS  = "the bridge answers CORS itself: let OPTIONS through the proxy to the bridge, and allow the browser client's origin with -allowed-origins"
)
