package server

import (
	"errors"
	"os"
	"strconv"
	"strings"

	"github.com/coreos/go-systemd/v22/daemon"
)

// How bloomd runs under a supervisor, with Redis 7.0's settings. supervised: with "systemd" (or
// "auto" when systemd started the process, which it says with NOTIFY_SOCKET), bloomd tells
// systemd that it is ready once its data is loaded, and that it is stopping when a shutdown
// begins, so that a unit of Type=notify (as Debian's redis-server.service is) runs bloomd as it
// runs Redis. "upstart" is accepted and warned about at start: bloomd does not signal upstart.
// pidfile: bloomd writes its pid there at start and removes the file when it exits cleanly; a
// file it cannot write is a warning, as in Redis. bloomd never daemonizes (daemonize no).

func init() {
	params = append(params, param{"pidfile", false, func(c *Config) string { return c.PidFile }, func(c *Config, v string) error { c.PidFile = v; return nil }})
	params = append(params, param{"supervised", false, func(c *Config) string { return supervisedValue(c.Supervised) }, func(c *Config, v string) error {
		switch v = strings.ToLower(v); v {
		case "no", "auto", "systemd", "upstart":
			c.Supervised = v
			return nil
		}
		return errors.New("argument must be one of no, auto, systemd, upstart")
	}})
}

func supervisedValue(v string) string {
	if v == "" {
		return "no"
	}
	return v
}

// notifier tells systemd about the server's state, when the supervised setting asks for it.
type notifier struct {
	on bool
}

// newNotifier returns the notifier for the supervised setting, logging what it does.
func (s *Server) newNotifier(supervised string) notifier {
	_, socket := os.LookupEnv("NOTIFY_SOCKET")
	switch supervised {
	case "systemd":
		if !socket {
			s.log.Warn("supervised systemd, but NOTIFY_SOCKET is not set: systemd did not start bloomd, or not as Type=notify")
			return notifier{}
		}
		return notifier{on: true}
	case "auto":
		return notifier{on: socket}
	case "upstart":
		s.log.Warn("supervised upstart: bloomd does not signal upstart; run it under systemd or another supervisor")
	}
	return notifier{}
}

// notifySystemd sends state to systemd (READY=1, STOPPING=1, ...), logging a failure.
func (s *Server) notifySystemd(n notifier, state string) {
	if !n.on {
		return
	}
	if _, err := daemon.SdNotify(false, state); err != nil {
		s.log.Warn("cannot notify systemd", "state", state, "err", err)
	}
}

// writePidFile writes the pid to the pidfile setting's file, if set, and returns a function
// that removes it.
func (s *Server) writePidFile(path string) func() {
	if path == "" {
		return func() {}
	}
	if err := os.WriteFile(path, []byte(strconv.Itoa(os.Getpid())+"\n"), 0o644); err != nil {
		s.log.Warn("failed to write the pid file", "file", path, "err", err)
		return func() {}
	}
	return func() { os.Remove(path) }
}
