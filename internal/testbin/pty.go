package testbin

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// PTYRun is what RunOnSilentPTY saw.
type PTYRun struct {
	// Output is everything the program wrote to the terminal.
	Output []byte
	// Took is the time from start to exit.
	Took time.Duration
	// Err is the program's exit error, if any.
	Err error
}

// RunOnSilentPTY runs cmd with a new pseudo-terminal as its stdin, stdout,
// stderr and controlling terminal (in the foreground), and never answers
// anything it writes: a terminal like `script`'s, a CI log or an editor's
// shell, that swallows queries. It kills the program after limit.
func RunOnSilentPTY(t testing.TB, cmd *exec.Cmd, limit time.Duration) PTYRun {
	t.Helper()
	master, slave := openPTY(t)
	defer master.Close()
	cmd.Stdin, cmd.Stdout, cmd.Stderr = slave, slave, slave
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		slave.Close()
		t.Fatalf("testbin: start %s: %v", cmd.Path, err)
	}
	slave.Close()
	var out bytes.Buffer
	read := make(chan struct{})
	go func() {
		// Ends with EIO once the last holder of the terminal exits.
		io.Copy(&out, master)
		close(read)
	}()
	timer := time.AfterFunc(limit, func() { cmd.Process.Kill() })
	err := cmd.Wait()
	took := time.Since(start)
	timer.Stop()
	select {
	case <-read:
	case <-time.After(5 * time.Second):
		t.Fatalf("testbin: the terminal of %s stayed open after it exited", cmd.Path)
	}
	return PTYRun{Output: out.Bytes(), Took: took, Err: err}
}

// openPTY opens a new pseudo-terminal pair.
func openPTY(t testing.TB) (master, slave *os.File) {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatalf("testbin: open /dev/ptmx: %v", err)
	}
	fd := int(m.Fd())
	if err := unix.IoctlSetPointerInt(fd, unix.TIOCSPTLCK, 0); err != nil {
		m.Close()
		t.Fatalf("testbin: unlock pty: %v", err)
	}
	n, err := unix.IoctlGetInt(fd, unix.TIOCGPTN)
	if err != nil {
		m.Close()
		t.Fatalf("testbin: pty number: %v", err)
	}
	s, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		m.Close()
		t.Fatalf("testbin: open pty %d: %v", n, err)
	}
	return m, s
}
