package server

// registerCommands fills the command table: every command bloomd knows, with the arity, flags,
// key positions and documentation that COMMAND reports.
func registerCommands(mx *Mux) {
	const (
		w   = FlagWrite
		r   = FlagReadonly
		oom = FlagDenyOOM
		f   = FlagFast
		mod = FlagModule
		ex  = FlagExclusive
	)
	cmd := func(name string, arity int, flags Flags, first, last, step int, since, group, summary string, h Handler) *Command {
		c := &Command{Name: name, Arity: arity, Flags: flags, FirstKey: first, LastKey: last, Step: step,
			Since: since, Group: group, Summary: summary, Handler: h}
		if h == nil || name == "command" {
			c.Subcommands = map[string]*Command{} // a container, filled below
		}
		mx.Handle(c)
		return c
	}
	bf := func(name string, arity, maxArgs int, flags Flags, summary string, h Handler) {
		c := cmd(name, arity, flags|mod, 1, 1, 1, "1.0.0", "bf", summary, h)
		c.MaxArgs = maxArgs
	}

	// RedisBloom's commands, as registered by the module: arity checked by each handler.
	bf("bf.reserve", -4, 7, w|oom, "Creates a new Bloom Filter", bfReserveCmd)
	bf("bf.add", 3, 3, w|oom, "Adds an item to a Bloom Filter", bfAddCmd)
	bf("bf.madd", -3, 0, w|oom, "Adds one or more items to a Bloom Filter. A filter will be created if it does not exist", bfMAddCmd)
	bf("bf.insert", -4, 0, w|oom, "Adds one or more items to a Bloom Filter. A filter will be created if it does not exist", bfInsertCmd)
	bf("bf.exists", 3, 3, r|f, "Checks whether an item exists in a Bloom Filter", bfExistsCmd)
	bf("bf.mexists", -3, 0, r|f, "Checks whether one or more items exist in a Bloom Filter", bfMExistsCmd)
	bf("bf.info", -2, 3, r|f, "Returns information about a Bloom Filter", bfInfoCmd)
	bf("bf.card", 2, 2, r|f, "Returns the cardinality of a Bloom filter", bfCardCmd)
	bf("bf.debug", 2, 2, r|f, "Lists the sub-filters of a Bloom filter (undocumented)", bfDebugCmd)
	bf("bf.scandump", 3, 3, r|f, "Begins an incremental save of the bloom filter", bfScanDumpCmd)
	bf("bf.loadchunk", 4, 4, w|oom, "Restores a filter previously saved using SCANDUMP", bfLoadChunkCmd)

	// RedisBloom's cuckoo filter commands (cmd_cf.go), flags as the module registers them.
	cf := func(name string, arity, maxArgs int, flags Flags, summary string, h Handler) {
		c := cmd(name, arity, flags|mod, 1, 1, 1, "1.0.0", "cf", summary, h)
		c.MaxArgs = maxArgs
	}
	cf("cf.reserve", -3, 0, w|oom, "Creates a new Cuckoo Filter", cfReserveCmd)
	cf("cf.add", 3, 3, w|oom, "Adds an item to a Cuckoo Filter", cfAddCmd)
	cf("cf.addnx", 3, 3, w|oom, "Adds an item to a Cuckoo Filter if the item did not exist previously.", cfAddCmd)
	cf("cf.insert", -4, 0, w|oom, "Adds one or more items to a Cuckoo Filter. A filter will be created if it does not exist", cfInsertCmd)
	cf("cf.insertnx", -4, 0, w|oom, "Adds one or more items to a Cuckoo Filter if the items did not exist previously. A filter will be created if it does not exist", cfInsertCmd)
	cf("cf.exists", 3, 3, r|f, "Checks whether one or more items exist in a Cuckoo Filter", cfExistsCmd)
	cf("cf.mexists", -3, 0, r|f, "Checks whether one or more items exist in a Cuckoo Filter", cfMExistsCmd)
	cf("cf.count", 3, 3, r|f, "Return the number of times an item might be in a Cuckoo Filter", cfCountCmd)
	cf("cf.del", 3, 3, w|f, "Deletes an item from a Cuckoo Filter", cfDelCmd)
	cf("cf.compact", 2, 2, r|f|FlagChangesData, "Compacts a Cuckoo Filter (journaled, though RedisBloom registers it read-only)", cfCompactCmd)
	cf("cf.scandump", 3, 3, r|f, "Begins an incremental save of the bloom filter", cfScanDumpCmd)
	cf("cf.loadchunk", 4, 4, w|oom, "Restores a filter previously saved using SCANDUMP", cfLoadChunkCmd)
	cf("cf.info", 2, 2, r|f, "Returns information about a Cuckoo Filter", cfInfoCmd)
	cf("cf.debug", 2, 2, r|f, "Shows a Cuckoo Filter's parameters and counts (undocumented)", cfDebugCmd)

	// Keys and strings.
	cmd("dbsize", 1, r|f, 0, 0, 0, "1.0.0", "server", "Returns the number of keys in the database.", dbsizeCmd)
	cmd("exists", -2, r|f, 1, -1, 1, "1.0.0", "generic", "Determines whether one or more keys exist.", existsCmd)
	cmd("del", -2, w|ex, 1, -1, 1, "1.0.0", "generic", "Deletes one or more keys.", delCmd)
	cmd("unlink", -2, w|ex|f, 1, -1, 1, "4.0.0", "generic", "Asynchronously deletes one or more keys.", delCmd)
	cmd("type", 2, r|f, 1, 1, 1, "1.0.0", "generic", "Determines the type of value stored at a key.", typeCmd)
	cmd("keys", 2, r, 0, 0, 0, "1.0.0", "generic", "Returns all key names that match a pattern.", keysCmd)
	cmd("scan", -2, r, 0, 0, 0, "2.8.0", "generic", "Iterates over the key names in the database.", scanCmd)
	cmd("rename", 3, w|ex, 1, 2, 1, "1.0.0", "generic", "Renames a key and overwrites the destination.", renameCmd)
	cmd("renamenx", 3, w|ex|f, 1, 2, 1, "1.0.0", "generic", "Renames a key only when the target key name doesn't exist.", renameCmd)
	cmd("copy", -3, w|oom|ex, 1, 2, 1, "6.2.0", "generic", "Copy a key", copyCmd)
	for _, e := range []struct{ name, summary string }{
		{"expire", "Sets the expiration time of a key in seconds."},
		{"pexpire", "Sets the expiration time of a key in milliseconds."},
		{"expireat", "Sets the expiration time of a key to a Unix timestamp."},
		{"pexpireat", "Sets the expiration time of a key to a Unix milliseconds timestamp."},
	} {
		cmd(e.name, -3, w|ex|f, 1, 1, 1, "1.0.0", "generic", e.summary, expireCmd)
	}
	for _, e := range []struct{ name, since, summary string }{
		{"ttl", "1.0.0", "Returns the expiration time in seconds of a key."},
		{"pttl", "2.6.0", "Returns the expiration time in milliseconds of a key."},
		{"expiretime", "7.0.0", "Returns the expiration time of a key as a Unix timestamp."},
		{"pexpiretime", "7.0.0", "Returns the expiration time of a key as a Unix milliseconds timestamp."},
	} {
		cmd(e.name, 2, r|f, 1, 1, 1, e.since, "generic", e.summary, ttlCmd)
	}
	cmd("persist", 2, w|f, 1, 1, 1, "2.2.0", "generic", "Removes the expiration time of a key.", persistCmd)
	cmd("flushdb", -1, w|ex, 0, 0, 0, "1.0.0", "server", "Removes all keys from the current database.", flushCmd).MaxArgs = 2
	cmd("flushall", -1, w|ex, 0, 0, 0, "1.0.0", "server", "Removes all keys from all databases.", flushCmd).MaxArgs = 2
	cmd("dump", 2, r, 1, 1, 1, "2.6.0", "generic", "Return a serialized version of the value stored at the specified key.", dumpCmd)
	cmd("restore", -4, w|oom, 1, 1, 1, "2.6.0", "generic", "Create a key using the provided serialized value, previously obtained using DUMP.", restoreCmd)
	cmd("migrate", -6, w|FlagMovableKeys, 3, 3, 1, "2.6.0", "generic", "Atomically transfer a key from a Redis instance to another one.", migrateCmd)
	cmd("restore-asking", -4, w|oom|FlagAsking, 1, 1, 1, "3.0.0", "server", "An internal command for migrating keys in a cluster", restoreCmd)
	cmd("get", 2, r|f, 1, 1, 1, "1.0.0", "string", "Returns the string value of a key.", getCmd)
	cmd("set", -3, w|oom|ex, 1, 1, 1, "1.0.0", "string", "Sets the string value of a key, ignoring its type. The key is created if it doesn't exist.", setCmd)

	// Strings as values and as bitmaps (cmd_string.go, cmd_bitmap.go), hashes (cmd_hash.go):
	// flags, keys and summaries as Redis 7.0.15's COMMAND INFO and COMMAND DOCS give them.
	// MSET, BITOP and HDEL replace or delete keys, so they run alone (ex).
	cmd("setnx", 3, w|oom|f, 1, 1, 1, "1.0.0", "string", "Set the value of a key, only if the key does not exist", setnxCmd)
	cmd("mget", -2, r|f, 1, -1, 1, "1.0.0", "string", "Get the values of all the given keys", mgetCmd)
	cmd("mset", -3, w|oom|ex, 1, -1, 2, "1.0.1", "string", "Set multiple keys to multiple values", msetCmd)
	cmd("msetnx", -3, w|oom|ex, 1, -1, 2, "1.0.1", "string", "Set multiple keys to multiple values, only if none of the keys exist", msetnxCmd)
	cmd("incr", 2, w|oom|f|ex, 1, 1, 1, "1.0.0", "string", "Increment the integer value of a key by one", incrCmd)
	cmd("decr", 2, w|oom|f|ex, 1, 1, 1, "1.0.0", "string", "Decrement the integer value of a key by one", incrCmd)
	cmd("incrby", 3, w|oom|f|ex, 1, 1, 1, "1.0.0", "string", "Increment the integer value of a key by the given amount", incrCmd)
	cmd("decrby", 3, w|oom|f|ex, 1, 1, 1, "1.0.0", "string", "Decrement the integer value of a key by the given number", incrCmd)
	cmd("getrange", 4, r, 1, 1, 1, "2.4.0", "string", "Get a substring of the string stored at a key", getrangeCmd)
	cmd("setrange", 4, w|oom, 1, 1, 1, "2.2.0", "string", "Overwrite part of a string at key starting at the specified offset", setrangeCmd)
	cmd("append", 3, w|oom|f, 1, 1, 1, "2.0.0", "string", "Append a value to a key", appendCmd)
	cmd("setbit", 4, w|oom, 1, 1, 1, "2.2.0", "bitmap", "Sets or clears the bit at offset in the string value stored at key", setbitCmd)
	cmd("getbit", 3, r|f, 1, 1, 1, "2.2.0", "bitmap", "Returns the bit value at offset in the string value stored at key", getbitCmd)
	cmd("bitcount", -2, r, 1, 1, 1, "2.6.0", "bitmap", "Count set bits in a string", bitcountCmd)
	cmd("bitpos", -3, r, 1, 1, 1, "2.8.7", "bitmap", "Find first bit set or clear in a string", bitposCmd)
	cmd("bitop", -4, w|oom|ex, 2, -1, 1, "2.6.0", "bitmap", "Perform bitwise operations between strings", bitopCmd)
	cmd("bitfield", -2, w|oom, 1, 1, 1, "3.2.0", "bitmap", "Perform arbitrary bitfield integer operations on strings", bitfieldCmd)
	cmd("bitfield_ro", -2, r|f, 1, 1, 1, "6.0.0", "bitmap", "Perform arbitrary bitfield integer operations on strings. Read-only variant of BITFIELD", bitfieldCmd)
	cmd("hset", -4, w|oom|f, 1, 1, 1, "2.0.0", "hash", "Set the string value of a hash field", hsetCmd)
	cmd("hmset", -4, w|oom|f, 1, 1, 1, "2.0.0", "hash", "Set multiple hash fields to multiple values", hsetCmd)
	cmd("hsetnx", 4, w|oom|f, 1, 1, 1, "2.0.0", "hash", "Set the value of a hash field, only if the field does not exist", hsetnxCmd)
	cmd("hget", 3, r|f, 1, 1, 1, "2.0.0", "hash", "Get the value of a hash field", hgetCmd)
	cmd("hmget", -3, r|f, 1, 1, 1, "2.0.0", "hash", "Get the values of all the given hash fields", hmgetCmd)
	cmd("hgetall", 2, r, 1, 1, 1, "2.0.0", "hash", "Get all the fields and values in a hash", hgetallCmd)
	cmd("hkeys", 2, r, 1, 1, 1, "2.0.0", "hash", "Get all the fields in a hash", hgetallCmd)
	cmd("hvals", 2, r, 1, 1, 1, "2.0.0", "hash", "Get all the values in a hash", hgetallCmd)
	cmd("hdel", -3, w|f|ex, 1, 1, 1, "2.0.0", "hash", "Delete one or more hash fields", hdelCmd)
	cmd("hexists", 3, r|f, 1, 1, 1, "2.0.0", "hash", "Determine if a hash field exists", hexistsCmd)
	cmd("hlen", 2, r|f, 1, 1, 1, "2.0.0", "hash", "Get the number of fields in a hash", hexistsCmd)
	cmd("hstrlen", 3, r|f, 1, 1, 1, "3.2.0", "hash", "Get the length of the value of a hash field", hexistsCmd)
	cmd("hincrby", 4, w|oom|f, 1, 1, 1, "2.0.0", "hash", "Increment the integer value of a hash field by the given number", hincrbyCmd)
	cmd("hincrbyfloat", 4, w|oom|f, 1, 1, 1, "2.6.0", "hash", "Increment the float value of a hash field by the given amount", hincrbyfloatCmd)
	cmd("hrandfield", -2, r, 1, 1, 1, "6.2.0", "hash", "Get one or multiple random fields from a hash", hrandfieldCmd)
	cmd("hscan", -3, r, 1, 1, 1, "2.8.0", "hash", "Incrementally iterate hash fields and associated values", hscanCmd)

	// Connections.
	noauth := FlagNoAuth | FlagLoading | FlagStale | f
	cmd("ping", -1, f, 0, 0, 0, "1.0.0", "connection", "Returns the server's liveliness response.", pingCmd).MaxArgs = 2
	cmd("echo", 2, f, 0, 0, 0, "1.0.0", "connection", "Returns the given string.", echoCmd)
	cmd("auth", -2, noauth, 0, 0, 0, "1.0.0", "connection", "Authenticates the connection.", authCmd)
	cmd("hello", -1, noauth, 0, 0, 0, "6.0.0", "connection", "Handshakes with the Redis server.", helloCmd)
	cmd("quit", -1, noauth|FlagNoMulti, 0, 0, 0, "1.0.0", "connection", "Closes the connection.", quitCmd)
	cmd("reset", 1, noauth|FlagNoMulti, 0, 0, 0, "6.2.0", "connection", "Resets the connection.", resetCmd)
	cmd("select", 2, f, 0, 0, 0, "1.0.0", "connection", "Changes the selected database.", selectCmd)
	client := cmd("client", -2, 0, 0, 0, 0, "2.4.0", "connection", "A container for client connection commands.", nil)
	sub := func(parent *Command, name string, arity int, flags Flags, summary string, h Handler) *Command {
		c := &Command{Name: parent.Name + "|" + name, Arity: arity, Flags: flags, Since: parent.Since, Group: parent.Group, Summary: summary, Handler: h}
		parent.Subcommands[name] = c
		return c
	}
	sub(client, "id", 2, f, "Returns the unique client ID of the connection.", clientIDCmd)
	sub(client, "setname", 3, f, "Sets the connection name.", clientSetNameCmd)
	sub(client, "getname", 2, f, "Returns the name of the connection.", clientGetNameCmd)
	sub(client, "setinfo", 4, f, "Sets information specific to the client or connection.", clientSetInfoCmd)
	sub(client, "list", -2, FlagAdmin, "Lists open connections.", clientListCmd)
	sub(client, "info", 2, f, "Returns information about the connection.", clientInfoCmd)
	sub(client, "kill", -3, FlagAdmin, "Terminates open connections.", clientKillCmd)
	sub(client, "help", 2, f, "Returns helpful text about the different subcommands.", helpCmd(
		"CLIENT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
		"ID", "    Return the ID of the current connection.",
		"SETNAME <name>", "    Assign the name <name> to the current connection.",
		"GETNAME", "    Return the name of the current connection.",
		"SETINFO <LIB-NAME|LIB-VER> <value>", "    Set client library name or version.",
		"LIST [TYPE <type>] [ID <id> [<id> ...]]", "    Return information about client connections.",
		"INFO", "    Return information about the current client connection.",
		"KILL <ip:port>", "    Kill connection made from <ip:port>.",
		"KILL <option> <value> [<option> <value> [...]]", "    Kill connections. Options: ID, ADDR, LADDR, USER, TYPE, SKIPME, MAXAGE.",
		"HELP", "    Print this help."))

	// Transactions.
	cmd("multi", 1, f|FlagNoMulti, 0, 0, 0, "1.2.0", "transactions", "Starts a transaction.", multiCmd)
	cmd("exec", 1, FlagNoMulti|ex|FlagNoSlowlog, 0, 0, 0, "1.2.0", "transactions", "Executes all commands in a transaction.", execCmd)
	cmd("discard", 1, f|FlagNoMulti, 0, 0, 0, "2.0.0", "transactions", "Discards a transaction.", discardCmd)

	// Server.
	cmd("info", -1, FlagLoading|FlagStale, 0, 0, 0, "1.0.0", "server", "Returns information and statistics about the server.", infoCmd)
	cmd("time", 1, FlagLoading|FlagStale|f, 0, 0, 0, "2.6.0", "server", "Returns the server time.", timeCmd)
	config := cmd("config", -2, 0, 0, 0, 0, "2.0.0", "server", "A container for server configuration commands.", nil)
	sub(config, "get", -3, FlagAdmin|FlagLoading|FlagStale, "Returns the effective values of configuration parameters.", configGetCmd)
	sub(config, "set", -4, FlagAdmin|FlagLoading|FlagStale, "Sets configuration parameters in-flight.", configSetCmd)
	sub(config, "rewrite", 2, FlagAdmin|FlagLoading|FlagStale, "Persists the effective configuration to file.", configRewriteCmd)
	sub(config, "resetstat", 2, FlagAdmin|FlagLoading|FlagStale, "Resets the server's statistics.", configResetStatCmd)
	sub(config, "help", 2, FlagLoading|FlagStale, "Returns helpful text about the different subcommands.", helpCmd(
		"CONFIG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
		"GET <pattern>", "    Return parameters matching the glob-like <pattern> and their values.",
		"SET <directive> <value>", "    Set the configuration <directive> to <value>.",
		"RESETSTAT", "    Reset statistics reported by the INFO command.",
		"REWRITE", "    Rewrite the configuration file.",
		"HELP", "    Print this help."))
	command := cmd("command", -1, FlagLoading|FlagStale, 0, 0, 0, "2.8.13", "server", "Returns detailed information about all commands.", commandCmd)
	sub(command, "count", 2, FlagLoading|FlagStale, "Returns a count of commands.", commandCountCmd)
	sub(command, "docs", -2, FlagLoading|FlagStale, "Returns documentary information about one, multiple or all commands.", commandDocsCmd)
	sub(command, "info", -2, FlagLoading|FlagStale, "Returns information about one, multiple or all commands.", commandInfoCmd)
	sub(command, "list", 2, FlagLoading|FlagStale, "Returns a list of command names.", commandListCmd)
	sub(command, "help", 2, FlagLoading|FlagStale, "Returns helpful text about the different subcommands.", helpCmd(
		"COMMAND <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
		"(no subcommand)", "    Return details about all commands.",
		"COUNT", "    Return the total number of commands in this server.",
		"LIST", "    Return a list of all commands in this server.",
		"INFO [<command-name> ...]", "    Return details about multiple commands.",
		"DOCS [<command-name> ...]", "    Return documentation details about multiple commands.",
		"HELP", "    Print this help."))
	cmd("save", 1, FlagAdmin|FlagNoMulti, 0, 0, 0, "1.0.0", "server", "Synchronously saves the database(s) to disk.", saveCmd)
	cmd("bgsave", -1, FlagAdmin, 0, 0, 0, "1.0.0", "server", "Asynchronously saves the database(s) to disk.", bgsaveCmd).MaxArgs = 2
	cmd("bgrewriteaof", 1, FlagAdmin, 0, 0, 0, "1.0.0", "server", "Asynchronously rewrites the append-only file to disk.", bgrewriteaofCmd)
	cmd("lastsave", 1, FlagLoading|FlagStale|f, 0, 0, 0, "1.0.0", "server", "Returns the Unix timestamp of the last successful save to disk.", lastsaveCmd)
	cmd("shutdown", -1, FlagAdmin|FlagNoMulti|FlagLoading|FlagStale, 0, 0, 0, "1.0.0", "server", "Synchronously saves the database(s) to disk and shuts down the Redis server.", shutdownCmd).MaxArgs = 5
	memory := cmd("memory", -2, 0, 0, 0, 0, "4.0.0", "server", "A container for memory diagnostics commands.", nil)
	sub(memory, "usage", -3, r, "Estimates the memory usage of a key.", memoryUsageCmd).FirstKey = 2
	module := cmd("module", -2, FlagAdmin, 0, 0, 0, "4.0.0", "server", "A container for module commands.", nil)
	sub(module, "list", 2, FlagAdmin, "Returns all loaded modules.", moduleListCmd)
}
