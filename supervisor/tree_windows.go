package supervisor

import (
	"fmt"
	"os/exec"
	"sync"
	"unsafe"

	"golang.org/x/sys/windows"
)

// A child's processes on Windows: a job object (the contract is in
// tree_unix.go). The child is created suspended (groupAttr), placed in a
// job of its own that kills every process in it when its last handle
// closes, and only then let run: every process it starts is born in the
// job (breaking away is not allowed), and when the bridge ends, however it
// ends, Windows closes its handles and the job's processes die with it. No
// reaper and no records are needed. Windows has no SIGTERM for a console
// program without a console of its own: a child is stopped by closing its
// stdin, then by terminating the job.
type tree struct {
	// mu guards job, which closeHandles closes while a Stop may still kill.
	mu  sync.Mutex
	job windows.Handle
}

// newTree places cmd's process, started suspended, in a new job, sets
// the sandbox's caps on it (cg; nil: none), and lets it run. On an error
// the caller kills the process.
func newTree(cmd *exec.Cmd, cg *cgroup) (*tree, error) {
	job, err := windows.CreateJobObject(nil, nil)
	if err != nil {
		return nil, fmt.Errorf("cannot create a job object: %w", err)
	}
	info := cgroupCaps{}.limits()
	if _, err := windows.SetInformationJobObject(job, windows.JobObjectExtendedLimitInformation, uintptr(unsafe.Pointer(&info)), uint32(unsafe.Sizeof(info))); err != nil {
		windows.CloseHandle(job)
		return nil, fmt.Errorf("cannot make the job kill its processes when it closes: %w", err)
	}
	pid := uint32(cmd.Process.Pid)
	proc, err := windows.OpenProcess(windows.PROCESS_SET_QUOTA|windows.PROCESS_TERMINATE, false, pid)
	if err != nil {
		windows.CloseHandle(job)
		return nil, fmt.Errorf("cannot open the child's process: %w", err)
	}
	err = windows.AssignProcessToJobObject(job, proc)
	windows.CloseHandle(proc)
	if err != nil {
		windows.CloseHandle(job)
		return nil, fmt.Errorf("cannot place the child in its job: %w", err)
	}
	t := &tree{job: job}
	if err := cg.limitTree(t); err != nil {
		windows.CloseHandle(job)
		return nil, err
	}
	if err := resume(pid); err != nil {
		windows.CloseHandle(job)
		return nil, err
	}
	return t, nil
}

// resume lets process pid, created suspended, run: its one thread.
func resume(pid uint32) error {
	snap, err := windows.CreateToolhelp32Snapshot(windows.TH32CS_SNAPTHREAD, 0)
	if err != nil {
		return fmt.Errorf("cannot list the child's threads: %w", err)
	}
	defer windows.CloseHandle(snap)
	te := windows.ThreadEntry32{Size: uint32(unsafe.Sizeof(windows.ThreadEntry32{}))}
	resumed := 0
	for err = windows.Thread32First(snap, &te); err == nil; err = windows.Thread32Next(snap, &te) {
		if te.OwnerProcessID != pid {
			continue
		}
		th, err := windows.OpenThread(windows.THREAD_SUSPEND_RESUME, false, te.ThreadID)
		if err != nil {
			return fmt.Errorf("cannot open the child's thread: %w", err)
		}
		_, err = windows.ResumeThread(th)
		windows.CloseHandle(th)
		if err != nil {
			return fmt.Errorf("cannot resume the child: %w", err)
		}
		resumed++
	}
	if resumed == 0 {
		return fmt.Errorf("cannot resume the child: no thread of process %d found", pid)
	}
	return nil
}

// stopStages: terminating the job (there is no gentler stage after stdin).
var stopStages = []string{"terminating its job"}

func (t *tree) stage(int) { t.kill() }

func (t *tree) kill() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.job != 0 {
		_ = windows.TerminateJobObject(t.job, 1)
	}
}

func (t *tree) closeHandles() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.job != 0 {
		windows.CloseHandle(t.job)
		t.job = 0
	}
}
