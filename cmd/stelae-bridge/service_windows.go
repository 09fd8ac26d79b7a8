//go:build windows

package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/sys/windows/svc"
	"golang.org/x/sys/windows/svc/eventlog"
	"golang.org/x/sys/windows/svc/mgr"
)

// This file is 'stelae-bridge service install|uninstall|start|stop' on
// Windows, and the service itself ('service run', which the service
// manager starts): the bridge as a Windows service that drains on stop.
// Its log goes to a file (serviceLog) and its start and stop to the event
// log; children get no console window (supervisor's CREATE_NO_WINDOW).

// serviceName is the service's name.
const serviceName = "stelae-bridge"

// serviceLog is the service's log file: its stderr, as a console run's.
func serviceLog() string {
	dir := os.Getenv("ProgramData")
	if dir == "" {
		dir = `C:\ProgramData`
	}
	return filepath.Join(dir, "stelae-bridge", "stelae-bridge.log")
}

func runService(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, serviceUsage)
		return 2
	}
	var err error
	switch args[0] {
	case "install":
		err = installService(args[1:])
		if err == nil {
			fmt.Fprintf(stdout, "service %s installed (starts with Windows); its log: %s\n", serviceName, serviceLog())
		}
	case "uninstall":
		err = uninstallService()
	case "start":
		err = controlService(func(s *mgr.Service) error { return s.Start() }, svc.Running)
	case "stop":
		err = controlService(func(s *mgr.Service) error { _, err := s.Control(svc.Stop); return err }, svc.Stopped)
	case "run":
		return runAsService(args[1:])
	default:
		fmt.Fprint(stderr, serviceUsage)
		return 2
	}
	if err != nil {
		fmt.Fprintln(stderr, "stelae-bridge service:", err)
		return 1
	}
	return 0
}

func installService(flags []string) error {
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	m, err := mgr.Connect()
	if err != nil {
		return fmt.Errorf("cannot reach the service manager (run as an administrator): %w", err)
	}
	defer m.Disconnect()
	if s, err := m.OpenService(serviceName); err == nil {
		s.Close()
		return fmt.Errorf("service %s is installed already ('stelae-bridge service uninstall' first)", serviceName)
	}
	s, err := m.CreateService(serviceName, exe, mgr.Config{DisplayName: "stelae-bridge", StartType: mgr.StartAutomatic,
		Description: "stdio MCP servers over MCP Streamable HTTP"}, append([]string{"service", "run"}, flags...)...)
	if err != nil {
		return err
	}
	defer s.Close()
	if err := eventlog.InstallAsEventCreate(serviceName, eventlog.Error|eventlog.Warning|eventlog.Info); err != nil {
		_ = s.Delete()
		return fmt.Errorf("the event log source: %w", err)
	}
	return nil
}

func uninstallService() error {
	return withService(func(s *mgr.Service) error {
		// A running service is stopped first, with its drain: a deleted
		// service that still runs would hold its port until the next stop.
		if st, err := s.Query(); err == nil && st.State != svc.Stopped {
			if st.State != svc.StopPending {
				if _, err := s.Control(svc.Stop); err != nil {
					return fmt.Errorf("stopping the service before removing it: %w", err)
				}
			}
			if err := waitState(s, svc.Stopped); err != nil {
				return err
			}
		}
		if err := s.Delete(); err != nil {
			return err
		}
		_ = eventlog.Remove(serviceName)
		return nil
	})
}

// withService runs f on the installed service.
func withService(f func(*mgr.Service) error) error {
	m, err := mgr.Connect()
	if err != nil {
		return fmt.Errorf("cannot reach the service manager (run as an administrator): %w", err)
	}
	defer m.Disconnect()
	s, err := m.OpenService(serviceName)
	if err != nil {
		return fmt.Errorf("service %s is not installed ('stelae-bridge service install')", serviceName)
	}
	defer s.Close()
	return f(s)
}

// controlService does do and waits (a minute at most: the drain is
// -drain-timeout, 30 s by default) for the service to reach want.
func controlService(do func(*mgr.Service) error, want svc.State) error {
	return withService(func(s *mgr.Service) error {
		if err := do(s); err != nil {
			return err
		}
		return waitState(s, want)
	})
}

// waitState waits (a minute at most) for s to reach want.
func waitState(s *mgr.Service, want svc.State) error {
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(300 * time.Millisecond) {
		st, err := s.Query()
		if err != nil {
			return err
		}
		if st.State == want {
			return nil
		}
	}
	return fmt.Errorf("service %s did not reach the state asked for within a minute; its log: %s", serviceName, serviceLog())
}

// runAsService is the service: the bridge with flags, until the service
// manager stops it (the drain then runs as on SIGTERM).
func runAsService(flags []string) int {
	// (svc.IsWindowsService is not asked: it goes by the session, which
	// is not 0 under Wine's service manager. svc.Run fails at once when no
	// service manager started this process.)
	if err := svc.Run(serviceName, &serviceHandler{flags: flags}); err != nil {
		fmt.Fprintln(os.Stderr, "stelae-bridge service run: only the service manager runs this ('stelae-bridge service start'):", err)
		return 2
	}
	return 0
}

// serviceHandler runs the bridge for the service manager.
type serviceHandler struct{ flags []string }

func (h *serviceHandler) Execute(_ []string, req <-chan svc.ChangeRequest, status chan<- svc.Status) (bool, uint32) {
	status <- svc.Status{State: svc.StartPending}
	elog, _ := eventlog.Open(serviceName)
	if elog != nil {
		defer elog.Close()
	}
	_ = os.MkdirAll(filepath.Dir(serviceLog()), 0o700)
	logFile, err := os.OpenFile(serviceLog(), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		if elog != nil {
			_ = elog.Error(1, "cannot open the log file "+serviceLog()+": "+err.Error())
		}
		return true, 1
	}
	defer logFile.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan int, 1)
	go func() { done <- run(ctx, h.flags, os.Environ(), logFile, logFile) }()
	status <- svc.Status{State: svc.Running, Accepts: svc.AcceptStop | svc.AcceptShutdown}
	if elog != nil {
		_ = elog.Info(1, "stelae-bridge started; its log: "+serviceLog())
	}
	for {
		select {
		case c := <-req:
			switch c.Cmd {
			case svc.Interrogate:
				status <- c.CurrentStatus
			case svc.Stop, svc.Shutdown:
				// The drain: calls in flight finish, as on SIGTERM.
				status <- svc.Status{State: svc.StopPending, WaitHint: 45000}
				cancel()
			}
		case code := <-done:
			if elog != nil {
				_ = elog.Info(2, fmt.Sprintf("stelae-bridge stopped (exit %d)", code))
			}
			status <- svc.Status{State: svc.Stopped}
			return code != 0, uint32(code)
		}
	}
}
