package tui

import (
	"io"
	"os"

	"github.com/charmbracelet/lipgloss"
	"github.com/charmbracelet/x/term"
	"github.com/muesli/termenv"
)

// styles holds every lipgloss style the views use, built from one renderer
// so the colour profile (and NO_COLOR) applies everywhere. Meaning never
// rests on colour alone: selection, the program point and states also have
// their own characters, so an ASCII render says everything a coloured one
// does.
type styles struct {
	// colour is false under NO_COLOR and for ASCII renders.
	colour   bool
	title    lipgloss.Style
	dim      lipgloss.Style
	bold     lipgloss.Style
	selected lipgloss.Style
	point    lipgloss.Style
	tabOn    lipgloss.Style
	tabOff   lipgloss.Style
	warn     lipgloss.Style
	bad      lipgloss.Style
	good     lipgloss.Style
	key      lipgloss.Style
	overlay  lipgloss.Style
	// state colours, by state name (running, runnable, sleeping,
	// uninterruptible, other).
	state map[string]lipgloss.Style
}

// newRenderer returns the renderer for the TUI on f. Under NO_COLOR (or
// CLICOLOR=0) termenv reports a plain-text profile; on a terminal the
// profile is raised back to basic ANSI so bold and reverse video still mark
// titles and the selection, while the styles themselves carry no colour.
func newRenderer(f *os.File) *lipgloss.Renderer {
	r := lipgloss.NewRenderer(f)
	if noColor() && term.IsTerminal(f.Fd()) {
		r.SetColorProfile(termenv.ANSI)
		r.SetHasDarkBackground(true)
	}
	return r
}

// noColor reports whether colours are to be left out.
func noColor() bool { return termenv.EnvNoColor() }

// NewASCIIRenderer returns a renderer that emits no escape sequences at all,
// for tests and for output that is not a terminal.
func NewASCIIRenderer() *lipgloss.Renderer {
	r := lipgloss.NewRenderer(io.Discard)
	r.SetColorProfile(termenv.Ascii)
	return r
}

func newStyles(r *lipgloss.Renderer, colour bool) styles {
	s := styles{
		title:    r.NewStyle().Bold(true),
		dim:      r.NewStyle(),
		bold:     r.NewStyle().Bold(true),
		selected: r.NewStyle().Reverse(true),
		point:    r.NewStyle().Bold(true),
		tabOn:    r.NewStyle().Bold(true).Reverse(true),
		tabOff:   r.NewStyle(),
		warn:     r.NewStyle().Bold(true),
		bad:      r.NewStyle().Bold(true),
		good:     r.NewStyle(),
		key:      r.NewStyle().Bold(true),
		overlay:  r.NewStyle().Border(lipgloss.NormalBorder()).Padding(0, 1),
		state:    map[string]lipgloss.Style{},
		colour:   colour && r.ColorProfile() != termenv.Ascii,
	}
	for _, st := range stateOrder {
		s.state[st] = r.NewStyle()
	}
	if !colour {
		return s
	}
	s.dim = s.dim.Foreground(lipgloss.AdaptiveColor{Light: "244", Dark: "245"})
	s.point = s.point.Foreground(lipgloss.AdaptiveColor{Light: "160", Dark: "203"})
	s.warn = s.warn.Foreground(lipgloss.AdaptiveColor{Light: "130", Dark: "214"})
	s.bad = s.bad.Foreground(lipgloss.AdaptiveColor{Light: "160", Dark: "203"})
	s.good = s.good.Foreground(lipgloss.AdaptiveColor{Light: "28", Dark: "42"})
	s.key = s.key.Foreground(lipgloss.AdaptiveColor{Light: "25", Dark: "75"})
	s.state["running"] = s.state["running"].Foreground(lipgloss.AdaptiveColor{Light: "28", Dark: "42"})
	s.state["runnable"] = s.state["runnable"].Foreground(lipgloss.AdaptiveColor{Light: "160", Dark: "203"})
	s.state["sleeping"] = s.state["sleeping"].Foreground(lipgloss.AdaptiveColor{Light: "25", Dark: "75"})
	s.state["uninterruptible"] = s.state["uninterruptible"].Foreground(lipgloss.AdaptiveColor{Light: "130", Dark: "214"})
	s.state["other"] = s.state["other"].Foreground(lipgloss.AdaptiveColor{Light: "244", Dark: "245"})
	return s
}

// defaultRenderer is the renderer for a program drawing on stderr.
func defaultRenderer() *lipgloss.Renderer { return newRenderer(os.Stderr) }
