package tui

import (
	"context"
	"errors"
	"fmt"
	"os"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/term"
)

// ErrNoTerminal is returned by Run when stderr is not a terminal: the
// interactive view has nowhere to draw (`contend analyze` prints text).
var ErrNoTerminal = errors.New("the interactive view needs a terminal on stderr")

// CheckTerminal returns ErrNoTerminal unless stderr is a terminal. Commands
// call it before starting anything costly.
func CheckTerminal() error {
	if !term.IsTerminal(os.Stderr.Fd()) {
		return ErrNoTerminal
	}
	return nil
}

// Run shows src full screen on stderr until the user quits or ctx ends.
// The terminal is restored (alternate screen left, cursor shown) before
// Run returns, whatever the outcome.
func Run(ctx context.Context, src Source, opts Options) error {
	if err := CheckTerminal(); err != nil {
		return err
	}
	// Keys come from the controlling terminal when stdin is a pipe: the
	// program opens it by itself.
	p := tea.NewProgram(New(src, opts), tea.WithContext(ctx), tea.WithOutput(os.Stderr))
	_, err := p.Run()
	switch {
	case err == nil, errors.Is(err, tea.ErrInterrupted):
		return nil
	case errors.Is(err, tea.ErrProgramKilled) && ctx.Err() != nil:
		// Interrupted by a signal: a normal way to leave.
		return nil
	}
	return fmt.Errorf("interactive view: %w", err)
}
