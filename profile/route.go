package profile

import (
	"fmt"
	"strings"

	"github.com/stelae-bridge/stelae-bridge/jsonrpc"
)

// This file routes a profile client's request to the member it is for,
// and rewrites what names it in the profile's terms into the member's.

// Routes are a profile's names as last listed: where each exposed name
// leads.
type Routes struct {
	Tools, Prompts *Names
	Resources      *Resources
}

// RouteError is a request Route cannot send anywhere: its JSON-RPC code
// and a message for the client.
type RouteError struct {
	Code    int
	Message string
}

func (e *RouteError) Error() string { return e.Message }

// Route returns the member a request goes to and its params as the
// member must get them: a tools/call's or prompts/get's "name" and a
// completion/complete's "ref" name turned back into the member's own;
// resources/read, resources/subscribe and resources/unsubscribe, and a
// completion of a resource ref, go to the URI's owner unchanged. A
// params object whose name a lenient decoder could read differently (a
// member "Name", or "name" that is not a string) is refused, as a direct
// destination refuses it. Other methods are not routed by name: ok is
// false.
func (r *Routes) Route(method string, params []byte) (dest string, out []byte, ok bool, err error) {
	switch method {
	case "tools/call":
		dest, out, err = r.byName(params, "name", r.Tools, "tool")
	case "prompts/get":
		dest, out, err = r.byName(params, "name", r.Prompts, "prompt")
	case "resources/read", "resources/subscribe", "resources/unsubscribe":
		dest, err = r.byURI(params)
		out = params
	case "completion/complete":
		ref := jsonrpc.Member(params, "ref")
		switch typ, _ := stringMember(ref, "type"); typ {
		case "ref/prompt":
			var newRef []byte
			dest, newRef, err = r.byName(ref, "name", r.Prompts, "prompt")
			if err == nil {
				out, err = replaceMember(params, "ref", newRef)
			}
		case "ref/resource":
			dest, err = r.byURI(ref)
			out = params
		default:
			err = &RouteError{jsonrpc.CodeInvalidParams, `completion/complete needs "ref": {"type": "ref/prompt", "name": …} or {"type": "ref/resource", "uri": …}`}
		}
	default:
		return "", params, false, nil
	}
	return dest, out, true, err
}

// byName routes by obj's member key, an exposed name of names.
func (r *Routes) byName(obj []byte, key string, names *Names, noun string) (string, []byte, error) {
	if len(obj) == 0 || obj[0] != '{' {
		return "", nil, &RouteError{jsonrpc.CodeInvalidParams, fmt.Sprintf("%s needs an object with the %s's %q", noun, noun, key)}
	}
	var name string
	var found bool
	var bad error
	jsonrpc.EachMember(obj, func(k string, val []byte) bool {
		if !strings.EqualFold(k, key) {
			return true
		}
		if k != key || len(val) == 0 || val[0] != '"' {
			bad = &RouteError{jsonrpc.CodeInvalidParams, fmt.Sprintf("%q must be one string member named exactly %q", key, key)}
			return false
		}
		if found && jsonrpc.String(val) != name {
			bad = &RouteError{jsonrpc.CodeInvalidParams, fmt.Sprintf("%q is given twice", key)}
			return false
		}
		name, found = jsonrpc.String(val), true
		return true
	})
	switch {
	case bad != nil:
		return "", nil, bad
	case !found:
		return "", nil, &RouteError{jsonrpc.CodeInvalidParams, fmt.Sprintf("the %s's %q is missing", noun, key)}
	}
	o, ok := Origin{}, false
	if names != nil {
		o, ok = names.Origin(name)
	}
	if !ok {
		return "", nil, &RouteError{jsonrpc.CodeInvalidParams, fmt.Sprintf("%s %q is not available in this profile (list the %ss to see their names)", noun, truncate(name, 100), noun)}
	}
	out, err := replaceMember(obj, key, jsonrpc.AppendString(nil, o.Name))
	return o.Destination, out, err
}

// byURI routes by obj's "uri".
func (r *Routes) byURI(obj []byte) (string, error) {
	uri, ok := stringMember(obj, "uri")
	if !ok {
		return "", &RouteError{jsonrpc.CodeInvalidParams, `the resource's "uri" is missing or not a string`}
	}
	if r.Resources != nil {
		if d, ok := r.Resources.Owner(uri); ok {
			return d, nil
		}
	}
	return "", &RouteError{jsonrpc.CodeInvalidParams, fmt.Sprintf("resource %q is not served in this profile: no member lists it or a template that matches it", truncate(uri, 200))}
}

// replaceMember is jsonrpc.Replace as a RouteError.
func replaceMember(obj []byte, key string, value []byte) ([]byte, error) {
	out, err := jsonrpc.Replace(obj, key, value)
	if err != nil {
		return nil, &RouteError{jsonrpc.CodeInvalidParams, "params must be a JSON object"}
	}
	return out, nil
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}
