package main

import (
	"github.com/spf13/cobra"

	"github.com/contend-dev/contend/docs"
)

func init() {
	for _, t := range helpTopics {
		subcommands = append(subcommands, t.command)
	}
}

// helpTopic is a page `contend help NAME` prints: cobra lists a command
// without Run under "Additional help topics". The text is the docs/ page
// itself, embedded, so a server without the repository has it.
type helpTopic struct {
	name, short, text string
}

// helpTopics are the reference pages a user needs beside --help.
var helpTopics = []helpTopic{
	{"verdicts", "The finding kinds: what the data shows and what contend suggests", docs.Verdicts},
	{"json", "The JSON output's schema, field by field", docs.JSONSchema},
	{"recording", "The files of a recording directory and meta.json's counters", docs.Recording},
	{"exit-codes", "What each exit status means", docs.ExitCodes},
}

func (t helpTopic) command() *cobra.Command {
	c := &cobra.Command{Use: t.name, Short: t.short, Long: t.text}
	// The page is the whole help: no usage block under it.
	c.SetHelpTemplate("{{.Long}}")
	return c
}
