package acl

import (
	"encoding/hex"
	"math"
	"slices"
	"strings"
)

// Flags returns the user's flags as ACL GETUSER lists them ("on", "nopass", ...).
func (u *User) Flags() []string {
	var out []string
	for i, n := range userFlagNames {
		if u.flags&(1<<i) != 0 {
			out = append(out, n)
		}
	}
	return out
}

// PasswordHashes returns the user's password hashes in lower-case hex, oldest first.
func (u *User) PasswordHashes() []string {
	out := make([]string, len(u.pass))
	for i, h := range u.pass {
		out[i] = hex.EncodeToString(h[:])
	}
	return out
}

func (k keyPattern) String() string {
	switch k.perm {
	case permRead:
		return "%R~" + k.pat
	case permWrite:
		return "%W~" + k.pat
	}
	return "~" + k.pat
}

// KeyRules returns the user's key patterns as ACL GETUSER shows them: "~*", or the patterns
// separated by spaces ("~a %R~b"), or "" for none.
func (u *User) KeyRules() string {
	if u.allKeys {
		return "~*"
	}
	parts := make([]string, len(u.keys))
	for i, k := range u.keys {
		parts[i] = k.String()
	}
	return strings.Join(parts, " ")
}

// ChannelRules returns the user's channel patterns as ACL GETUSER shows them: "&*", or the
// patterns separated by spaces ("&a &b"), or "" for none.
func (u *User) ChannelRules() string {
	if u.allChannels {
		return "&*"
	}
	parts := make([]string, len(u.channels))
	for i, c := range u.channels {
		parts[i] = "&" + c
	}
	return strings.Join(parts, " ")
}

// Describe returns the user's rules as ACL LIST and the aclfile write them after "user NAME ":
// flags, password hashes, keys, channels, then the command rules.
func (u *User) Describe() string {
	var sb strings.Builder
	for _, f := range u.Flags() {
		sb.WriteString(f + " ")
	}
	for _, h := range u.PasswordHashes() {
		sb.WriteString("#" + h + " ")
	}
	if u.allKeys {
		sb.WriteString("~* ")
	} else {
		for _, k := range u.keys {
			sb.WriteString(k.String() + " ")
		}
	}
	if u.allChannels {
		sb.WriteString("&* ")
	} else {
		sb.WriteString("resetchannels ")
		for _, c := range u.channels {
			sb.WriteString("&" + c + " ")
		}
	}
	sb.WriteString(u.CommandRules())
	return sb.String()
}

// CommandRules returns the user's command permissions in Redis 7.0's canonical form: "+@all"
// or "-@all", then the categories that best describe the rest (chosen greedily, in category
// order, as Redis's ACLDescribeSelectorCommandRules does), then single commands and first
// arguments to make the bitmap exact.
func (u *User) CommandRules() string {
	t := u.t
	var sb strings.Builder
	additive := !u.bit(t.futureID())
	fake := t.newUser("")
	if additive {
		sb.WriteString("-@all ")
	} else {
		sb.WriteString("+@all ")
		fake.setAll(true)
	}
	temp := slices.Clone(u.cmds)
	tempUser := &User{t: t, cmds: temp}
	var applied [numCategories]bool
	for {
		best, minDiff, maxSame := -1, math.MaxInt, 0
		for j := range numCategories {
			if applied[j] {
				continue
			}
			on, off := t.countCat(temp, j)
			diff, same := on, off
			if additive {
				diff, same = off, on
			}
			if same > diff && (diff < minDiff || diff == minDiff && same > maxSame) {
				best, minDiff, maxSame = j, diff, same
			}
		}
		if best < 0 {
			break
		}
		sign, inv := "-@", true
		if additive {
			sign, inv = "+@", false
		}
		fake.setCategory(1<<best, additive)
		tempUser.setCategory(1<<best, inv)
		sb.WriteString(sign + categoryNames[best] + " ")
		applied[best] = true
	}
	var single func([]*Command)
	single = func(cs []*Command) {
		for _, c := range cs {
			ub, fb := u.bit(c.ID), fake.bit(c.ID)
			if ub != fb {
				if ub {
					sb.WriteString("+")
				} else {
					sb.WriteString("-")
				}
				sb.WriteString(c.Name + " ")
				fake.changePerm(c, ub)
			}
			single(c.Subs)
			if !ub {
				for _, a := range u.firstArgs[c.ID] {
					sb.WriteString("+" + c.Name + "|" + a + " ")
				}
			}
		}
	}
	single(t.top)
	return strings.TrimSuffix(sb.String(), " ")
}
