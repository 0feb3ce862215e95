package server

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/bloomd/bloom/internal/resp"
)

// The version bloomd reports as redis_version (HELLO, INFO): the Redis release whose
// behaviour it follows, with RedisBloom 2.6.28 as module "bf".
const (
	redisVersion = "7.0.15"
	bfModuleVer  = 20628
)

func pingCmd(c *Conn, args [][]byte) {
	if c.subs.Load() > 0 && c.w.Proto == 2 {
		// In the subscribed state RESP2 has only arrays to answer with.
		c.w.Array(2)
		c.w.BulkString("pong")
		if len(args) == 1 {
			c.w.BulkString("")
		} else {
			c.w.Bulk(args[1])
		}
		return
	}
	if len(args) == 1 {
		c.w.Simple("PONG")
	} else {
		c.w.Bulk(args[1])
	}
}

func echoCmd(c *Conn, args [][]byte) { c.w.Bulk(args[1]) }

const errWrongPass = "WRONGPASS invalid username-password pair or user is disabled."

func authCmd(c *Conn, args [][]byte) {
	if len(args) > 3 {
		c.w.Error(errSyntax)
		return
	}
	if len(args) == 2 && c.srv.acl.users.Default().User().NoPass() {
		c.w.Error("ERR AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?")
		return
	}
	var user []byte
	if len(args) == 3 {
		user = args[1]
	}
	if !c.authenticate(user, args[len(args)-1]) {
		c.authFailed(args[0], user)
		return
	}
	c.w.OK()
}

func helloCmd(c *Conn, args [][]byte) {
	proto := int(c.proto.Load())
	if len(args) >= 2 {
		v, ok := resp.ParseInt(args[1])
		if !ok {
			c.w.Error("ERR Protocol version is not an integer or out of range")
			return
		}
		if v < 2 || v > 3 {
			c.w.Error("NOPROTO unsupported protocol version")
			return
		}
		proto = int(v)
	}
	var user, pass, name []byte
	authGiven, nameGiven := false, false
	for i := 2; i < len(args); i++ {
		more := len(args) - i - 1
		switch {
		case equalFold(args[i], "auth") && more >= 2:
			user, pass, authGiven = args[i+1], args[i+2], true
			i += 2
		case equalFold(args[i], "setname") && more >= 1:
			name, nameGiven = args[i+1], true
			i++
		default:
			c.w.Error("ERR Syntax error in HELLO option '" + cString(args[i], 128) + "'")
			return
		}
	}
	if !authGiven && !c.authed {
		c.w.Error("NOAUTH HELLO must be called with the client already authenticated, otherwise the HELLO AUTH <user> <pass> option can be used to authenticate the client and select the RESP protocol version at the same time")
		return
	}
	if authGiven {
		if !c.authenticate(user, pass) {
			c.authFailed(args[0], user)
			return
		}
	}
	if nameGiven {
		if !validClientName(name) {
			c.w.Error(errClientName)
			return
		}
		c.infoMu.Lock()
		c.name = string(name)
		c.infoMu.Unlock()
	}
	c.setProto(proto)
	c.w.Map(7)
	c.w.BulkString("server")
	c.w.BulkString("redis")
	c.w.BulkString("version")
	c.w.BulkString(redisVersion)
	c.w.BulkString("proto")
	c.w.Int(int64(proto))
	c.w.BulkString("id")
	c.w.Int(c.id)
	c.w.BulkString("mode")
	c.w.BulkString("standalone")
	c.w.BulkString("role")
	c.w.BulkString("master")
	c.w.BulkString("modules")
	c.writeModules()
}

// writeModules writes the module list that MODULE LIST and HELLO report: RedisBloom's "bf",
// which clients look for before they use BF.* commands.
func (c *Conn) writeModules() {
	c.w.Array(1)
	c.w.Map(4)
	c.w.BulkString("name")
	c.w.BulkString("bf")
	c.w.BulkString("ver")
	c.w.Int(bfModuleVer)
	c.w.BulkString("path")
	c.w.BulkString("bloomd")
	c.w.BulkString("args")
	c.w.Array(0)
}

func moduleListCmd(c *Conn, args [][]byte) { c.writeModules() }

func quitCmd(c *Conn, args [][]byte) {
	c.w.OK()
	c.quit = true
}

func resetCmd(c *Conn, args [][]byte) {
	c.multi = nil
	c.closePubSub()
	c.setProto(2)
	c.infoMu.Lock()
	c.name = ""
	c.infoMu.Unlock()
	c.acct.Store(c.srv.acl.users.Default())
	c.setAuthed(c.srv.defaultAuthed())
	c.srv.stopMonitor(c)
	c.cflags.Store(0)
	c.w.Simple("RESET")
}

func selectCmd(c *Conn, args [][]byte) {
	n, ok := resp.ParseInt(args[1])
	switch {
	case !ok:
		c.w.Error(errNotInt)
	case n != 0 && c.srv.cluster != nil:
		c.w.Error("ERR SELECT is not allowed in cluster mode")
	case n != 0:
		c.w.Error("ERR DB index is out of range")
	default:
		c.w.OK()
	}
}

func timeCmd(c *Conn, args [][]byte) {
	now := time.Now()
	c.w.Array(2)
	c.w.BulkString(strconv.FormatInt(now.Unix(), 10))
	c.w.BulkString(strconv.Itoa(now.Nanosecond() / 1000))
}

const errClientName = "ERR Client names cannot contain spaces, newlines or special characters."

// validClientName allows what Redis allows in a client name or library name: printable ASCII
// without spaces.
func validClientName(b []byte) bool {
	for _, ch := range b {
		if ch < '!' || ch > '~' {
			return false
		}
	}
	return true
}

func clientIDCmd(c *Conn, args [][]byte) { c.w.Int(c.id) }

func clientSetNameCmd(c *Conn, args [][]byte) {
	if !validClientName(args[2]) {
		c.w.Error(errClientName)
		return
	}
	c.infoMu.Lock()
	c.name = string(args[2])
	c.infoMu.Unlock()
	c.w.OK()
}

func clientGetNameCmd(c *Conn, args [][]byte) {
	c.infoMu.Lock()
	name := c.name
	c.infoMu.Unlock()
	if name == "" {
		c.w.Null()
		return
	}
	c.w.BulkString(name)
}

func clientSetInfoCmd(c *Conn, args [][]byte) {
	attr, val := strings.ToLower(string(args[2])), args[3]
	if attr != "lib-name" && attr != "lib-ver" {
		c.w.Error("ERR Unrecognized option '" + cString(args[2], 128) + "'")
		return
	}
	if !validClientName(val) {
		c.w.Error("ERR " + attr + " cannot contain spaces, newlines or special characters.")
		return
	}
	c.infoMu.Lock()
	if attr == "lib-name" {
		c.libName = string(val)
	} else {
		c.libVer = string(val)
	}
	c.infoMu.Unlock()
	c.w.OK()
}

// info formats the connection as a line of CLIENT LIST; self is set for the connection that
// asks (see outputInfo).
func (c *Conn) info(now time.Time, self bool) string {
	c.infoMu.Lock()
	name, libName, libVer := c.name, c.libName, c.libVer
	c.infoMu.Unlock()
	cmd := "NULL"
	if cur := c.cur.Load(); cur != nil {
		cmd = cur.Name
	}
	idle := (now.UnixMilli() - c.lastActive.Load()) / 1000
	user := "default"
	if a := c.acct.Load(); a != nil {
		user = a.Name()
	}
	obl, oll, omem, totMem := c.outputInfo(self)
	return fmt.Sprintf("id=%d addr=%s laddr=%s name=%s age=%d idle=%d flags=%s db=0 obl=%d oll=%d omem=%d tot-mem=%d cmd=%s user=%s resp=%d lib-name=%s lib-ver=%s\n",
		c.id, c.addr, c.laddr, name, int64(now.Sub(c.created).Seconds()), max(idle, 0), c.flagString(), obl, oll, omem, totMem, cmd, user, c.proto.Load(), libName, libVer)
}

func (s *Server) clientList() []*Conn {
	s.connsMu.Lock()
	defer s.connsMu.Unlock()
	list := make([]*Conn, 0, len(s.conns))
	for c := range s.conns {
		list = append(list, c)
	}
	return list
}

// liveClients returns the connections not killed: a killed one may take an event-loop iteration
// to close, but CLIENT LIST and CLIENT KILL no longer see it (as Redis frees it before the next
// command).
func (s *Server) liveClients() []*Conn {
	return slices.DeleteFunc(s.clientList(), func(o *Conn) bool { return o.killed.Load() })
}

func clientListCmd(c *Conn, args [][]byte) {
	var ids map[int64]bool
	typ := ""
	for i := 2; i < len(args); i++ {
		switch {
		case equalFold(args[i], "type") && i+1 < len(args):
			typ = strings.ToLower(string(args[i+1]))
			if typ != "normal" && typ != "master" && typ != "replica" && typ != "slave" && typ != "pubsub" {
				c.w.Error("ERR Unknown client type '" + cString(args[i+1], 128) + "'")
				return
			}
			i++
		case equalFold(args[i], "id") && i+1 < len(args):
			if ids == nil {
				ids = map[int64]bool{}
			}
			for i++; i < len(args); i++ {
				id, ok := resp.ParseInt(args[i])
				if !ok || id < 1 {
					c.w.Error("ERR Invalid client ID")
					return
				}
				ids[id] = true
			}
		default:
			c.w.Error(errSyntax)
			return
		}
	}
	c.publish() // so that this connection's line shows this command
	var sb strings.Builder
	now := time.Now()
	for _, o := range c.srv.liveClients() {
		if (ids == nil || ids[o.id]) && (typ == "" || o.isType(typ)) {
			sb.WriteString(o.info(now, o == c))
		}
	}
	c.w.Verbatim(sb.String())
}

func clientInfoCmd(c *Conn, args [][]byte) {
	c.publish()
	c.w.Verbatim(c.info(time.Now(), true))
}

// clientKillCmd implements CLIENT KILL addr (the old form) and CLIENT KILL with filters
// (ID, ADDR, LADDR, USER, TYPE, SKIPME, MAXAGE).
func clientKillCmd(c *Conn, args [][]byte) {
	if len(args) == 3 {
		for _, o := range c.srv.liveClients() {
			if o.addr == string(args[2]) {
				o.kill()
				c.w.OK()
				return
			}
		}
		c.w.Error("ERR No such client")
		return
	}
	if len(args)%2 != 0 {
		c.w.Error(errSyntax)
		return
	}
	var id int64
	var addr, laddr, user, typ string
	skipMe, maxAge := true, int64(0)
	for i := 2; i < len(args); i += 2 {
		v := string(args[i+1])
		switch strings.ToLower(string(args[i])) {
		case "id":
			n, ok := resp.ParseInt(args[i+1])
			if !ok || n < 1 {
				c.w.Error("ERR client-id should be greater than 0")
				return
			}
			id = n
		case "addr":
			addr = v
		case "laddr":
			laddr = v
		case "user":
			user = v
		case "type":
			typ = strings.ToLower(v)
			if typ != "normal" && typ != "master" && typ != "replica" && typ != "slave" && typ != "pubsub" {
				c.w.Error("ERR Unknown client type '" + v + "'")
				return
			}
		case "skipme":
			switch strings.ToLower(v) {
			case "yes":
				skipMe = true
			case "no":
				skipMe = false
			default:
				c.w.Error(errSyntax)
				return
			}
		case "maxage":
			n, ok := resp.ParseInt(args[i+1])
			if !ok || n < 0 {
				c.w.Error(errSyntax)
				return
			}
			maxAge = n
		default:
			c.w.Error(errSyntax)
			return
		}
	}
	killed := 0
	switch typ {
	case "master":
		c.w.Int(int64(c.srv.repl.KillPrimaryLink()))
		return
	case "replica", "slave":
		c.w.Int(int64(c.srv.repl.KillReplicas()))
		return
	}
	now := time.Now()
	for _, o := range c.srv.liveClients() {
		switch {
		case id != 0 && o.id != id, addr != "" && o.addr != addr, laddr != "" && o.laddr != laddr,
			user != "" && (o.acct.Load() == nil || o.acct.Load().Name() != user), typ != "" && !o.isType(typ), skipMe && o == c,
			maxAge != 0 && int64(now.Sub(o.created).Seconds()) < maxAge:
			continue
		}
		if o == c {
			c.quit = true // reply first, then close, as Redis does when a client kills itself
		} else {
			o.kill()
		}
		killed++
	}
	c.w.Int(int64(killed))
}

func helpCmd(lines ...string) Handler {
	return func(c *Conn, args [][]byte) {
		c.w.Array(len(lines))
		for _, l := range lines {
			c.w.Simple(l)
		}
	}
}
