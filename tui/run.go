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

// frameRate is how many times a second the screen may be redrawn. The
// renderer wakes the process at this rate whether or not anything
// changed (at Bubble Tea's default of 60, about 120 wakeups of contend
// top a second with the timers' slack); the data changes once a second,
// and a key's answer within 1/20 s is under the ~0.1 s at which a delay is
// seen.
const frameRate = 20

// Run shows src full screen on stderr until the user quits or ctx ends.
// The terminal is restored (alternate screen left, cursor shown) before
// Run returns, whatever the outcome.
func Run(ctx context.Context, src Source, opts Options) error {
	if err := CheckTerminal(); err != nil {
		return err
	}
	// Keys come from the controlling terminal when stdin is a pipe: the
	// program opens it by itself.
	p := tea.NewProgram(New(src, opts), tea.WithContext(ctx), tea.WithOutput(os.Stderr), tea.WithFPS(frameRate))
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
