package docs

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"unicode"

	"github.com/bloomd/bloom/internal/cli"
	"github.com/bloomd/bloom/internal/server"
)

// root is the repository's top directory, relative to this package.
const root = "../.."

// documents are the files checked, relative to root.
var documents = []string{"README.md", "BENCHMARKS.md"}

func read(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

var (
	linkRE    = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	resultRE  = regexp.MustCompile(`bench/results/[A-Za-z0-9._-]+\.txt`)
	headingRE = regexp.MustCompile(`(?m)^#{1,6} +(.+?) *$`)
	fenceRE   = regexp.MustCompile("^ *```")
)

// slug is the anchor GitHub gives a heading: lower case, punctuation dropped, spaces as hyphens.
func slug(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(heading) {
		switch {
		case unicode.IsLetter(r) || unicode.IsDigit(r) || r == '-' || r == '_':
			b.WriteRune(r)
		case r == ' ':
			b.WriteByte('-')
		}
	}
	return b.String()
}

// anchors returns the anchors of a Markdown text's headings, outside fenced blocks; a repeated
// heading gets -1, -2, ... as on GitHub.
func anchors(text string) map[string]bool {
	out := map[string]bool{}
	seen := map[string]int{}
	for _, line := range outsideFences(text) {
		m := headingRE.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		s := slug(m[1])
		if n := seen[s]; n > 0 {
			out[fmt.Sprintf("%s-%d", s, n)] = true
		} else {
			out[s] = true
		}
		seen[s]++
	}
	return out
}

func outsideFences(text string) []string {
	var out []string
	in := false
	for _, line := range strings.Split(text, "\n") {
		if fenceRE.MatchString(line) {
			in = !in
			continue
		}
		if !in {
			out = append(out, line)
		}
	}
	return out
}

// checkLinks returns a problem for every link of doc (named name, in directory dir of root) whose
// file or heading does not exist, and every bench/results/ file it names that does not exist.
func checkLinks(doc, name string, exists func(string) bool, headings func(file string) (map[string]bool, error)) []string {
	var bad []string
	reported := map[string]bool{}
	self := anchors(doc)
	for _, m := range linkRE.FindAllStringSubmatch(doc, -1) {
		target := m[1]
		if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
			continue
		}
		file, anchor, _ := strings.Cut(target, "#")
		if file == "" {
			file = name
		} else {
			file = path.Clean(path.Join(path.Dir(name), file))
			if !exists(file) {
				reported[file] = true
				bad = append(bad, fmt.Sprintf("%s links to %s, which does not exist", name, target))
				continue
			}
		}
		if anchor != "" && strings.HasSuffix(file, ".md") {
			var hs map[string]bool
			var err error
			if file == name {
				hs = self // the document as given, not as on disk
			} else {
				hs, err = headings(file)
			}
			if err != nil {
				bad = append(bad, fmt.Sprintf("%s links to %s: %v", name, target, err))
			} else if !hs[anchor] {
				bad = append(bad, fmt.Sprintf("%s links to %s: %s has no heading with anchor #%s", name, target, file, anchor))
			}
		}
	}
	for _, f := range resultRE.FindAllString(doc, -1) {
		if !exists(f) && !reported[f] {
			reported[f] = true
			bad = append(bad, fmt.Sprintf("%s cites %s, which does not exist", name, f))
		}
	}
	return bad
}

func repoExists(file string) bool {
	_, err := os.Stat(filepath.Join(root, filepath.FromSlash(file)))
	return err == nil
}

var headingCache sync.Map // file -> map[string]bool

func repoHeadings(file string) (map[string]bool, error) {
	if hs, ok := headingCache.Load(file); ok {
		return hs.(map[string]bool), nil
	}
	b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(file)))
	if err != nil {
		return nil, err
	}
	hs := anchors(string(b))
	headingCache.Store(file, hs)
	return hs, nil
}

// TestLinks: every file and heading the documents link to exists, and every result file they cite.
func TestLinks(t *testing.T) {
	for _, name := range documents {
		for _, problem := range checkLinks(read(t, name), name, repoExists, repoHeadings) {
			t.Error(problem)
		}
	}
}

// TestLinksCatchBadCitations plants bad citations and links in a document and requires each to
// be reported, so that TestLinks cannot pass by checking nothing.
func TestLinksCatchBadCitations(t *testing.T) {
	doc := "# Title\n\nGood: [a result](bench/results/library-1e6-1e7.txt), [a section](README.md#tests), [this](#title).\n" +
		"Raw output: [here](bench/results/no-such-run.txt).\n" +
		"Also `bench/results/another-missing.txt`.\n" +
		"See [a section](README.md#no-such-heading) and [this one](#nor-this-one).\n" +
		"And [a package](internal/no-such-package).\n"
	problems := checkLinks(doc, "BENCHMARKS.md", repoExists, repoHeadings)
	for _, want := range []string{"no-such-run.txt", "another-missing.txt", "#no-such-heading", "#nor-this-one", "internal/no-such-package"} {
		found := false
		for _, p := range problems {
			found = found || strings.Contains(p, want)
		}
		if !found {
			t.Errorf("a citation of %s was not reported; problems: %q", want, problems)
		}
	}
	if len(problems) != 5 {
		t.Errorf("%d problems, want exactly the 5 planted: %q", len(problems), problems)
	}
}

// A command line of a shell block: the program's arguments, and for a console block the output
// the document shows after it.
type cmdLine struct {
	where  string // document:line
	prog   string // "bloom" or "bloomd"
	args   []string
	output []string // console blocks only: the lines shown after the command
	shown  bool     // the block shows output (a console block)
}

// shellCommands returns the bloom and bloomd command lines in doc's sh, bash and shell blocks
// (every line) and console blocks (lines starting with "$ "; the lines after one, up to the next,
// are its output).
func shellCommands(doc, name string) ([]cmdLine, error) {
	var out []cmdLine
	lang := ""
	in := false
	heredoc := ""
	var console *cmdLine
	sc := bufio.NewScanner(strings.NewReader(doc))
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if fenceRE.MatchString(line) {
			if !in {
				lang = strings.TrimSpace(strings.TrimLeft(strings.TrimSpace(line), "`"))
			}
			in = !in
			console = nil
			continue
		}
		if !in {
			continue
		}
		if heredoc != "" {
			if strings.TrimSpace(line) == heredoc {
				heredoc = ""
			}
			continue
		}
		var text string
		switch lang {
		case "sh", "bash", "shell":
			text = line
		case "console":
			if !strings.HasPrefix(line, "$ ") {
				if console != nil {
					console.output = append(console.output, line)
				}
				continue
			}
			text = line[2:]
			console = nil
		default:
			continue
		}
		where := fmt.Sprintf("%s:%d", name, n)
		cmds, hd, err := splitShell(text)
		if err != nil {
			return nil, fmt.Errorf("%s: %v", where, err)
		}
		heredoc = hd
		for _, words := range cmds {
			prog, args := program(words)
			if prog == "" {
				continue
			}
			out = append(out, cmdLine{where: where, prog: prog, args: args, shown: lang == "console"})
			if lang == "console" {
				console = &out[len(out)-1]
			}
		}
	}
	return out, sc.Err()
}

// splitShell splits a line of shell into simple commands, each a list of words, at unquoted
// ;, &, |, && and ||, ( and ), dropping a comment. It returns the end marker of a here-document
// the line starts, if any.
func splitShell(line string) (cmds [][]string, heredoc string, err error) {
	var words []string
	var w strings.Builder
	inWord := false
	endWord := func() {
		if inWord {
			words = append(words, w.String())
			w.Reset()
			inWord = false
		}
	}
	endCmd := func() {
		endWord()
		if len(words) > 0 {
			cmds = append(cmds, words)
			words = nil
		}
	}
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case c == '\'':
			j := strings.IndexByte(line[i+1:], '\'')
			if j < 0 {
				return nil, "", fmt.Errorf("unterminated ' in %q", line)
			}
			w.WriteString(line[i+1 : i+1+j])
			inWord = true
			i += j + 1
		case c == '"':
			j := i + 1
			for ; j < len(line) && line[j] != '"'; j++ {
				if line[j] == '\\' && j+1 < len(line) {
					j++
				}
				w.WriteByte(line[j])
			}
			if j >= len(line) {
				return nil, "", fmt.Errorf("unterminated \" in %q", line)
			}
			inWord = true
			i = j
		case c == '\\' && i+1 < len(line):
			i++
			w.WriteByte(line[i])
			inWord = true
		case c == '#' && !inWord:
			endCmd()
			return cmds, heredoc, nil
		case c == ' ' || c == '\t':
			endWord()
		case c == ';' || c == '&' || c == '|' || c == '(' || c == ')':
			endCmd()
		case c == '<' && strings.HasPrefix(line[i:], "<<"):
			endWord()
			rest := strings.TrimLeft(line[i+2:], "-")
			rest = strings.TrimLeft(rest, " ")
			end := strings.FieldsFunc(rest, func(r rune) bool { return r == ' ' || r == ';' || r == '&' || r == '|' })
			if len(end) == 0 {
				return nil, "", fmt.Errorf("here-document without a marker in %q", line)
			}
			heredoc = strings.Trim(end[0], `'"`)
			i += 2 + (len(line[i+2:]) - len(rest)) + len(end[0]) - 1
		default:
			w.WriteByte(c)
			inWord = true
		}
	}
	endCmd()
	return cmds, heredoc, nil
}

// program finds bloom or bloomd in a simple command, past variable assignments, shell keywords
// and wrappers (time, nohup, prlimit and their options), and through go run ./cmd/NAME.
func program(words []string) (string, []string) {
	for len(words) > 0 {
		w := words[0]
		switch {
		case strings.Contains(w, "=") && !strings.HasPrefix(w, "-"):
			words = words[1:]
			continue
		case w == "do" || w == "then" || w == "else" || w == "time" || w == "nohup" || w == "exec" || w == "sudo":
			words = words[1:]
			continue
		case w == "prlimit":
			words = words[1:]
			for len(words) > 0 && strings.HasPrefix(words[0], "-") {
				words = words[1:]
			}
			continue
		}
		break
	}
	if len(words) == 0 {
		return "", nil
	}
	if len(words) >= 3 && words[0] == "go" && words[1] == "run" {
		switch path.Clean(words[2]) {
		case "cmd/bloom", "github.com/bloomd/bloom/cmd/bloom":
			return "bloom", words[3:]
		case "cmd/bloomd", "github.com/bloomd/bloom/cmd/bloomd":
			return "bloomd", words[3:]
		}
		return "", nil
	}
	switch path.Base(words[0]) {
	case "bloom", "bloomd":
		return path.Base(words[0]), words[1:]
	}
	return "", nil
}

// shellVar matches a shell variable in a documented command line.
var shellVar = regexp.MustCompile(`\$\{?[A-Za-z_][A-Za-z0-9_]*\}?`)

// checkCommand returns what is wrong with one documented command line, or "".
func checkCommand(c cmdLine) string {
	switch c.prog {
	case "bloom":
		if err := cli.CheckArgs(c.args); err != nil {
			return fmt.Sprintf("%s: bloom %s: %v", c.where, strings.Join(c.args, " "), err)
		}
		if len(c.args) > 0 && c.args[0] == "calc" {
			var stdout, stderr bytes.Buffer
			if code := cli.Run(context.Background(), c.args, strings.NewReader(""), &stdout, &stderr); code != 0 {
				return fmt.Sprintf("%s: bloom %s: exit status %d: %s", c.where, strings.Join(c.args, " "), code, stderr.String())
			}
			if c.shown && len(c.output) > 0 {
				got := strings.TrimRight(stdout.String(), "\n")
				want := strings.TrimRight(strings.Join(c.output, "\n"), "\n")
				if got != want {
					return fmt.Sprintf("%s: bloom %s prints\n%s\nwhere the document shows\n%s", c.where, strings.Join(c.args, " "), got, want)
				}
			}
		}
	case "bloomd":
		args := c.args
		if len(args) > 0 && args[0] == "check-aof" {
			for _, a := range args[1:] {
				if strings.HasPrefix(a, "-") && a != "--fix" && a != "-fix" {
					return fmt.Sprintf("%s: bloomd check-aof has no flag %s", c.where, a)
				}
			}
			return ""
		}
		if len(args) == 1 && (args[0] == "--help" || args[0] == "--version") {
			return ""
		}
		if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
			args = args[1:] // a config file: the documents' files do not exist here
		}
		args = append([]string(nil), args...)
		for i, a := range args {
			// A shell variable ($p in a loop over ports) stands for a value the document
			// chose; the setting's name is still checked, its value with a stand-in.
			args[i] = shellVar.ReplaceAllString(a, "1")
		}
		if _, _, err := server.ParseArgs(args); err != nil {
			return fmt.Sprintf("%s: bloomd %s: %v", c.where, strings.Join(c.args, " "), err)
		}
	}
	return ""
}

// TestShellBlocks: every bloom and bloomd command in the README's shell blocks has the
// subcommands and flags it uses, and the bloom calc lines run (with the output shown, if any).
func TestShellBlocks(t *testing.T) {
	cmds, err := shellCommands(read(t, "README.md"), "README.md")
	if err != nil {
		t.Fatal(err)
	}
	progs := map[string]int{}
	for _, c := range cmds {
		progs[c.prog]++
		t.Logf("%s: %s %s (output shown: %d lines)", c.where, c.prog, strings.Join(c.args, " "), len(c.output))
		if problem := checkCommand(c); problem != "" {
			t.Error(problem)
		}
	}
	if progs["bloom"] < 5 || progs["bloomd"] < 3 {
		t.Errorf("found %d bloom and %d bloomd command lines in README.md's shell blocks; the parser has lost them", progs["bloom"], progs["bloomd"])
	}
}

// TestShellBlocksCatchBadCommands plants command lines with a subcommand, flags and output that
// do not exist, and requires each to be reported.
func TestShellBlocksCatchBadCommands(t *testing.T) {
	doc := "```sh\n" +
		"go run ./cmd/bloomd --dir data --no-such-setting 1   # a comment --not-a-flag\n" +
		"bloom calculate -n 1M\n" +
		"cd x && bloom build --no-such-flag -o f.bloom in.txt | gzip\n" +
		"cat > f <<'EOF'\nbloom --not-checked-in-a-heredoc\nEOF\n" +
		"```\n\n```console\n$ bloom calc -n 1000 -p 0.5\nnot what it prints\n```\n"
	cmds, err := shellCommands(doc, "planted.md")
	if err != nil {
		t.Fatal(err)
	}
	if len(cmds) != 4 {
		t.Fatalf("found %d command lines, want 4: %+v", len(cmds), cmds)
	}
	for i, want := range []string{"--no-such-setting", "calculate", "no-such-flag", "where the document shows"} {
		if p := checkCommand(cmds[i]); !strings.Contains(p, want) {
			t.Errorf("command %d (%v): problem %q; want one naming %q", i, cmds[i].args, p, want)
		}
	}
}

// TestCITestCommand: .ci/run runs exactly the test command the README gives.
func TestCITestCommand(t *testing.T) {
	const cmd = "go vet ./... && go tool staticcheck ./... && go test -race ./..."
	if !strings.Contains(read(t, "README.md"), cmd) {
		t.Errorf("README.md does not give the test command %q", cmd)
	}
	ci := read(t, ".ci/run")
	lines := strings.Split(strings.TrimSpace(ci), "\n")
	if last := lines[len(lines)-1]; last != cmd {
		t.Errorf(".ci/run ends with %q; want the README's test command %q", last, cmd)
	}
}
