package console

import (
	"bytes"
	"embed"
	"html/template"
	"net/http"
	"path"
)

// assets are the page's files, embedded: the console works offline and
// loads nothing from elsewhere.
//
//go:embed assets
var assets embed.FS

var (
	consoleTmpl = template.Must(template.ParseFS(assets, "assets/console.html"))
	loginTmpl   = template.Must(template.ParseFS(assets, "assets/login.html"))
)

// loginPage is the sign-in page's data.
type loginPage struct {
	Error       string
	Passphrase  bool
	Token       bool
	Unavailable string
	// Open: auth is off, the page asks for the console's per-run token.
	Open bool
	// Unlock offers the field for the one-time code of 'auth unlock'.
	Unlock bool
}

func (c *Console) renderLogin(w http.ResponseWriter, status int, d loginPage) {
	render(w, status, loginTmpl, d)
}

func (c *Console) renderConsole(w http.ResponseWriter, v *viewer) {
	csrf := v.csrf
	render(w, http.StatusOK, consoleTmpl, struct {
		CSRF, Version string
		Logout        bool
	}{csrf, c.opts.Version, v.login != nil})
}

func render(w http.ResponseWriter, status int, t *template.Template, d any) {
	var buf bytes.Buffer
	if err := t.Execute(&buf, d); err != nil {
		writeError(w, http.StatusInternalServerError, "the console's page could not be made: "+err.Error())
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}

// serveAsset serves one of the page's static files (no data in them:
// anyone may fetch them, the sign-in page uses the style sheet).
func serveAsset(w http.ResponseWriter, r *http.Request, name string) {
	types := map[string]string{".css": "text/css; charset=utf-8", ".js": "text/javascript; charset=utf-8"}
	ct, ok := types[path.Ext(name)]
	body, err := assets.ReadFile("assets/" + name)
	if !ok || err != nil || path.Base(name) != name {
		writeError(w, http.StatusNotFound, "no console asset "+name)
		return
	}
	w.Header().Set("Content-Type", ct)
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		_, _ = w.Write(body)
	}
}
