package tui

import (
	"charm.land/bubbles/v2/key"
)

// keyMap lists every key of the TUI; it feeds both the help line and the
// `?` overlay, so what is shown is what is bound.
type keyMap struct {
	Next     key.Binding
	Prev     key.Binding
	Views    key.Binding
	Up       key.Binding
	Down     key.Binding
	PageUp   key.Binding
	PageDown key.Binding
	Top      key.Binding
	Bottom   key.Binding
	Open     key.Binding
	Back     key.Binding
	Filter   key.Binding
	Sort     key.Binding
	Pause    key.Binding
	Window   key.Binding
	Export   key.Binding
	Help     key.Binding
	Quit     key.Binding

	// Help-only entries: they describe keys matched elsewhere.
	Scroll key.Binding
	Keep   key.Binding
	Clear  key.Binding
}

func newKeyMap(live bool) keyMap {
	k := keyMap{
		Next:     key.NewBinding(key.WithKeys("tab"), key.WithHelp("tab", "next view")),
		Prev:     key.NewBinding(key.WithKeys("shift+tab"), key.WithHelp("S-tab", "prev view")),
		Views:    key.NewBinding(key.WithKeys("1", "2", "3", "4", "5"), key.WithHelp("1-5", "view")),
		Up:       key.NewBinding(key.WithKeys("up", "k"), key.WithHelp("↑/k", "up")),
		Down:     key.NewBinding(key.WithKeys("down", "j"), key.WithHelp("↓/j", "down")),
		PageUp:   key.NewBinding(key.WithKeys("pgup", "ctrl+b"), key.WithHelp("pgup", "page up")),
		PageDown: key.NewBinding(key.WithKeys("pgdown", "ctrl+f", "space"), key.WithHelp("pgdn", "page down")),
		Top:      key.NewBinding(key.WithKeys("home", "g"), key.WithHelp("g", "first")),
		Bottom:   key.NewBinding(key.WithKeys("end", "G"), key.WithHelp("G", "last")),
		Open:     key.NewBinding(key.WithKeys("enter"), key.WithHelp("enter", "open")),
		Back:     key.NewBinding(key.WithKeys("esc", "backspace", "left", "h"), key.WithHelp("esc", "back")),
		Filter:   key.NewBinding(key.WithKeys("/"), key.WithHelp("/", "filter")),
		Sort:     key.NewBinding(key.WithKeys("s"), key.WithHelp("s", "sort")),
		Pause:    key.NewBinding(key.WithKeys("p"), key.WithHelp("p", "pause")),
		Window:   key.NewBinding(key.WithKeys("w"), key.WithHelp("w", "window")),
		Export:   key.NewBinding(key.WithKeys("e"), key.WithHelp("e", "export")),
		Help:     key.NewBinding(key.WithKeys("?"), key.WithHelp("?", "help")),
		Quit:     key.NewBinding(key.WithKeys("q", "ctrl+c"), key.WithHelp("q", "quit")),
		Scroll:   key.NewBinding(key.WithKeys("up", "down"), key.WithHelp("↑↓", "scroll")),
		Keep:     key.NewBinding(key.WithKeys("enter"), key.WithHelp("enter", "keep filter")),
		Clear:    key.NewBinding(key.WithKeys("esc"), key.WithHelp("esc", "clear filter")),
	}
	// Pausing and windows only mean something while data keeps arriving.
	k.Pause.SetEnabled(live)
	k.Window.SetEnabled(live)
	return k
}

// ShortHelp is the help line of a list: the keys a newcomer needs, most
// useful first.
func (k keyMap) ShortHelp() []key.Binding {
	return []key.Binding{k.Views, k.Open, k.Filter, k.Sort, k.Window, k.Pause, k.Export, k.Help, k.Quit}
}

// detailHelp is the help line of a detail page.
func (k keyMap) detailHelp() []key.Binding {
	return []key.Binding{k.Scroll, k.Back, k.Views, k.Window, k.Pause, k.Export, k.Help, k.Quit}
}

// filterHelp is the help line while a filter is typed.
func (k keyMap) filterHelp() []key.Binding {
	return []key.Binding{k.Keep, k.Clear}
}

// FullHelp is the `?` overlay, grouped by what the keys do.
func (k keyMap) FullHelp() [][]key.Binding {
	return [][]key.Binding{
		{k.Next, k.Prev, k.Views, k.Help, k.Quit},
		{k.Up, k.Down, k.PageUp, k.PageDown, k.Top, k.Bottom},
		{k.Open, k.Back, k.Filter, k.Sort, k.Window, k.Pause, k.Export},
	}
}
