// Package privdrop gives up root for the parts of contend that need none.
// contend runs as root to load its probes and to read another user's
// /proc files and objects; everything it does afterwards with what the
// target produced (fetching from its pprof endpoint, parsing profiles,
// analysing, drawing the TUI) runs as the user who asked for it: the one
// sudo names, or --user.
package privdrop

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"runtime"
	"strconv"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// User is an account to run as.
type User struct {
	UID, GID int
	// Groups are its supplementary groups.
	Groups []int
	// Name is its login name, or its uid when it has none.
	Name string
}

// String names the user for messages: "alice (uid 1000)".
func (u User) String() string { return fmt.Sprintf("%s (uid %d)", u.Name, u.UID) }

// Target returns the user to drop to. spec is the --user value: a login
// name or a uid; "" means the user sudo ran contend for (SUDO_UID and
// SUDO_GID), when contend runs as root. ok is false when there is nobody
// to drop to: contend does not run as root, or runs as root without sudo
// and without --user, or --user names root.
func Target(spec string) (u User, ok bool, err error) {
	if os.Geteuid() != 0 {
		if spec != "" && spec != strconv.Itoa(os.Geteuid()) {
			if cur, err := user.Current(); err != nil || cur.Username != spec {
				return User{}, false, fmt.Errorf("--user %s: contend is not running as root, so it cannot change users", spec)
			}
		}
		return User{}, false, nil
	}
	switch {
	case spec != "":
		u, err = lookup(spec)
		if err != nil {
			return User{}, false, fmt.Errorf("--user %s: %w", spec, err)
		}
	case os.Getenv("SUDO_UID") != "":
		uid, err1 := strconv.Atoi(os.Getenv("SUDO_UID"))
		gid, err2 := strconv.Atoi(os.Getenv("SUDO_GID"))
		if err1 != nil || err2 != nil || uid < 0 || gid < 0 {
			return User{}, false, fmt.Errorf("SUDO_UID=%q SUDO_GID=%q are not ids", os.Getenv("SUDO_UID"), os.Getenv("SUDO_GID"))
		}
		u = User{UID: uid, GID: gid, Name: strconv.Itoa(uid)}
		if acct, err := user.LookupId(strconv.Itoa(uid)); err == nil {
			u.Name = acct.Username
			u.Groups = groupIDs(acct)
		}
	default:
		return User{}, false, nil
	}
	if u.UID == 0 {
		return User{}, false, nil
	}
	return u, true, nil
}

// lookup resolves a login name or a numeric uid.
func lookup(spec string) (User, error) {
	acct, err := user.Lookup(spec)
	if err != nil {
		if _, nerr := strconv.Atoi(spec); nerr != nil {
			return User{}, err
		}
		if acct, err = user.LookupId(spec); err != nil {
			// A uid without an account: its own group, no others.
			uid, _ := strconv.Atoi(spec)
			if uid < 0 {
				return User{}, fmt.Errorf("negative uid")
			}
			return User{UID: uid, GID: uid, Name: spec}, nil
		}
	}
	uid, err1 := strconv.Atoi(acct.Uid)
	gid, err2 := strconv.Atoi(acct.Gid)
	if err1 != nil || err2 != nil {
		return User{}, fmt.Errorf("account %s has ids %q:%q", spec, acct.Uid, acct.Gid)
	}
	return User{UID: uid, GID: gid, Groups: groupIDs(acct), Name: acct.Username}, nil
}

// groupIDs returns an account's supplementary groups, none when unknown.
func groupIDs(acct *user.User) []int {
	ids, err := acct.GroupIds()
	if err != nil {
		return nil
	}
	var out []int
	for _, s := range ids {
		if g, err := strconv.Atoi(s); err == nil {
			out = append(out, g)
		}
	}
	return out
}

// ErrStillPrivileged reports a drop that left a way back to root.
var ErrStillPrivileged = errors.New("still privileged after dropping")

// Drop makes the whole process u for good: its supplementary groups, then
// its real, effective and saved gid and uid on every thread (Go's
// syscall.Setres[ug]id apply to all threads). Changing every uid away
// from 0 clears all capabilities; no_new_privs then keeps any program run
// later from gaining them back, and the kernel marks the process not
// dumpable, so the user cannot ptrace it for the descriptors it opened as
// root. The result is checked: a process that could still become root
// again is an error.
func Drop(u User) error {
	if err := syscall.Setgroups(u.Groups); err != nil {
		return fmt.Errorf("drop to %s: set groups: %w", u, err)
	}
	if err := syscall.Setresgid(u.GID, u.GID, u.GID); err != nil {
		return fmt.Errorf("drop to %s: set gid: %w", u, err)
	}
	if err := syscall.Setresuid(u.UID, u.UID, u.UID); err != nil {
		return fmt.Errorf("drop to %s: set uid: %w", u, err)
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("drop to %s: no_new_privs: %w", u, err)
	}
	return Check(u)
}

// Check verifies that the process runs as u with no capability and no way
// back to root.
func Check(u User) error {
	ruid, euid, suid := unix.Getresuid()
	if ruid != u.UID || euid != u.UID || suid != u.UID || os.Getegid() != u.GID || os.Getgid() != u.GID {
		return fmt.Errorf("drop to %s: running as uid %d/%d/%d gid %d: %w", u, ruid, euid, suid, os.Getegid(), ErrStillPrivileged)
	}
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return fmt.Errorf("drop to %s: read capabilities: %w", u, err)
	}
	if data[0].Effective|data[1].Effective|data[0].Permitted|data[1].Permitted != 0 {
		return fmt.Errorf("drop to %s: capabilities left: %w", u, ErrStillPrivileged)
	}
	if u.UID != 0 {
		if err := unix.Setresuid(0, 0, 0); err == nil {
			return fmt.Errorf("drop to %s: could become root again: %w", u, ErrStillPrivileged)
		}
	}
	return nil
}

// Command returns a command that runs name with args as u, killed when
// ctx ends or when this process dies, with no capability and in a
// process group of its own.
func Command(ctx context.Context, u User, name string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Credential: u.Credential(),
		Pdeathsig:  syscall.SIGKILL,
		Setpgid:    true,
	}
	return cmd
}

// Credential returns u as the credential of a child process.
func (u User) Credential() *syscall.Credential {
	groups := make([]uint32, len(u.Groups))
	for i, g := range u.Groups {
		groups[i] = uint32(g)
	}
	return &syscall.Credential{Uid: uint32(u.UID), Gid: uint32(u.GID), Groups: groups}
}

// Do runs f as u on an OS thread of its own and returns f's error: every
// file f creates or opens is checked against u's permissions and belongs
// to u, as if u had run it, while the rest of the process stays root.
// Linux keeps credentials per thread, and checks file access against a
// thread's filesystem ids (fsuid, fsgid) and its groups: Do sets those on
// its locked thread with raw system calls (Go's and libc's calls change
// every thread), which also takes the filesystem capabilities
// (CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH, CAP_FOWNER, CAP_CHOWN...) off
// the thread, and gives root's back before the thread is unlocked. f
// must do its work on the calling goroutine: another goroutine runs as
// root.
func Do(u User, f func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		saved, err := threadGroups()
		if err != nil {
			runtime.UnlockOSThread()
			errc <- fmt.Errorf("act as %s: %w", u, err)
			return
		}
		if err := setThreadFS(u.UID, u.GID, u.Groups); err != nil {
			errc <- fmt.Errorf("act as %s: %w", u, err)
			restoreThread(saved)
			return
		}
		defer restoreThread(saved)
		errc <- f()
	}()
	return <-errc
}

// restoreThread gives the calling thread root's filesystem ids and the
// groups saved, and unlocks it; a thread that cannot have them back
// stays locked, so that the runtime ends it with its goroutine rather
// than run other code as the user.
func restoreThread(groups []int) {
	if err := setThreadFS(0, 0, groups); err == nil {
		runtime.UnlockOSThread()
	}
}

// threadGroups returns the calling thread's supplementary groups.
func threadGroups() ([]int, error) {
	buf := make([]uint32, 1<<16) // NGROUPS_MAX
	n, _, e := unix.RawSyscall(unix.SYS_GETGROUPS, uintptr(len(buf)), uintptr(unsafe.Pointer(&buf[0])), 0)
	if e != 0 {
		return nil, fmt.Errorf("get groups: %w", e)
	}
	out := make([]int, n)
	for i := range out {
		out[i] = int(buf[i])
	}
	return out, nil
}

// setThreadFS sets the calling thread's groups, then its fsgid and fsuid
// (setfsuid and setfsgid report no error; each is read back).
func setThreadFS(uid, gid int, groups []int) error {
	gs := make([]uint32, len(groups))
	for i, g := range groups {
		gs[i] = uint32(g)
	}
	var p unsafe.Pointer
	if len(gs) > 0 {
		p = unsafe.Pointer(&gs[0])
	}
	if _, _, e := unix.RawSyscall(unix.SYS_SETGROUPS, uintptr(len(gs)), uintptr(p), 0); e != 0 {
		return fmt.Errorf("set groups: %w", e)
	}
	unix.RawSyscall(unix.SYS_SETFSGID, uintptr(gid), 0, 0)
	if got, _, _ := unix.RawSyscall(unix.SYS_SETFSGID, ^uintptr(0), 0, 0); int(got) != gid {
		return fmt.Errorf("set fsgid %d: have %d", gid, got)
	}
	unix.RawSyscall(unix.SYS_SETFSUID, uintptr(uid), 0, 0)
	if got, _, _ := unix.RawSyscall(unix.SYS_SETFSUID, ^uintptr(0), 0, 0); int(got) != uid {
		return fmt.Errorf("set fsuid %d: have %d", uid, got)
	}
	return nil
}

// NobodyID is the uid and gid of nobody where the account database does
// not name it: the overflow id, 65534 on Linux.
const NobodyID = 65534

// Nobody returns the account nobody, to run as when contend runs as root
// with no one named to run as (no sudo, no --user).
func Nobody() User {
	if u, err := lookup("nobody"); err == nil && u.UID != 0 {
		return u
	}
	return User{UID: NobodyID, GID: NobodyID, Name: "nobody"}
}
