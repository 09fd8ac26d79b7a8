// Package jsonrpc is the wire format: JSON-RPC 2.0 messages as MCP sends
// them, one per line or per HTTP body.
//
// It owns:
//   - Parse/ParseInto and Message.Kind: one message, validated, its members
//     kept as raw bytes;
//   - one raw-member scanner (EachMember, Member, EachElement) and byte-span
//     splicing (Replace): a member's value is replaced and every other byte
//     of the object stays as it was — key order, whitespace, escapes, big
//     numbers;
//   - the exact reading of a member the bridge routes or filters on
//     (ExactMember, ExactMembers): read only when every decoder reads the
//     same value — one member of that name, none another decoder could
//     take for it (letter case, folding, duplicates) — else an error the
//     client can act on;
//   - builders (AppendRequest, AppendResponse, ErrorResponse, AppendString)
//     that append to a caller's buffer;
//   - the named error codes (CodeParseError … CodeRequestCancelled) and
//     upstream id helpers (Uint, UintIDFromPrefix).
//
// Every scanner runs in time linear in its input, however many escapes
// or levels of nesting it holds (TestScannersLinear, FuzzScanEscapes).
//
// It never re-encodes a message through a map or a struct: what a client
// sends reaches the child unchanged except where the bridge must rewrite
// (ids, progress tokens), and those are spliced.
//
// The specification (MCP 2025-11-25, basic) decides: "JSON-RPC messages
// MUST be UTF-8 encoded", and requests "MUST include a string or integer
// ID" that "MUST NOT be null".
package jsonrpc
