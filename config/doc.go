// Package config owns destinations.yaml: the model of the stdio servers the
// bridge serves (Config, Destination, ToolFilter, Root) and its strict
// reading — unknown keys are errors, ${VAR} is expanded from the
// environment, and every problem is reported with its line number and what
// to do. It also reads the Claude Desktop / Cursor shape (mcpServers).
//
// Data path: a file → Load/Parse → *Config, which the bridge turns into
// supervisors, dispatchers and endpoints.
//
// A new key: a field of Destination (or Config) with its yaml tag, its
// checks in the reader (with the line and what to do), then its use in
// package bridge, which turns a Destination into options.
//
// It never starts processes and knows nothing of HTTP: the names the
// bridge's own routes take are handed in (Parse's reserved).
package config
