package profile

import (
	"fmt"

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
// completion of a resource ref, go to the URI's owner unchanged. What it
// routes on is what the member's child reads: a params object whose
// "name", "uri", "ref" or the ref's "type" a decoder could read otherwise
// (given twice, or also as "Name", "URI", "ſ"… — jsonrpc.ExactMember), or
// that is not a string (an object for "ref"), is refused, as a direct
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
		const want = `completion/complete needs "ref": {"type": "ref/prompt", "name": …} or {"type": "ref/resource", "uri": …}`
		ref, rerr := jsonrpc.ExactMember(params, "ref")
		if rerr != nil {
			return "", nil, true, &RouteError{jsonrpc.CodeInvalidParams, "completion/complete: " + rerr.Error()}
		}
		if len(ref) == 0 || ref[0] != '{' {
			return "", nil, true, &RouteError{jsonrpc.CodeInvalidParams, want}
		}
		typ, terr := routedString(ref, "type", "completion ref")
		if terr != nil {
			return "", nil, true, terr
		}
		switch typ {
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
			err = &RouteError{jsonrpc.CodeInvalidParams, want}
		}
	default:
		return "", params, false, nil
	}
	return dest, out, true, err
}

// routedString is obj's member key, a string as every decoder reads it
// (jsonrpc.ExactMember); a RouteError naming the noun's key when it is
// not, or missing.
func routedString(obj []byte, key, noun string) (string, error) {
	val, err := jsonrpc.ExactMember(obj, key)
	why := ""
	switch {
	case err != nil:
		why = err.Error()
	case val == nil:
		why = fmt.Sprintf("%q is missing", key)
	case val[0] != '"':
		why = fmt.Sprintf("%q must be a string", key)
	default:
		return jsonrpc.String(val), nil
	}
	return "", &RouteError{jsonrpc.CodeInvalidParams, fmt.Sprintf("the %s's %s", noun, why)}
}

// byName routes by obj's member key, an exposed name of names.
func (r *Routes) byName(obj []byte, key string, names *Names, noun string) (string, []byte, error) {
	if len(obj) == 0 || obj[0] != '{' {
		return "", nil, &RouteError{jsonrpc.CodeInvalidParams, fmt.Sprintf("%s needs an object with the %s's %q", noun, noun, key)}
	}
	name, err := routedString(obj, key, noun)
	if err != nil {
		return "", nil, err
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
	uri, err := routedString(obj, "uri", "resource")
	if err != nil {
		return "", err
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
