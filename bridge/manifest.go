package bridge

import (
	"encoding/json"
	"github.com/stelae-bridge/stelae-bridge/config"
	"net/http"
)

// manifestServer is one destination in the discovery manifest.
type manifestServer struct {
	Name       string `json:"name"`
	Transport  string `json:"transport"`
	URL        string `json:"url"`
	Version    string `json:"version"`
	ToolsKnown bool   `json:"tools_known"`
}

// serveManifest answers /.well-known/mcp/manifest.json: every destination
// with its absolute URL, and the tools clients will see.
func (b *Bridge) serveManifest(w http.ResponseWriter, r *http.Request) {
	t := b.t()
	if !onlyGet(w, r) {
		return
	}
	base := b.baseURL(r)
	servers := []manifestServer{}
	tools := []json.RawMessage{}
	for _, n := range t.names {
		ts, known := t.endpoints[n].Catalogue()
		servers = append(servers, manifestServer{Name: n, Transport: "streamable-http", URL: base + "/" + n + "/mcp", Version: b.opts.Version, ToolsKnown: known})
		tools = append(tools, ts...)
	}
	// A profile is one more server (its tools are its members', renamed).
	for _, n := range t.cfg.ProfileNames {
		if ep := t.profileEndpoint(n); ep != nil {
			_, known := ep.Catalogue()
			servers = append(servers, manifestServer{Name: config.ProfileKey(n), Transport: "streamable-http", URL: base + config.ProfilePath(n), Version: b.opts.Version, ToolsKnown: known})
		}
	}
	writeJSON(w, r, http.StatusOK, map[string]any{"servers": servers, "tools": tools})
}

// serveToolsList answers /tools/list: every destination's tools, each
// naming its destination.
func (b *Bridge) serveToolsList(w http.ResponseWriter, r *http.Request) {
	t := b.t()
	if !onlyGet(w, r) {
		return
	}
	tools := []map[string]json.RawMessage{}
	for _, n := range t.names {
		ts, _ := t.endpoints[n].Catalogue()
		dest, _ := json.Marshal(n)
		for _, t := range ts {
			var obj map[string]json.RawMessage
			if json.Unmarshal(t, &obj) != nil {
				continue
			}
			obj["destination"] = dest
			tools = append(tools, obj)
		}
	}
	writeJSON(w, r, http.StatusOK, map[string]any{"tools": tools})
}
