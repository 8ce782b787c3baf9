// Package docs holds contend's reference pages. The pages a user needs on
// a server without the repository (verdict kinds, the JSON schema, the
// recording format, exit codes) are embedded, so that `contend help
// TOPIC` prints the same text this directory holds.
package docs

import _ "embed"

// Verdicts is verdicts.md: the finding kinds, what the data shows for
// each and what contend suggests, and how findings are ranked.
//
//go:embed verdicts.md
var Verdicts string

// JSONSchema is json-schema.md: every field of the JSON output.
//
//go:embed json-schema.md
var JSONSchema string

// Recording is recording.md: the files of a recording directory.
//
//go:embed recording.md
var Recording string

// ExitCodes is exit-codes.md: the exit status of every command.
//
//go:embed exit-codes.md
var ExitCodes string
