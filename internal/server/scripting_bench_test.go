package server

import (
	"strconv"
	"testing"
)

// BenchmarkEvalSHA runs the Spring example's BF.ADD script by EVALSHA through the server's
// command path (Server.Exec, no network): the cost of a script call beside the command's.
func BenchmarkEvalSHA(b *testing.B) {
	s := startServer(b, nil)
	sha := s.Exec([]byte("SCRIPT"), []byte("LOAD"), []byte(springAdd))
	if len(sha) < 40 {
		b.Fatalf("%q", sha)
	}
	id := sha[len(sha)-42 : len(sha)-2]
	s.Exec([]byte("BF.RESERVE"), []byte("bf"), []byte("0.01"), []byte("10000000"))
	args := [][]byte{[]byte("EVALSHA"), id, []byte("2"), []byte("bf"), nil}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		args[4] = strconv.AppendInt(args[4][:0], int64(i), 10)
		s.Exec(args...)
	}
}
