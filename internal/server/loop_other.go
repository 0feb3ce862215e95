//go:build !linux

package server

import (
	"errors"
	"net"
)

// Without epoll every connection has its own goroutine.
const loopsSupported = false

// useRing and useWaiting mean nothing without event loops.
var (
	useRing    = false
	useWaiting = false
)

type loop struct{ gs gateState }

func (lp *loop) stop()                                                   {}
func (lp *loop) wake()                                                   {}
func (lp *loop) notifyMonitor(*monitor)                                  {}
func (lp *loop) add(*Conn)                                               {}
func (lp *loop) deliverTo(*Conn)                                         {}
func (s *Server) startLoops(int) error                                   { return nil }
func shutdownFD(int)                                                     {}
func adopt(*net.TCPConn) (int, error)                                    { return -1, errors.New("server: no event loops here") }
func (s *Server) newLoopConn(lp *loop, fd int, addr, laddr string) *Conn { return nil }

func (lp *loop) handOver(*Conn) {}
func (lp *loop) beforeScript()  {}

func (lp *loop) serveBusy(_ *Conn, _ <-chan struct{}, done chan<- struct{}) { close(done) }
