//go:build !linux

package uring

import "errors"

// A Completion is the result of one queued operation: Tag as given to Send or Recv, and Res, the
// byte count or a negated errno.
type Completion struct {
	Tag uint64
	Res int32
}

// Ring is one io_uring instance; there are none on this system.
type Ring struct{}

// New reports that this system has no io_uring.
func New(entries uint32) (*Ring, error) {
	return nil, errors.New("uring: not supported on this system")
}

func (r *Ring) Close() error                           { return nil }
func (r *Ring) Full() bool                             { return true }
func (r *Ring) Send(fd int, p []byte, tag uint64) bool { return false }
func (r *Ring) Recv(fd int, p []byte, tag uint64) bool { return false }
func (r *Ring) Submit() ([]Completion, error)          { return nil, nil }
