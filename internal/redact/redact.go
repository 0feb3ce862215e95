package redact

import (
	"strings"
)

// Redacted is what a secret argument is shown as, Redis's shared.redacted.
const Redacted = "(redacted)"

var redacted = []byte(Redacted)

// A Rule returns the indexes in args (args[0] is the command's name, args[1] a container's
// subcommand) of the arguments that are secrets. It may return nil.
type Rule func(args [][]byte) []int

var rules = map[string]Rule{
	"auth":        Auth,
	"hello":       Hello,
	"acl|setuser": ACLSetUser,
	"config|set":  ConfigSet,
	"migrate":     Migrate,
}

// For returns the rule of the command the command table names name ("auth", "acl|setuser"),
// or nil if its arguments hold no secret.
func For(name string) Rule { return rules[name] }

// Args returns args with the arguments rule names shown as "(redacted)": args itself if rule is
// nil or names none, otherwise a new slice that shares the other arguments.
func Args(rule Rule, args [][]byte) [][]byte {
	if rule == nil {
		return args
	}
	idx := rule(args)
	if len(idx) == 0 {
		return args
	}
	out := make([][]byte, len(args))
	copy(out, args)
	for _, i := range idx {
		if i > 0 && i < len(out) {
			out[i] = redacted
		}
	}
	return out
}

// sensitive are the settings whose values are secrets: Redis 7.0's SENSITIVE_CONFIG ones.
var sensitive = []string{"masterauth", "masteruser", "requirepass"}

// Sensitive reports whether the setting named name (any case) holds a secret.
func Sensitive(name string) bool {
	for _, s := range sensitive {
		if strings.EqualFold(name, s) {
			return true
		}
	}
	return false
}

func between(from, to int) []int {
	var out []int
	for i := from; i < to; i++ {
		out = append(out, i)
	}
	return out
}

// Auth is AUTH's rule: "AUTH password" and "AUTH user password" hide every argument, as Redis
// does; so does a malformed AUTH with more, which Redis shows in clear.
func Auth(args [][]byte) []int { return between(1, len(args)) }

// Hello is HELLO's rule: the user name and password after AUTH. Where Redis stops at an error
// before AUTH (a bad protocol version, an unknown option) and shows them, this goes on, and
// hides what follows AUTH even when there is only one word.
func Hello(args [][]byte) []int {
	var out []int
	for i := 1; i < len(args); i++ {
		switch {
		case strings.EqualFold(string(args[i]), "auth"):
			n := min(2, len(args)-1-i)
			out = append(out, between(i+1, i+1+n)...)
			i += n
		case strings.EqualFold(string(args[i]), "setname") && i+1 < len(args):
			i++
		}
	}
	return out
}

// ACLSetUser is ACL SETUSER's rule: the user name and every rule, as Redis hides them all.
func ACLSetUser(args [][]byte) []int { return between(2, len(args)) }

// ConfigSet is CONFIG SET's rule: the value after each sensitive setting's name.
func ConfigSet(args [][]byte) []int {
	var out []int
	for i := 2; i+1 < len(args); i += 2 {
		if Sensitive(string(args[i])) {
			out = append(out, i+1)
		}
	}
	return out
}

// Migrate is MIGRATE's rule ("MIGRATE host port key|"" db timeout [COPY] [REPLACE] [AUTH
// password | AUTH2 username password] [KEYS key ...]"): the password after AUTH, the user name
// and password after AUTH2. The options end at KEYS, whose arguments are keys.
func Migrate(args [][]byte) []int {
	var out []int
	for j := 6; j < len(args); j++ {
		switch a := string(args[j]); {
		case strings.EqualFold(a, "auth"):
			n := min(1, len(args)-1-j)
			out = append(out, between(j+1, j+1+n)...)
			j += n
		case strings.EqualFold(a, "auth2"):
			n := min(2, len(args)-1-j)
			out = append(out, between(j+1, j+1+n)...)
			j += n
		case strings.EqualFold(a, "keys"):
			return out
		}
	}
	return out
}

// CommandLine returns bloomd's command line (os.Args: the program, an optional config file,
// then --name value... settings) with the secrets shown as "(redacted)": the values of the
// sensitive settings (--requirepass, --masterauth, --masteruser, in the "--name value" and
// "--name=value" forms), and in --user's rules each password and password hash (the words that
// begin with >, <, # or !).
func CommandLine(args []string) []string {
	out := make([]string, len(args))
	copy(out, args)
	kind := "" // of the setting whose values follow: "secret", "user" or ""
	for i := 1; i < len(out); i++ {
		a := out[i]
		if strings.HasPrefix(a, "--") {
			name, value, hasValue := strings.Cut(a[2:], "=")
			kind = ""
			switch {
			case Sensitive(name):
				kind = "secret"
			case strings.EqualFold(name, "user"):
				kind = "user"
			}
			if hasValue {
				out[i] = "--" + name + "=" + hideValue(kind, value)
				kind = ""
			}
			continue
		}
		out[i] = hideValue(kind, a)
	}
	return out
}

func hideValue(kind, v string) string {
	switch kind {
	case "secret":
		return Redacted
	case "user":
		return UserRules(v)
	}
	return v
}

// UserRules returns an ACL user definition or list of rules ("alice on >secret ~keys:*") with
// each password and password hash rule (>pass, <pass, #hash, !hash) shown as "(redacted)".
func UserRules(v string) string {
	words := strings.Split(v, " ")
	for i, w := range words {
		if SecretRule(w) {
			words[i] = Redacted
		}
	}
	return strings.Join(words, " ")
}

// SecretRule reports whether an ACL rule holds a password or a password hash: >pass, <pass,
// #hash, !hash.
func SecretRule(rule string) bool {
	return rule != "" && strings.IndexByte("><#!", rule[0]) >= 0
}
