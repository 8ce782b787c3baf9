package goprof

import "errors"

// ParseDump parses a goroutine dump in debug=1 or debug=2 text form.
func ParseDump(data []byte) (*Dump, error) {
	return nil, errors.New("goroutine dump parser: not implemented yet")
}
