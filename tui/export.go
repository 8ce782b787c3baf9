package tui

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/contend-dev/contend/recording"
)

// maxExportTries bounds the suffixes tried when an export name is taken
// (two exports within one second); more than that means something else is
// wrong with the directory.
const maxExportTries = 100

// exportRecording writes rec under dir in a new directory named after the
// target and the time, and returns its path.
func exportRecording(dir string, rec *recording.Recording, now time.Time) (string, error) {
	if dir == "" {
		dir = "."
	}
	base := "contend"
	if c := sanitizeName(rec.Meta.Comm); c != "" {
		base += "-" + c
	}
	if rec.Meta.PID > 0 {
		base += fmt.Sprintf("-%d", rec.Meta.PID)
	}
	base += "-" + now.Format("20060102-150405")
	for i := 1; i <= maxExportTries; i++ {
		name := base
		if i > 1 {
			name = fmt.Sprintf("%s-%d", base, i)
		}
		path := filepath.Join(dir, name)
		err := recording.Write(path, rec)
		if errors.Is(err, recording.ErrExists) {
			continue
		}
		if err != nil {
			return "", err
		}
		return path, nil
	}
	return "", fmt.Errorf("export under %s: %d names taken", dir, maxExportTries)
}

// sanitizeName keeps the characters of a command name that are safe in a
// file name.
func sanitizeName(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_', r == '.':
			return r
		}
		return -1
	}, s)
}
