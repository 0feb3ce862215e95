//go:build !unix

package server

// cpuTimes is not measured on this system.
func cpuTimes() (sys, user float64) { return 0, 0 }
