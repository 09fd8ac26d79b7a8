package conformancefixture

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"time"
)

// Server identity and protocol versions.
const (
	serverName    = "stelae-conformance-fixture"
	serverVersion = "1.0.0"
	latestVersion = "2025-11-25"
)

var supportedVersions = []string{"2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"}

// testImagePNG is a 1×1 red PNG; testAudioWAV a minimal WAV file.
const (
	testImagePNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="
	testAudioWAV = "UklGRiYAAABXQVZFZm10IBAAAAABAAEAQB8AAAB9AAACABAAZGF0YQIAAAA="
)

// obj is a JSON object literal.
type obj = map[string]any

// request answers one client request (on its own goroutine). A request
// cancelled by the client is not answered.
func (s *server) request(ctx context.Context, m *message) {
	var (
		result any
		rerr   *rpcError
	)
	var env *reqEnv
	if s.modern {
		switch m.Method {
		case "server/discover":
			s.reply(m.ID, s.discover())
			return
		case "initialize":
			s.fail(m.ID, &rpcError{Code: -32022, Message: "Unsupported protocol version: this server speaks " + modernVersion + " only", Data: obj{"supported": []string{modernVersion}}})
			return
		case "ping", "logging/setLevel", "resources/subscribe", "resources/unsubscribe":
			s.fail(m.ID, &rpcError{Code: codeMethodNotFound, Message: "method not found in " + modernVersion + ": " + m.Method})
			return
		case "subscriptions/listen":
			s.listen(ctx, m)
			return
		}
		var rerr *rpcError
		if env, rerr = readReqEnv(m.Params); rerr != nil {
			s.fail(m.ID, rerr)
			return
		}
		ctx = context.WithValue(ctx, envKey{}, env)
	}
	switch m.Method {
	case "initialize":
		result, rerr = s.initialize(m.Params)
	case "ping":
		result = obj{}
	case "logging/setLevel":
		result, rerr = s.setLevel(m.Params)
	case "completion/complete":
		result, rerr = complete(m.Params)
	case "tools/list":
		result = obj{"tools": tools()}
	case "tools/call":
		result, rerr = s.callTool(ctx, m.Params)
	case "resources/list":
		result = obj{"resources": resources()}
	case "resources/templates/list":
		result = obj{"resourceTemplates": []obj{{
			"uriTemplate": "test://template/{id}/data",
			"name":        "template",
			"title":       "Resource Template",
			"description": "A resource template with parameter substitution",
			"mimeType":    "application/json",
		}}}
	case "resources/read":
		result, rerr = readResource(m.Params)
	case "resources/subscribe", "resources/unsubscribe":
		result, rerr = s.subscribe(m.Method == "resources/subscribe", m.Params)
	case "prompts/list":
		result = obj{"prompts": prompts()}
	case "prompts/get":
		if jsonName(m.Params) == "test_input_required_result_prompt" {
			result, rerr = s.mrtrPrompt(ctx)
		} else {
			result, rerr = getPrompt(m.Params)
		}
	default:
		rerr = &rpcError{Code: codeMethodNotFound, Message: "method not found: " + m.Method}
	}
	if ctx.Err() != nil {
		return // cancelled: no answer
	}
	if env != nil {
		if ir, ok := env.inputRequired(); ok {
			result, rerr = ir, nil
		} else if o, ok := result.(obj); ok && rerr == nil {
			o["resultType"] = "complete"
		}
	}
	if rerr != nil {
		s.fail(m.ID, rerr)
		return
	}
	s.reply(m.ID, result)
	if m.Method == "resources/subscribe" {
		// Tell the subscriber the resource changed, as a live server would.
		var p struct {
			URI string `json:"uri"`
		}
		json.Unmarshal(m.Params, &p)
		s.notify("notifications/resources/updated", obj{"uri": p.URI})
	}
}

func (s *server) initialize(params json.RawMessage) (any, *rpcError) {
	var p struct {
		ProtocolVersion string                     `json:"protocolVersion"`
		Capabilities    map[string]json.RawMessage `json:"capabilities"`
	}
	if err := json.Unmarshal(params, &p); err != nil {
		return nil, &rpcError{Code: codeInvalidParams, Message: "initialize: " + err.Error()}
	}
	version := latestVersion
	for _, v := range supportedVersions {
		if v == p.ProtocolVersion {
			version = v
		}
	}
	s.mu.Lock()
	s.clientCaps = p.Capabilities
	s.protocolVersion = version
	s.mu.Unlock()
	return obj{
		"protocolVersion": version,
		"capabilities":    serverCapabilities(),
		"serverInfo":      obj{"name": serverName, "version": serverVersion},
		"instructions":    "Conformance fixture for the MCP conformance suite's server scenarios.",
	}, nil
}

// serverCapabilities are what the fixture offers, in both eras.
func serverCapabilities() obj {
	return obj{
		"tools":       obj{"listChanged": true},
		"resources":   obj{"subscribe": true, "listChanged": true},
		"prompts":     obj{"listChanged": true},
		"logging":     obj{},
		"completions": obj{},
	}
}

func (s *server) setLevel(params json.RawMessage) (any, *rpcError) {
	var p struct {
		Level string `json:"level"`
	}
	json.Unmarshal(params, &p)
	l, ok := levels[p.Level]
	if !ok {
		return nil, &rpcError{Code: codeInvalidParams, Message: fmt.Sprintf("unknown log level %q", p.Level)}
	}
	s.mu.Lock()
	s.logLevel = l
	s.mu.Unlock()
	return obj{}, nil
}

func (s *server) subscribe(on bool, params json.RawMessage) (any, *rpcError) {
	var p struct {
		URI string `json:"uri"`
	}
	if json.Unmarshal(params, &p) != nil || p.URI == "" {
		return nil, &rpcError{Code: codeInvalidParams, Message: "uri is required"}
	}
	s.mu.Lock()
	if on {
		s.subs[p.URI] = true
	} else {
		delete(s.subs, p.URI)
	}
	s.mu.Unlock()
	return obj{}, nil
}

// ---- completion ----

var completions = map[string][]string{
	"prompt:test_prompt_with_arguments:arg1":                {"paris", "park", "party", "test", "testValue1"},
	"prompt:test_prompt_with_arguments:arg2":                {"test", "testValue2", "world"},
	"resource:test://template/{id}/data:id":                 {"1", "12", "123"},
	"prompt:test_prompt_with_embedded_resource:resourceUri": {"test://example-resource", "test://static-text"},
}

func complete(params json.RawMessage) (any, *rpcError) {
	var p struct {
		Ref struct {
			Type string `json:"type"`
			Name string `json:"name"`
			URI  string `json:"uri"`
		} `json:"ref"`
		Argument struct {
			Name  string `json:"name"`
			Value string `json:"value"`
		} `json:"argument"`
	}
	if err := json.Unmarshal(params, &p); err != nil {
		return nil, &rpcError{Code: codeInvalidParams, Message: err.Error()}
	}
	var key string
	switch p.Ref.Type {
	case "ref/prompt":
		if promptByName(p.Ref.Name) == nil {
			return nil, &rpcError{Code: codeInvalidParams, Message: "unknown prompt " + p.Ref.Name}
		}
		key = "prompt:" + p.Ref.Name + ":" + p.Argument.Name
	case "ref/resource":
		key = "resource:" + p.Ref.URI + ":" + p.Argument.Name
	default:
		return nil, &rpcError{Code: codeInvalidParams, Message: "unknown ref type " + p.Ref.Type}
	}
	values := []string{}
	for _, v := range completions[key] {
		if strings.HasPrefix(v, p.Argument.Value) {
			values = append(values, v)
		}
	}
	sort.Strings(values)
	return obj{"completion": obj{"values": values, "total": len(values), "hasMore": false}}, nil
}

// ---- tools ----

func emptySchema() obj { return obj{"type": "object", "properties": obj{}} }

func tools() []obj { return append(append(baseTools(), mrtrTools()...), tasksTools()...) }

func baseTools() []obj {
	str := func(desc string) obj { return obj{"type": "string", "description": desc} }
	return []obj{
		{"name": "test_simple_text", "description": "Tests simple text content response", "inputSchema": emptySchema()},
		{"name": "test_image_content", "description": "Tests image content response", "inputSchema": emptySchema()},
		{"name": "test_audio_content", "description": "Tests audio content response", "inputSchema": emptySchema()},
		{"name": "test_embedded_resource", "description": "Tests embedded resource content response", "inputSchema": emptySchema()},
		{"name": "test_multiple_content_types", "description": "Tests response with multiple content types (text, image, resource)", "inputSchema": emptySchema()},
		{"name": "test_tool_with_logging", "description": "Tests tool that emits log messages during execution", "inputSchema": emptySchema()},
		{"name": "test_tool_with_progress", "description": "Tests tool that reports progress notifications", "inputSchema": emptySchema()},
		{"name": "test_error_handling", "description": "Tests error response handling", "inputSchema": emptySchema()},
		{"name": "test_reconnection", "description": "Tests SSE stream resumption (SEP-1699): answers after a delay", "inputSchema": emptySchema()},
		{"name": "test_sampling", "description": "Tests server-initiated sampling (LLM completion request)", "inputSchema": obj{
			"type": "object", "properties": obj{"prompt": str("The prompt to send to the LLM")}, "required": []string{"prompt"}}},
		{"name": "test_elicitation", "description": "Tests server-initiated elicitation (user input request)", "inputSchema": obj{
			"type": "object", "properties": obj{"message": str("The message to show the user")}, "required": []string{"message"}}},
		{"name": "test_elicitation_sep1034_defaults", "description": "Tests elicitation with default values per SEP-1034", "inputSchema": emptySchema()},
		{"name": "test_elicitation_sep1330_enums", "description": "Tests elicitation with enum schema improvements per SEP-1330", "inputSchema": emptySchema()},
		{"name": "json_schema_2020_12_tool", "description": "Tool with JSON Schema 2020-12 features for conformance testing (SEP-1613, SEP-2106)", "inputSchema": obj{
			"$schema": "https://json-schema.org/draft/2020-12/schema",
			"type":    "object",
			"$defs": obj{"address": obj{"$anchor": "addressDef", "type": "object", "properties": obj{
				"street": obj{"type": "string"}, "city": obj{"type": "string"}}}},
			"properties": obj{
				"name":          obj{"type": "string"},
				"address":       obj{"$ref": "#/$defs/address"},
				"contactMethod": obj{"type": "string", "enum": []string{"phone", "email"}},
				"phone":         obj{"type": "string"},
				"email":         obj{"type": "string"},
			},
			"allOf":                []obj{{"anyOf": []obj{{"required": []string{"phone"}}, {"required": []string{"email"}}}}},
			"if":                   obj{"properties": obj{"contactMethod": obj{"const": "phone"}}, "required": []string{"contactMethod"}},
			"then":                 obj{"required": []string{"phone"}},
			"else":                 obj{"required": []string{"email"}},
			"additionalProperties": false,
		}},
		{"name": "test_custom_header", "description": "Tests custom headers from tool parameters (SEP-2243): region is mirrored into Mcp-Param-Region", "inputSchema": obj{
			"type": "object", "properties": obj{
				"region": obj{"type": "string", "description": "The region", "x-mcp-header": "Region"},
				"query":  str("The query"),
			}, "required": []string{"region"}}},
	}
}

func text(t string) obj { return obj{"type": "text", "text": t} }

func content(items ...obj) obj { return obj{"content": items} }

func toolError(t string) obj { return obj{"content": []obj{text(t)}, "isError": true} }

func (s *server) callTool(ctx context.Context, params json.RawMessage) (any, *rpcError) {
	var p struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
		Meta      struct {
			ProgressToken json.RawMessage `json:"progressToken"`
		} `json:"_meta"`
	}
	if err := json.Unmarshal(params, &p); err != nil {
		return nil, &rpcError{Code: codeInvalidParams, Message: err.Error()}
	}
	if res, rerr, ok := s.mrtrTool(ctx, p.Name); ok {
		return res, rerr
	}
	if res, rerr, ok := s.tasksTool(ctx, p.Name, p.Arguments); ok {
		return res, rerr
	}
	args := map[string]any{}
	if len(p.Arguments) > 0 && string(p.Arguments) != "null" {
		if err := json.Unmarshal(p.Arguments, &args); err != nil {
			return nil, &rpcError{Code: codeInvalidParams, Message: "arguments must be an object: " + err.Error()}
		}
	}
	strArg := func(k string) (string, *rpcError) {
		v, ok := args[k].(string)
		if !ok {
			return "", &rpcError{Code: codeInvalidParams, Message: fmt.Sprintf("tool %s: argument %q (string) is required", p.Name, k)}
		}
		return v, nil
	}
	switch p.Name {
	case "test_custom_header":
		region, _ := args["region"].(string)
		return content(text("region " + region)), nil
	case "test_simple_text":
		return content(text("This is a simple text response for testing.")), nil
	case "test_image_content":
		return content(obj{"type": "image", "data": testImagePNG, "mimeType": "image/png"}), nil
	case "test_audio_content":
		return content(obj{"type": "audio", "data": testAudioWAV, "mimeType": "audio/wav"}), nil
	case "test_embedded_resource":
		return content(obj{"type": "resource", "resource": obj{
			"uri": "test://embedded-resource", "mimeType": "text/plain", "text": "This is an embedded resource content."}}), nil
	case "test_multiple_content_types":
		return content(
			text("Multiple content types test:"),
			obj{"type": "image", "data": testImagePNG, "mimeType": "image/png"},
			obj{"type": "resource", "resource": obj{"uri": "test://mixed-content-resource", "mimeType": "application/json", "text": `{"test":"data","value":123}`}},
		), nil
	case "test_tool_with_logging":
		s.log(ctx, "info", "Tool execution started")
		sleep(ctx, 50*time.Millisecond)
		s.log(ctx, "info", "Tool processing data")
		sleep(ctx, 50*time.Millisecond)
		s.log(ctx, "info", "Tool execution completed")
		return content(text("Tool with logging executed successfully")), nil
	case "test_tool_with_progress":
		for i, v := range []int{0, 50, 100} {
			if i > 0 && !sleep(ctx, 50*time.Millisecond) {
				return nil, nil
			}
			if len(p.Meta.ProgressToken) > 0 {
				s.notify("notifications/progress", obj{"progressToken": p.Meta.ProgressToken, "progress": v, "total": 100,
					"message": fmt.Sprintf("Completed step %d of 100", v)})
			}
		}
		return content(text("Tool with progress executed successfully")), nil
	case "test_error_handling":
		return toolError("This tool intentionally returns an error for testing"), nil
	case "test_reconnection":
		if !sleep(ctx, s.opts.ReconnectDelay) {
			return nil, nil
		}
		return content(text("Reconnection test completed successfully. If you received this, the client received the result of a long call.")), nil
	case "test_sampling":
		prompt, rerr := strArg("prompt")
		if rerr != nil {
			return nil, rerr
		}
		if !s.clientCan(ctx, "sampling") {
			return toolError("the client does not support sampling (no sampling capability)"), nil
		}
		res, err := s.call(ctx, "sampling/createMessage", obj{
			"messages":  []obj{{"role": "user", "content": text(prompt)}},
			"maxTokens": 100,
		})
		if err != nil {
			return toolError("sampling failed: " + err.Error()), nil
		}
		var r struct {
			Content json.RawMessage `json:"content"`
		}
		json.Unmarshal(res, &r)
		return content(text("LLM response: " + samplingText(r.Content))), nil
	case "test_elicitation":
		msg, rerr := strArg("message")
		if rerr != nil {
			return nil, rerr
		}
		return s.elicit(ctx, "User response", msg, obj{
			"type": "object",
			"properties": obj{
				"username": obj{"type": "string", "description": "User's response"},
				"email":    obj{"type": "string", "description": "User's email address"},
			},
			"required": []string{"username", "email"},
		}), nil
	case "test_elicitation_sep1034_defaults":
		return s.elicit(ctx, "Elicitation completed", "Please review and update the form fields with defaults", obj{
			"type": "object",
			"properties": obj{
				"name":     obj{"type": "string", "description": "User name", "default": "John Doe"},
				"age":      obj{"type": "integer", "description": "User age", "default": 30},
				"score":    obj{"type": "number", "description": "User score", "default": 95.5},
				"status":   obj{"type": "string", "description": "User status", "enum": []string{"active", "inactive", "pending"}, "default": "active"},
				"verified": obj{"type": "boolean", "description": "Verification status", "default": true},
			},
			"required": []string{},
		}), nil
	case "test_elicitation_sep1330_enums":
		titled := func(prefix, kind string) []obj {
			names := []string{"First", "Second", "Third"}
			out := make([]obj, 3)
			for i, n := range names {
				out[i] = obj{"const": fmt.Sprintf("%s%d", prefix, i+1), "title": n + " " + kind}
			}
			return out
		}
		return s.elicit(ctx, "Elicitation completed", "Please select options from the enum fields", obj{
			"type": "object",
			"properties": obj{
				"untitledSingle": obj{"type": "string", "description": "Select one option", "enum": []string{"option1", "option2", "option3"}},
				"titledSingle":   obj{"type": "string", "description": "Select one option with titles", "oneOf": titled("value", "Option")},
				"legacyEnum": obj{"type": "string", "description": "Select one option (legacy)",
					"enum": []string{"opt1", "opt2", "opt3"}, "enumNames": []string{"Option One", "Option Two", "Option Three"}},
				"untitledMulti": obj{"type": "array", "description": "Select multiple options", "minItems": 1, "maxItems": 3,
					"items": obj{"type": "string", "enum": []string{"option1", "option2", "option3"}}},
				"titledMulti": obj{"type": "array", "description": "Select multiple options with titles", "minItems": 1, "maxItems": 3,
					"items": obj{"anyOf": titled("value", "Choice")}},
			},
			"required": []string{},
		}), nil
	case "json_schema_2020_12_tool":
		b, _ := json.Marshal(args)
		return content(text("JSON Schema 2020-12 tool called with: " + string(b))), nil
	}
	return nil, &rpcError{Code: codeInvalidParams, Message: "unknown tool: " + p.Name}
}

// samplingText is the text of a sampling result's content (one block or an
// array of blocks).
func samplingText(raw json.RawMessage) string {
	var one struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if json.Unmarshal(raw, &one) == nil && one.Text != "" {
		return one.Text
	}
	var many []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	json.Unmarshal(raw, &many)
	var parts []string
	for _, b := range many {
		if b.Text != "" {
			parts = append(parts, b.Text)
		}
	}
	if len(parts) == 0 {
		return "No response"
	}
	return strings.Join(parts, " ")
}

// elicit asks the client for form input and reports the answer as text.
func (s *server) elicit(ctx context.Context, label, msg string, schema obj) obj {
	if !s.clientCan(ctx, "elicitation") {
		return toolError("the client does not support elicitation (no elicitation capability)")
	}
	params := obj{"message": msg, "requestedSchema": schema}
	s.mu.Lock()
	if s.protocolVersion >= "2025-11-25" {
		params["mode"] = "form"
	}
	s.mu.Unlock()
	res, err := s.call(ctx, "elicitation/create", params)
	if err != nil {
		return toolError("elicitation failed: " + err.Error())
	}
	var r struct {
		Action  string          `json:"action"`
		Content json.RawMessage `json:"content"`
	}
	json.Unmarshal(res, &r)
	if len(r.Content) == 0 {
		r.Content = json.RawMessage("{}")
	}
	return content(text(fmt.Sprintf("%s: action=%s, content=%s", label, r.Action, r.Content)))
}

// ---- resources ----

func resources() []obj {
	return []obj{
		{"uri": "test://static-text", "name": "static-text", "title": "Static Text Resource", "description": "A static text resource for testing", "mimeType": "text/plain"},
		{"uri": "test://static-binary", "name": "static-binary", "title": "Static Binary Resource", "description": "A static binary resource (image) for testing", "mimeType": "image/png"},
		{"uri": "test://watched-resource", "name": "watched-resource", "title": "Watched Resource", "description": "A resource clients may subscribe to", "mimeType": "text/plain"},
	}
}

var templateURI = regexp.MustCompile(`^test://template/([^/]+)/data$`)

func readResource(params json.RawMessage) (any, *rpcError) {
	var p struct {
		URI string `json:"uri"`
	}
	if json.Unmarshal(params, &p) != nil || p.URI == "" {
		return nil, &rpcError{Code: codeInvalidParams, Message: "uri is required"}
	}
	one := func(c obj) obj { return obj{"contents": []obj{c}} }
	switch p.URI {
	case "test://static-text":
		return one(obj{"uri": p.URI, "mimeType": "text/plain", "text": "This is the content of the static text resource."}), nil
	case "test://static-binary":
		return one(obj{"uri": p.URI, "mimeType": "image/png", "blob": testImagePNG}), nil
	case "test://watched-resource":
		return one(obj{"uri": p.URI, "mimeType": "text/plain", "text": "Watched resource content"}), nil
	}
	if m := templateURI.FindStringSubmatch(p.URI); m != nil {
		b, _ := json.Marshal(obj{"id": m[1], "templateTest": true, "data": "Data for ID: " + m[1]})
		return one(obj{"uri": p.URI, "mimeType": "application/json", "text": string(b)}), nil
	}
	return nil, &rpcError{Code: codeResourceNotFound, Message: "Resource not found", Data: obj{"uri": p.URI}}
}

// ---- prompts ----

type prompt struct {
	name, title, description string
	args                     []obj
	get                      func(args map[string]string) []obj
}

var promptList = []prompt{
	{name: "test_simple_prompt", title: "Simple Test Prompt", description: "A simple prompt without arguments",
		get: func(map[string]string) []obj {
			return []obj{{"role": "user", "content": text("This is a simple prompt for testing.")}}
		}},
	{name: "test_prompt_with_arguments", title: "Prompt With Arguments", description: "A prompt with required arguments",
		args: []obj{
			{"name": "arg1", "description": "First test argument", "required": true},
			{"name": "arg2", "description": "Second test argument", "required": true},
		},
		get: func(a map[string]string) []obj {
			return []obj{{"role": "user", "content": text(fmt.Sprintf("Prompt with arguments: arg1='%s', arg2='%s'", a["arg1"], a["arg2"]))}}
		}},
	{name: "test_prompt_with_embedded_resource", title: "Prompt With Embedded Resource", description: "A prompt that includes an embedded resource",
		args: []obj{{"name": "resourceUri", "description": "URI of the resource to embed", "required": true}},
		get: func(a map[string]string) []obj {
			return []obj{
				{"role": "user", "content": obj{"type": "resource", "resource": obj{"uri": a["resourceUri"], "mimeType": "text/plain", "text": "Embedded resource content for testing."}}},
				{"role": "user", "content": text("Please process the embedded resource above.")},
			}
		}},
	{name: "test_prompt_with_image", title: "Prompt With Image", description: "A prompt that includes image content",
		get: func(map[string]string) []obj {
			return []obj{
				{"role": "user", "content": obj{"type": "image", "data": testImagePNG, "mimeType": "image/png"}},
				{"role": "user", "content": text("Please analyze the image above.")},
			}
		}},
}

func promptByName(name string) *prompt {
	for i := range promptList {
		if promptList[i].name == name {
			return &promptList[i]
		}
	}
	return nil
}

func prompts() []obj {
	out := make([]obj, 0, len(promptList))
	for _, p := range promptList {
		o := obj{"name": p.name, "title": p.title, "description": p.description}
		if len(p.args) > 0 {
			o["arguments"] = p.args
		}
		out = append(out, o)
	}
	return append(out, obj{"name": "test_input_required_result_prompt", "title": "Prompt needing input", "description": "Asks the client for context (elicitation)"})
}

func getPrompt(params json.RawMessage) (any, *rpcError) {
	var p struct {
		Name      string            `json:"name"`
		Arguments map[string]string `json:"arguments"`
	}
	if err := json.Unmarshal(params, &p); err != nil {
		return nil, &rpcError{Code: codeInvalidParams, Message: err.Error()}
	}
	pr := promptByName(p.Name)
	if pr == nil {
		return nil, &rpcError{Code: codeInvalidParams, Message: "unknown prompt: " + p.Name}
	}
	for _, a := range pr.args {
		n := a["name"].(string)
		if _, ok := p.Arguments[n]; !ok && a["required"] == true {
			return nil, &rpcError{Code: codeInvalidParams, Message: fmt.Sprintf("prompt %s: argument %q is required", p.Name, n)}
		}
	}
	return obj{"description": pr.description, "messages": pr.get(p.Arguments)}, nil
}

// jsonName is params.name.
func jsonName(params json.RawMessage) string {
	var p struct {
		Name string `json:"name"`
	}
	_ = json.Unmarshal(params, &p)
	return p.Name
}
