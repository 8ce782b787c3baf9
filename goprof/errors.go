package goprof

import "fmt"

// badInput is an error about the content of an input. Its message is one
// line and it unwraps to ErrBadProfile (and to the underlying error, when
// there is one), so callers can both print it and classify it.
type badInput struct {
	msg string
	err error
}

func (e *badInput) Error() string {
	if e.msg == "" && e.err != nil {
		return oneLine(e.err.Error())
	}
	if _, ok := e.err.(quiet); ok {
		return e.msg
	}
	if e.err != nil {
		return e.msg + ": " + oneLine(e.err.Error())
	}
	return e.msg
}

func (e *badInput) Unwrap() []error {
	if e.err != nil {
		return []error{ErrBadProfile, e.err}
	}
	return []error{ErrBadProfile}
}

// badf returns a bad-input error with a formatted message.
func badf(format string, args ...any) error {
	return &badInput{msg: fmt.Sprintf(format, args...)}
}

// badWrap returns a bad-input error that also wraps err.
func badWrap(err error, format string, args ...any) error {
	return &badInput{msg: fmt.Sprintf(format, args...), err: err}
}

// lineErrorf returns a bad-input error located at a 1-based line.
func lineErrorf(line int, format string, args ...any) error {
	return &badInput{msg: fmt.Sprintf("line %d: ", line) + fmt.Sprintf(format, args...)}
}

// oneLine keeps the first line of a message, so errors from libraries that
// quote input never span lines.
func oneLine(s string) string {
	for i := 0; i < len(s); i++ {
		if s[i] == '\n' || s[i] == '\r' {
			return s[:i] + " …"
		}
	}
	return s
}

// quiet wraps an error whose message is not shown (a third-party
// parser's, which may quote the input) while errors.Is still sees it.
type quiet struct{ err error }

func (q quiet) Error() string { return "" }
func (q quiet) Unwrap() error { return q.err }
