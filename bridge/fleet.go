package bridge

import (
	"fmt"
	"github.com/stelae-bridge/stelae-bridge/config"
	"github.com/stelae-bridge/stelae-bridge/httpx"
	"net/http"
	"strings"
)

// A bridge in a fleet ('instances:' in the destinations file, -instance)
// serves its own destinations; a request for one another instance owns
// is answered 421 Misdirected Request naming the owner — never served by
// a second child.

// misdirected answers a request for key (a destination, or "p/" and a
// profile) that another instance of the fleet serves; false when no
// instance does (the caller answers 404).
func (b *Bridge) misdirected(w http.ResponseWriter, r *http.Request, key string) bool {
	t := b.t()
	away, ok := t.cfg.Away[key]
	if !ok {
		return false
	}
	what := fmt.Sprintf("destination %q", key)
	if name, profile := config.ProfileName(key); profile {
		what = fmt.Sprintf("profile %q", name)
	}
	named := make([]string, len(away.Instances))
	for i, o := range away.Instances {
		named[i] = o
		if in := t.cfg.Instances[o]; in != nil && in.URL != "" {
			named[i] += " (" + in.URL + ")"
		}
	}
	owners := strings.Join(named, " or ")
	h := w.Header()
	h.Set("Stelae-Instance", t.cfg.Instance)
	h.Set("Stelae-Owner", strings.Join(away.Instances, ", "))
	httpx.WriteErrorFor(w, r, http.StatusMisdirectedRequest, codeServer, fmt.Sprintf("%s is served by instance %s, not by this one (%s): send the request through the fleet's balancer, which routes by path to its owner; retrying there is safe", what, owners, t.cfg.Instance))
	return true
}

// away reports whether key (a destination's name or a profile's key, a
// request's target's) is one another instance serves.
func (t *table) away(key string) bool {
	_, ok := t.cfg.Away[key]
	return ok
}
