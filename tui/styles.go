package tui

import (
	"os"

	"charm.land/lipgloss/v2"
)

// styles holds every lipgloss style the views use. Meaning never rests on
// colour alone: selection, the program point and states also have their
// own characters, so a plain render says everything a coloured one does.
// The program downsamples the colours to what the terminal shows.
type styles struct {
	// colour is false under NO_COLOR and for plain renders.
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

// noColor reports whether colours are to be left out: NO_COLOR set to
// anything, or CLICOLOR=0 (https://no-color.org, https://bixense.com/clicolors).
// Bold and reverse video stay: they mark titles and the selection.
func noColor() bool {
	return os.Getenv("NO_COLOR") != "" || os.Getenv("CLICOLOR") == "0"
}

// look says how the styles render: plain (no escape sequence at all, for
// tests), without colour (NO_COLOR), or in colour for a dark or a light
// background.
type look struct {
	plain, colour, dark bool
}

func newStyles(l look) styles {
	st := lipgloss.NewStyle
	s := styles{
		title:    st().Bold(true),
		dim:      st(),
		bold:     st().Bold(true),
		selected: st().Reverse(true),
		point:    st().Bold(true),
		tabOn:    st().Bold(true).Reverse(true),
		tabOff:   st(),
		warn:     st().Bold(true),
		bad:      st().Bold(true),
		good:     st(),
		key:      st().Bold(true),
		overlay:  st().Border(lipgloss.NormalBorder()).Padding(0, 1),
		state:    map[string]lipgloss.Style{},
		colour:   l.colour && !l.plain,
	}
	for _, name := range stateOrder {
		s.state[name] = st()
	}
	if l.plain {
		// Only the overlay's border and padding: they are characters.
		plainStyle := st()
		for _, p := range []*lipgloss.Style{&s.title, &s.bold, &s.selected, &s.point, &s.tabOn, &s.warn, &s.bad, &s.key} {
			*p = plainStyle
		}
		return s
	}
	if !s.colour {
		return s
	}
	c := func(light, dark string) lipgloss.Style {
		return st().Foreground(lipgloss.LightDark(l.dark)(lipgloss.Color(light), lipgloss.Color(dark)))
	}
	s.dim = c("244", "245")
	s.point = c("160", "203").Bold(true)
	s.warn = c("130", "214").Bold(true)
	s.bad = c("160", "203").Bold(true)
	s.good = c("28", "42")
	s.key = c("25", "75").Bold(true)
	s.state["running"] = c("28", "42")
	s.state["runnable"] = c("160", "203")
	s.state["sleeping"] = c("25", "75")
	s.state["uninterruptible"] = c("130", "214")
	s.state["other"] = c("244", "245")
	return s
}
