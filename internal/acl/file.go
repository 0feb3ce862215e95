package acl

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// MaxFileSize is the largest aclfile LoadFile reads.
const MaxFileSize = 64 << 20

// ParseFile parses an aclfile's contents as Redis 7.0's ACL LOAD does: one "user NAME RULES..."
// line per user, words separated by single spaces, blank lines allowed, nothing else (not even
// comments, which ACL SAVE would lose). It returns the users, or every problem found in one
// line of text, in Redis's words, naming the file as filename and ending with Redis's "no
// change" warning. The default user, if the file does not define it, is as NewDefaultUser makes
// it.
func (t *Table) ParseFile(data []byte, filename string) (map[string]*User, error) {
	var errs strings.Builder
	users := map[string]*User{}
	for i, line := range strings.Split(string(data), "\n") {
		n := i + 1
		line = strings.Trim(line, " \t\r\n")
		if line == "" {
			continue
		}
		argv := strings.Split(line, " ")
		if argv[0] != "user" || len(argv) < 2 {
			fmt.Fprintf(&errs, "%s:%d should start with user keyword followed by the username. ", filename, n)
			continue
		}
		name := argv[1]
		if hasSpaces(name) {
			fmt.Fprintf(&errs, "'%s:%d: username '%s' contains invalid characters. ", filename, n, name)
			continue
		}
		if _, dup := users[name]; dup {
			fmt.Fprintf(&errs, "WARNING: Duplicate user '%s' found on line %d. ", name, n)
			continue
		}
		u := t.newUser(name)
		users[name] = u
		rules, err := mergeSelectors(argv[2:])
		if err != nil {
			fmt.Fprintf(&errs, "%s:%d: Unmatched parenthesis in selector definition.", filename, n)
			continue
		}
		reported := false
		for _, r := range rules {
			r = strings.Trim(r, "\t\r\n")
			err := u.apply(r)
			if err == nil {
				continue
			}
			re := err.(*RuleError)
			if re.Unknown {
				fmt.Fprintf(&errs, "%s:%d: Error in applying operation '%s': %s. ", filename, n, r, re.Reason)
			} else if !reported {
				fmt.Fprintf(&errs, "%s:%d: %s. ", filename, n, re.Reason)
				reported = true
			}
		}
		u.all = u.allCommands && u.allKeys && u.allChannels
	}
	if errs.Len() > 0 {
		errs.WriteString("WARNING: ACL errors detected, no change to the previously active ACL rules was performed")
		return nil, &FileError{errs.String()}
	}
	if users["default"] == nil {
		users["default"] = t.NewDefaultUser()
	}
	return users, nil
}

// A FileError is an aclfile that cannot be loaded; its text is Redis's ACL LOAD reply.
type FileError struct{ Msg string }

func (e *FileError) Error() string { return e.Msg }

// LoadFile reads and parses the aclfile at path and, if it is valid, replaces every user with
// its users (ACL LOAD). A file that cannot be read or parsed changes nothing.
func (us *Users) LoadFile(path string) error {
	data, err := readFile(path)
	if err != nil {
		return &FileError{fmt.Sprintf("Error loading ACLs, opening file '%s': %s", path, errText(err))}
	}
	users, err := us.t.ParseFile(data, path)
	if err != nil {
		return err
	}
	us.Replace(users)
	return nil
}

func readFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var buf bytes.Buffer
	n, err := buf.ReadFrom(io.LimitReader(f, MaxFileSize+1))
	if err != nil {
		return nil, err
	}
	if n > MaxFileSize {
		return nil, fmt.Errorf("file larger than %d bytes", MaxFileSize)
	}
	return buf.Bytes(), nil
}

// errText returns the system's message for err, as C's strerror words it ("No such file or
// directory").
func errText(err error) string {
	if pe, ok := err.(*os.PathError); ok {
		err = pe.Err
	}
	s := err.Error()
	if s != "" {
		s = strings.ToUpper(s[:1]) + s[1:]
	}
	return s
}

// Save writes every user to path as ACL SAVE does, one line each sorted by name, atomically: a
// temporary file in the same directory, synced, renamed over path, and the directory synced.
func (us *Users) Save(path string) error {
	var sb strings.Builder
	for _, l := range us.List() {
		sb.WriteString(l + "\n")
	}
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.WriteString(sb.String()); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return err
	}
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
	return nil
}
