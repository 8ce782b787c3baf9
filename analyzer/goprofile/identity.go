package goprofile

import (
	"fmt"

	"github.com/contend-dev/contend/analyzer/core"
)

// goLockKey returns the key of a Go lock.
func (l *goLock) key() string {
	fam := "mutex"
	if l.flavor == core.FlavorRWWrite || l.flavor == core.FlavorRWRead {
		fam = "rwmutex"
	}
	if w := l.topWait(); w != nil {
		return fmt.Sprintf("go %s waited at %s", fam, w.fn())
	}
	if r := l.topRelease(); r != nil {
		return fmt.Sprintf("go %s released at %s", fam, r.fn())
	}
	return ""
}
