package supervisor

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Files by Landlock ('files:', issue 37). The joiner, between the reaper
// and the command's exec, restricts itself to the paths it was given
// (read: read and execute; write: also create, remove, rename, truncate)
// and then becomes the command: the command and everything it starts are
// held by the kernel, by inode, so no symlink or ".." made at run time
// leads outside, and nothing inside can lift it (no_new_privs is set too:
// no setuid program regains more).
//
// The joiner restricts only the thread it runs on, and execs from it (a
// Landlock domain is a thread's until exec makes it the new program's):
// the three system calls are made here with x/sys/unix rather than with
// go-landlock, whose restriction of every thread of a Go process links
// libcap's psx (a cgo wrapper of pthread_create) into the whole bridge.

// landlockMinABI is the lowest Landlock ABI that holds every file rule:
// ABI 3 (Linux 6.2) is the first that stops truncating a file outside.
const landlockMinABI = 3

// landlockABI is the running kernel's Landlock ABI version (0: none).
func landlockABI() int {
	v, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, 0, 0, unix.LANDLOCK_CREATE_RULESET_VERSION)
	if errno != 0 {
		return 0
	}
	return int(v)
}

// checkLandlock says whether the running kernel can hold 'files:', and
// what of it it cannot (notes, for -check and the log).
func checkLandlockHere() (notes []string, err error) {
	abi := landlockABI()
	switch {
	case abi < 1:
		return nil, errors.New("'files' needs Landlock, which this kernel does not offer (Linux 5.13 or later, with landlock among its LSMs: lsm=...,landlock)")
	case abi < landlockMinABI:
		return nil, fmt.Errorf("'files' needs Landlock ABI %d (Linux 6.2) to stop truncating files outside; this kernel has ABI %d", landlockMinABI, abi)
	}
	notes = append(notes, fmt.Sprintf("files by Landlock ABI %d", abi))
	if abi < 5 {
		notes = append(notes, "ioctl on devices is not restricted (Landlock ABI 5, Linux 6.10)")
	}
	if abi < 6 {
		notes = append(notes, "abstract unix sockets and signals outside are not restricted (Landlock ABI 6, Linux 6.12)")
	}
	// ABI 9 restricts connecting to a pathname unix socket; this build
	// does not use it yet.
	notes = append(notes, "connecting to unix sockets by path is not restricted (grant no directory that holds one: /run, /var/run)")
	return notes, nil
}

// The access rights the joiner handles: every right of ABI 5 (what it
// does not grant is denied); read and write are what it grants, and a
// file (not a directory) takes only a file's rights.
const (
	landlockRead  = unix.LANDLOCK_ACCESS_FS_EXECUTE | unix.LANDLOCK_ACCESS_FS_READ_FILE | unix.LANDLOCK_ACCESS_FS_READ_DIR
	landlockFile  = unix.LANDLOCK_ACCESS_FS_EXECUTE | unix.LANDLOCK_ACCESS_FS_READ_FILE | unix.LANDLOCK_ACCESS_FS_WRITE_FILE | unix.LANDLOCK_ACCESS_FS_TRUNCATE | unix.LANDLOCK_ACCESS_FS_IOCTL_DEV
	landlockWrite = (1<<16 - 1) &^ unix.LANDLOCK_ACCESS_FS_IOCTL_DEV
)

// landlockHandled are the rights an ABI knows.
func landlockHandled(abi int) uint64 {
	switch {
	case abi >= 5:
		return 1<<16 - 1
	case abi >= 3:
		return 1<<15 - 1
	case abi == 2:
		return 1<<14 - 1
	default:
		return 1<<13 - 1
	}
}

// restrictFiles restricts the calling thread, and what it execs, to read
// (read and execute) and write (read, write, create, remove, rename
// within, truncate). A path that does not exist is skipped (the system's
// runtime paths differ between systems; the bridge checked the
// operator's). The caller has locked its goroutine to its thread and
// execs next.
func restrictFiles(read, write []string) error {
	abi := landlockABI()
	if abi < landlockMinABI {
		_, err := checkLandlockHere()
		return err
	}
	handled := landlockHandled(abi)
	// From ABI 6 the domain is scoped too: no connecting to an abstract
	// unix socket made outside it (another program's), no signal to a
	// process outside it (the bridge's).
	attr := struct{ fs, net, scoped uint64 }{fs: handled}
	size := uintptr(8)
	if abi >= 6 {
		attr.scoped, size = unix.LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET|unix.LANDLOCK_SCOPE_SIGNAL, unsafe.Sizeof(attr)
	}
	fd, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, uintptr(unsafe.Pointer(&attr)), size, 0)
	if errno != 0 {
		return fmt.Errorf("cannot make the child's Landlock ruleset: %w", errno)
	}
	defer unix.Close(int(fd))
	add := func(p string, rights uint64) error {
		path, err := unix.Open(p, unix.O_PATH|unix.O_CLOEXEC, 0)
		if errors.Is(err, unix.ENOENT) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("cannot open %s to grant it: %w", p, err)
		}
		defer unix.Close(path)
		var st unix.Stat_t
		if err := unix.Fstat(path, &st); err != nil {
			return fmt.Errorf("cannot read %s to grant it: %w", p, err)
		}
		if st.Mode&unix.S_IFMT != unix.S_IFDIR {
			rights &= landlockFile
		}
		rule := unix.LandlockPathBeneathAttr{Allowed_access: rights & handled, Parent_fd: int32(path)}
		if _, _, errno := unix.Syscall6(unix.SYS_LANDLOCK_ADD_RULE, fd, unix.LANDLOCK_RULE_PATH_BENEATH, uintptr(unsafe.Pointer(&rule)), 0, 0, 0); errno != 0 {
			return fmt.Errorf("cannot grant %s: %w", p, errno)
		}
		return nil
	}
	for _, p := range read {
		if err := add(p, landlockRead); err != nil {
			return err
		}
	}
	for _, p := range write {
		if err := add(p, landlockWrite); err != nil {
			return err
		}
	}
	return restrictSelf(fd, "files")
}

// restrictSelf enforces the Landlock ruleset fd on the calling thread
// (and what it execs), after no_new_privs, which Landlock requires of a
// process without CAP_SYS_ADMIN; what names the ruleset for an error.
func restrictSelf(fd uintptr, what string) error {
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("cannot set no_new_privs for Landlock: %w", err)
	}
	if _, _, errno := unix.Syscall(unix.SYS_LANDLOCK_RESTRICT_SELF, fd, 0, 0); errno != 0 {
		return fmt.Errorf("cannot restrict the child's %s with Landlock: %w", what, errno)
	}
	return nil
}

// landlockPorts: Landlock's TCP rules (ABI 4, Linux 6.7) can hold the
// ports of a list here, when the kernel has them.
var landlockPorts = landlockABI() >= 4

// landlockNetPort is the kernel's struct landlock_net_port_attr.
type landlockNetPort struct {
	allowed uint64
	port    uint64
}

// restrictPorts restricts the calling thread, and what it execs, to TCP
// connections to ports (on any host). The caller has locked its goroutine
// to its thread and execs next.
func restrictPorts(ports []string) error {
	attr := struct{ fs, net uint64 }{net: unix.LANDLOCK_ACCESS_NET_CONNECT_TCP}
	fd, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, uintptr(unsafe.Pointer(&attr)), unsafe.Sizeof(attr), 0)
	if errno != 0 {
		return fmt.Errorf("cannot make the child's Landlock network ruleset: %w", errno)
	}
	defer unix.Close(int(fd))
	for _, p := range ports {
		n, err := strconv.ParseUint(p, 10, 16)
		if err != nil {
			return fmt.Errorf("the port %q: %w", p, err)
		}
		rule := landlockNetPort{allowed: unix.LANDLOCK_ACCESS_NET_CONNECT_TCP, port: n}
		if _, _, errno := unix.Syscall6(unix.SYS_LANDLOCK_ADD_RULE, fd, 2 /* LANDLOCK_RULE_NET_PORT */, uintptr(unsafe.Pointer(&rule)), 0, 0, 0); errno != 0 {
			return fmt.Errorf("cannot grant TCP port %s: %w", p, errno)
		}
	}
	return restrictSelf(fd, "connections")
}

// undoing are the capabilities a child running as root could undo its
// sandbox with: enter another network namespace (setns) or make one,
// detach the filters, open a file by handle past Landlock
// (open_by_handle_at), trace or load code into other processes, make
// devices, raw sockets. The joiner drops them from the bounding set of the
// thread that execs the command, so neither the command nor anything it
// starts (setuid programs included) has them.
var undoing = []uintptr{unix.CAP_SYS_ADMIN, unix.CAP_NET_ADMIN, unix.CAP_BPF, unix.CAP_PERFMON, unix.CAP_SYS_PTRACE,
	unix.CAP_SYS_MODULE, unix.CAP_SYS_RAWIO, unix.CAP_DAC_READ_SEARCH, unix.CAP_NET_RAW, unix.CAP_MKNOD,
	unix.CAP_SYS_BOOT, unix.CAP_SYS_TIME, unix.CAP_MAC_ADMIN, unix.CAP_MAC_OVERRIDE, unix.CAP_SYSLOG,
	unix.CAP_LINUX_IMMUTABLE, unix.CAP_SETPCAP}

// dropUndoing drops undoing from the calling thread's bounding set (the
// caller has locked its goroutine to its thread and execs next). A
// process without CAP_SETPCAP has none of them to drop: nothing to do.
func dropUndoing() error {
	if os.Geteuid() != 0 {
		return nil
	}
	for _, c := range undoing {
		if err := unix.Prctl(unix.PR_CAPBSET_DROP, c, 0, 0, 0); err != nil && !errors.Is(err, unix.EINVAL) {
			return fmt.Errorf("cannot drop the capability %d that could undo the sandbox: %w", c, err)
		}
	}
	return nil
}

// rlimitData: RLIMIT_DATA is the memory cap's fallback here.
const rlimitData = true

// limitData sets the data limit of the calling process (and what it
// execs and starts), soft and hard.
func limitData(n int64) error {
	if err := unix.Setrlimit(unix.RLIMIT_DATA, &unix.Rlimit{Cur: uint64(n), Max: uint64(n)}); err != nil {
		return fmt.Errorf("cannot set the child's data limit: %w", err)
	}
	return nil
}

// loopbackUp brings up the loopback of the network namespace the joiner
// was started in ('network: none'): the child may talk to itself, and to
// nothing else.
func loopbackUp() error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("cannot bring up the child's loopback: %w", err)
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		return err
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr); err != nil {
		return fmt.Errorf("cannot read the child's loopback: %w", err)
	}
	ifr.SetUint16(ifr.Uint16() | unix.IFF_UP)
	if err := unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr); err != nil && !errors.Is(err, unix.EPERM) {
		return fmt.Errorf("cannot bring up the child's loopback: %w", err)
	}
	return nil
}

// checkNetns says whether the bridge may give a child a network namespace
// of its own ('network: none'): as root it may; as another user where the
// system allows unprivileged user namespaces.
func checkNetns() error {
	if os.Geteuid() == 0 {
		return nil
	}
	for _, f := range []string{"/proc/sys/user/max_user_namespaces", "/proc/sys/kernel/unprivileged_userns_clone"} {
		data, err := os.ReadFile(f)
		if err == nil && strings.TrimSpace(string(data)) == "0" {
			return fmt.Errorf("'network: none' needs a network namespace, which only root may make here (%s is 0): run the bridge as root, or allow unprivileged user namespaces", f)
		}
	}
	return nil
}

// netnsAttr makes attr start its process in a network namespace of its
// own with nothing but a loopback: as root by itself; as another user
// inside a user namespace of its own that maps only that user (where the
// system allows unprivileged user namespaces).
func netnsAttr(attr *syscall.SysProcAttr) {
	if os.Geteuid() == 0 {
		attr.Cloneflags |= syscall.CLONE_NEWNET
		return
	}
	attr.Cloneflags |= syscall.CLONE_NEWUSER | syscall.CLONE_NEWNET
	attr.UidMappings = []syscall.SysProcIDMap{{ContainerID: os.Geteuid(), HostID: os.Geteuid(), Size: 1}}
	attr.GidMappings = []syscall.SysProcIDMap{{ContainerID: os.Getegid(), HostID: os.Getegid(), Size: 1}}
	attr.GidMappingsEnableSetgroups = false
}
