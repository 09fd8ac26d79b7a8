"""A stdio MCP server in plain Python (no packages): one tool, read, that
returns a file's text. The sandbox tests run it under 'preset: uvx' to show
a Python child works in its sandbox and is held to it."""
import json
import sys

for line in sys.stdin:
    msg = json.loads(line)
    if "id" not in msg:
        continue
    method, result = msg.get("method"), None
    if method == "initialize":
        result = {"protocolVersion": msg["params"]["protocolVersion"], "capabilities": {"tools": {}},
                  "serverInfo": {"name": "readserver", "version": "1"}}
    elif method == "tools/list":
        result = {"tools": [{"name": "read", "description": "read a file",
                             "inputSchema": {"type": "object", "properties": {"path": {"type": "string"}}}}]}
    elif method == "tools/call":
        try:
            with open(msg["params"]["arguments"]["path"]) as f:
                result = {"content": [{"type": "text", "text": f.read()}]}
        except OSError as e:
            result = {"content": [{"type": "text", "text": str(e)}], "isError": True}
    else:
        result = {}
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": result}) + "\n")
    sys.stdout.flush()
