package profile

import (
	"encoding/json"
	"regexp"
	"strings"

	"github.com/stelae-bridge/stelae-bridge/jsonrpc"
)

// This file merges what the members list (tools, prompts, resources,
// resource templates) into the profile's lists, and their initialize
// results into the profile's.

// Listing is one member's list of one kind: its items (tool, prompt,
// resource or resource template objects) as it wrote them.
type Listing struct {
	Destination, Prefix string
	Items               []json.RawMessage
}

// MergeNamed merges the members' tools or prompts: each item's "name" is
// replaced by its exposed name (Expose), byte for byte everywhere else;
// an item allowed hides by exposed name (nil: none), an item with no
// string name, and the second of two items that expose alike are left
// out. names maps the listed names back (its Collisions say what met).
func MergeNamed(listings []Listing, allowed func(string) bool) (items []json.RawMessage, names *Names) {
	var members []Member
	byExposed := map[string]json.RawMessage{}
	for _, l := range listings {
		m := Member{Destination: l.Destination, Prefix: l.Prefix}
		for _, item := range l.Items {
			raw := jsonrpc.Member(item, "name")
			if len(raw) == 0 || raw[0] != '"' {
				continue
			}
			name := jsonrpc.String(raw)
			e := Expose(l.Prefix, name)
			if allowed != nil && !allowed(e) {
				continue
			}
			renamed, err := jsonrpc.Replace(item, "name", jsonrpc.AppendString(nil, e))
			if err != nil {
				continue
			}
			if _, taken := byExposed[e]; !taken {
				byExposed[e] = renamed
			}
			m.Names = append(m.Names, name)
		}
		members = append(members, m)
	}
	names = NewNames(members)
	for _, e := range names.Exposed {
		items = append(items, byExposed[e])
	}
	return items, names
}

// Resources maps resource URIs to the member that serves them: those it
// lists, and those its templates describe.
type Resources struct {
	owner     map[string]string
	templates []template
	// Collisions are URIs (or templates) two members list: the first
	// member keeps it.
	Collisions []Collision
}

// template is a member's resource template as a pattern of URIs.
type template struct {
	destination, raw string
	re               *regexp.Regexp
}

// MergeResources merges the members' resources and resource templates
// (the lists keep their URIs: a URI names its server's resource already);
// allowed hides by URI or URI template (nil: none).
func MergeResources(resources, templates []Listing, allowed func(string) bool) (res, tpls []json.RawMessage, r *Resources) {
	r = &Resources{owner: map[string]string{}}
	seenTemplate := map[string]string{}
	for _, l := range resources {
		for _, item := range l.Items {
			uri, ok := stringMember(item, "uri")
			if !ok || allowed != nil && !allowed(uri) {
				continue
			}
			if kept, taken := r.owner[uri]; taken {
				if kept != l.Destination {
					r.Collisions = append(r.Collisions, Collision{Exposed: uri, Kept: Origin{kept, uri}, Hidden: Origin{l.Destination, uri}})
				}
				continue
			}
			r.owner[uri] = l.Destination
			res = append(res, item)
		}
	}
	for _, l := range templates {
		for _, item := range l.Items {
			raw, ok := stringMember(item, "uriTemplate")
			if !ok || allowed != nil && !allowed(raw) {
				continue
			}
			if kept, taken := seenTemplate[raw]; taken {
				if kept != l.Destination {
					r.Collisions = append(r.Collisions, Collision{Exposed: raw, Kept: Origin{kept, raw}, Hidden: Origin{l.Destination, raw}})
				}
				continue
			}
			seenTemplate[raw] = l.Destination
			r.templates = append(r.templates, template{destination: l.Destination, raw: raw, re: templatePattern(raw)})
			tpls = append(tpls, item)
		}
	}
	return res, tpls, r
}

// Owner is the member that serves uri: the one that lists it, else the
// first whose template matches it; false when none does.
func (r *Resources) Owner(uri string) (string, bool) {
	if d, ok := r.owner[uri]; ok {
		return d, true
	}
	for _, t := range r.templates {
		if t.re.MatchString(uri) {
			return t.destination, true
		}
	}
	return "", false
}

// templatePattern is the URIs an RFC 6570 template describes, loosely:
// its literal text, each expression any text (a query expression, {?…}
// or {&…}, also none).
func templatePattern(tpl string) *regexp.Regexp {
	var b strings.Builder
	b.WriteString("^")
	for {
		open := strings.IndexByte(tpl, '{')
		if open < 0 {
			b.WriteString(regexp.QuoteMeta(tpl))
			break
		}
		end := strings.IndexByte(tpl[open:], '}')
		if end < 0 {
			b.WriteString(regexp.QuoteMeta(tpl))
			break
		}
		b.WriteString(regexp.QuoteMeta(tpl[:open]))
		if expr := tpl[open+1 : open+end]; strings.HasPrefix(expr, "?") || strings.HasPrefix(expr, "&") {
			b.WriteString("(?:[?&].*)?")
		} else {
			b.WriteString(".*")
		}
		tpl = tpl[open+end+1:]
	}
	b.WriteString("$")
	return regexp.MustCompile(b.String())
}

// stringMember is obj's member key when it is a JSON string.
func stringMember(obj []byte, key string) (string, bool) {
	raw := jsonrpc.Member(obj, key)
	if len(raw) == 0 || raw[0] != '"' {
		return "", false
	}
	return jsonrpc.String(raw), true
}
