package collector

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// CapSet is a set of Linux capabilities as the kernel's bit mask: bit n is
// capability n of <linux/capability.h>.
type CapSet uint64

// Capabilities contend cares about.
const (
	CapSysPtrace = unix.CAP_SYS_PTRACE // 19: read another user's /proc/PID/maps and mem
	CapSysAdmin  = unix.CAP_SYS_ADMIN  // 21: implies BPF and PERFMON
	CapPerfmon   = unix.CAP_PERFMON    // 38: tracing programs, perf events, reading kernel memory
	CapBPF       = unix.CAP_BPF        // 39: load programs, create maps
)

// Has reports whether c holds capability capn.
func (c CapSet) Has(capn int) bool { return capn >= 0 && capn < 64 && c&(1<<uint(capn)) != 0 }

// CapName returns the name of capability capn as setcap and capabilities(7)
// spell it ("CAP_BPF").
func CapName(capn int) string {
	switch capn {
	case CapSysPtrace:
		return "CAP_SYS_PTRACE"
	case CapSysAdmin:
		return "CAP_SYS_ADMIN"
	case CapPerfmon:
		return "CAP_PERFMON"
	case CapBPF:
		return "CAP_BPF"
	}
	return "CAP_" + strconv.Itoa(capn)
}

// EffectiveCaps returns the calling thread's effective capability set.
func EffectiveCaps() (CapSet, error) {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return 0, fmt.Errorf("read capabilities: %w", err)
	}
	return CapSet(data[0].Effective) | CapSet(data[1].Effective)<<32, nil
}

// PrivilegeFix is what to do when capabilities are missing. setcap grants
// them to the binary for every user who may run it; CAP_SYS_PTRACE is in
// the list so that targets of other users can be symbolized too.
const PrivilegeFix = "run as root, or: sudo setcap cap_bpf,cap_perfmon,cap_sys_ptrace+ep $(which contend)"

// PermissionError says which capabilities are missing and why. It wraps
// ErrPermission.
type PermissionError struct {
	// Missing names the missing capabilities ("CAP_BPF").
	Missing []string
	// Need says what they are needed for.
	Need string
	// Fix says what to do.
	Fix string
}

func (e *PermissionError) Error() string {
	return fmt.Sprintf("missing %s (%s); %s", strings.Join(e.Missing, " and "), e.Need, e.Fix)
}

// Unwrap makes errors.Is(err, ErrPermission) true.
func (e *PermissionError) Unwrap() error { return ErrPermission }

// missingProbeCaps returns the capabilities the probes need that caps
// lacks. Loading programs and creating maps needs CAP_BPF; tracing
// programs, their helpers that read memory, and per-CPU perf events need
// CAP_PERFMON (kernel 5.8 split both out of CAP_SYS_ADMIN, which still
// implies them).
func missingProbeCaps(caps CapSet) []string {
	if caps.Has(CapSysAdmin) {
		return nil
	}
	var missing []string
	if !caps.Has(CapBPF) {
		missing = append(missing, CapName(CapBPF))
	}
	if !caps.Has(CapPerfmon) {
		missing = append(missing, CapName(CapPerfmon))
	}
	return missing
}

// CheckProbePrivileges returns a *PermissionError (wrapping
// ErrPermission) naming every capability the probes need that this
// process lacks, nil when it may load them.
func CheckProbePrivileges() error { return checkPrivileges() }

// checkPrivileges returns a *PermissionError (wrapping ErrPermission)
// naming every capability the probes need that this process lacks.
func checkPrivileges() error {
	caps, err := EffectiveCaps()
	if err != nil {
		return err
	}
	return checkCaps(caps)
}

// checkCaps is checkPrivileges over a given capability set.
func checkCaps(caps CapSet) error {
	missing := missingProbeCaps(caps)
	if len(missing) == 0 {
		return nil
	}
	return &PermissionError{
		Missing: missing,
		Need:    "to load and attach the probes; CAP_SYS_ADMIN also gives both",
		Fix:     PrivilegeFix,
	}
}

// checkTargetsAccess runs checkTargetAccess on every pid. A target that
// follows processes by name or cgroup skips one that has gone: it was
// found an instant earlier, and a short-lived process (flock(1), a shell
// command) may exit before its map is read; the others and those started
// later are still recorded, as join treats them.
func checkTargetsAccess(procRoot string, pids []int, follows bool) error {
	for _, p := range pids {
		err := checkTargetAccess(procRoot, p)
		if err != nil && !(follows && errors.Is(err, ErrNoProcess)) {
			return err
		}
	}
	return nil
}

// checkTargetAccess checks that the target's memory map can be read:
// symbolization needs /proc/PID/maps and the objects under /proc/PID/root,
// which the kernel shows only to a process of the same user (and a
// dumpable target) or to one holding CAP_SYS_PTRACE. /proc/PID/mem, read
// only as a fallback for objects not on disk, is not required. It returns
// an error wrapping ErrNoProcess when pid does not exist, and a
// *PermissionError naming CAP_SYS_PTRACE when access is refused.
func checkTargetAccess(procRoot string, pid int) error {
	path := procPath(procRoot, strconv.Itoa(pid), "maps")
	f, err := os.Open(path)
	if err == nil {
		// Permission is checked again at read time. A process without
		// mappings (a zombie) reads as empty.
		_, err = f.Read(make([]byte, 1))
		if errors.Is(err, io.EOF) {
			err = nil
		}
		f.Close()
	}
	switch {
	case err == nil:
		return nil
	case errors.Is(err, os.ErrNotExist) || errors.Is(err, unix.ESRCH):
		return fmt.Errorf("read %s: %w", path, ErrNoProcess)
	case errors.Is(err, os.ErrPermission):
		return &PermissionError{
			Missing: []string{CapName(CapSysPtrace)},
			Need:    fmt.Sprintf("to read %s of a process of another user or a non-dumpable one", path),
			Fix:     PrivilegeFix,
		}
	default:
		return fmt.Errorf("read %s: %w", path, err)
	}
}

// procAccessError is the error for a target whose /proc entries the
// kernel refuses to show (a process of another user under a /proc mounted
// with hidepid=, or a restrictive security module).
func procAccessError(path string, pid int) error {
	return &PermissionError{
		Missing: []string{CapName(CapSysPtrace)},
		Need:    fmt.Sprintf("to read %s: /proc hides process %d from this user", path, pid),
		Fix:     PrivilegeFix,
	}
}

// MinKernel is the oldest kernel the probes run on. The newest facility
// they use is bpf_task_pt_regs (5.15), with which the futex and I/O probes
// read a sleeping thread's syscall and its arguments; the rest is older: the BPF ring
// buffer, CAP_BPF and CAP_PERFMON 5.8, bpf_get_current_task_btf 5.11, BTF
// tracepoints (tp_btf) and bpf_probe_read_user 5.5, read-only globals set
// before load 5.2, LRU hash maps 4.10, perf_event programs 4.9,
// bpf_get_stackid 4.6. Doctor tests each feature for real, since
// distribution kernels backport features to older version numbers.
var MinKernel = KernelVersion{5, 15, 0}

// KernelVersion is a Linux release number.
type KernelVersion struct{ Major, Minor, Patch int }

func (v KernelVersion) String() string { return fmt.Sprintf("%d.%d", v.Major, v.Minor) }

// Less reports whether v is older than w.
func (v KernelVersion) Less(w KernelVersion) bool {
	if v.Major != w.Major {
		return v.Major < w.Major
	}
	if v.Minor != w.Minor {
		return v.Minor < w.Minor
	}
	return v.Patch < w.Patch
}

// ParseKernelRelease reads the version number at the start of a kernel
// release string ("6.1.0-18-amd64", "5.15.0-91-generic").
func ParseKernelRelease(release string) (KernelVersion, error) {
	var v KernelVersion
	parts := strings.SplitN(release, ".", 3)
	if len(parts) < 2 {
		return v, fmt.Errorf("kernel release %q: no version number", release)
	}
	nums := make([]int, 3)
	for i, p := range parts {
		end := 0
		for end < len(p) && p[end] >= '0' && p[end] <= '9' {
			end++
		}
		if end == 0 {
			if i < 2 {
				return v, fmt.Errorf("kernel release %q: no version number", release)
			}
			break
		}
		nums[i], _ = strconv.Atoi(p[:end])
	}
	return KernelVersion{nums[0], nums[1], nums[2]}, nil
}

// KernelRelease returns the running kernel's release string (uname -r).
func KernelRelease() (string, error) {
	var u unix.Utsname
	if err := unix.Uname(&u); err != nil {
		return "", fmt.Errorf("uname: %w", err)
	}
	return string(bytes.TrimRight(u.Release[:], "\x00")), nil
}

// btfPath is where the kernel exposes its own BTF, relative to /sys.
const btfPath = "kernel/btf/vmlinux"

// checkKernel checks the kernel release and BTF under sysRoot ("" means
// /sys): an error wraps ErrKernel when the release is older than MinKernel
// and ErrNoBTF when the kernel exposes no BTF (built without
// CONFIG_DEBUG_INFO_BTF), which tp_btf programs and CO-RE need.
func checkKernel(sysRoot, release string) error {
	if sysRoot == "" {
		sysRoot = "/sys"
	}
	v, err := ParseKernelRelease(release)
	if err != nil {
		return err
	}
	if v.Less(MinKernel) {
		return fmt.Errorf("kernel %s is older than %s, the first with %s: %w", release, MinKernel, minKernelWhy, ErrKernel)
	}
	if _, err := os.Stat(filepath.Join(sysRoot, btfPath)); err != nil {
		return fmt.Errorf("%s: %w (the kernel was built without CONFIG_DEBUG_INFO_BTF; use a kernel that has it, as most distributions since 2020 do)", filepath.Join(sysRoot, btfPath), ErrNoBTF)
	}
	return nil
}
