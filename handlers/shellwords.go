package handlers

import (
	"path"
	"slices"
	"strings"
)

// shellBlanks separate the words of a shell command.
const shellBlanks = " \t\n"

// shellOperators end a word as blanks do (cmd;next, a&&b, x|y, 2>&1,
// $(cmd)), without being one.
const shellOperators = ";&|()<>"

// shellSeparators end a simple command too (cmd; next, a && b, x | y,
// (cmd), $(cmd), a line break): the word after one is a program, or an
// assignment it gets. The & and | of a redirection (2>&1, &>out, >|out)
// are not.
const shellSeparators = ";&|()\n"

// shellWords splits command into words as a POSIX shell does before it
// expands them: at blanks and operators out of quotes, with the quotes
// ('...', "...") and the backslashes that quote removed. Nothing is
// expanded ($NAME, $(cmd) and * stay as written): what a command says
// back is read for the secrets written in it, not for what a shell would
// make of them. Quoting left open (a ' or " without its end, a \ ending
// the command) runs to the end, so that a malformed command still gives
// the words it holds.
func shellWords(command string) []string { return slices.Concat(shellCommands(command)...) }

// shellCommands is shellWords with the words of each simple command apart:
// split at shellSeparators too, so that the first word of each is at a
// command position (commandWords).
func shellCommands(command string) [][]string {
	var sp wordSplitter
	for i := 0; i < len(command); i++ {
		switch c := command[i]; {
		case c == '\\':
			i = sp.escaped(command, i+1)
		case c == '\'':
			i = sp.singleQuoted(command, i+1)
		case c == '"':
			i = sp.doubleQuoted(command, i+1)
		case separates(command, i):
			sp.endCommand()
		case strings.IndexByte(shellBlanks, c) >= 0 || strings.IndexByte(shellOperators, c) >= 0:
			sp.end()
		default:
			sp.write(command[i : i+1])
		}
	}
	sp.endCommand()
	return sp.commands
}

// separates reports whether command[i], out of quotes, ends a simple
// command: one of shellSeparators that is not the & or | of a
// redirection.
func separates(command string, i int) bool {
	c := command[i]
	if strings.IndexByte(shellSeparators, c) < 0 {
		return false
	}
	afterRedirect := i > 0 && strings.IndexByte("<>", command[i-1]) >= 0
	beforeRedirect := c == '&' && i+1 < len(command) && command[i+1] == '>'
	return c != '&' && c != '|' || !afterRedirect && !beforeRedirect
}

// wordSplitter holds the simple commands shellCommands has found, the
// words of the one it reads and the word it reads. A word is begun by any
// character or quote (a pair of quotes with nothing between them is an
// empty word), so open tells one begun from none.
type wordSplitter struct {
	commands [][]string
	words    []string
	word     strings.Builder
	open     bool
}

func (sp *wordSplitter) write(s string) {
	sp.word.WriteString(s)
	sp.open = true
}

func (sp *wordSplitter) end() {
	if sp.open {
		sp.words = append(sp.words, sp.word.String())
	}
	sp.word.Reset()
	sp.open = false
}

func (sp *wordSplitter) endCommand() {
	sp.end()
	if len(sp.words) > 0 {
		sp.commands = append(sp.commands, sp.words)
	}
	sp.words = nil
}

// escaped reads the character quoted by a backslash at i-1 and returns
// the index of the last byte read. A backslash and a line break are no
// character (a command continued on the next line); a backslash ending
// the command stands for itself.
func (sp *wordSplitter) escaped(command string, i int) int {
	switch {
	case i >= len(command):
		sp.write(`\`)
	case command[i] != '\n':
		sp.write(command[i : i+1])
	}
	return i
}

// singleQuoted reads what is quoted from i to the next ', which ends it,
// or to the end, and returns the index of the last byte read.
func (sp *wordSplitter) singleQuoted(command string, i int) int {
	n := strings.IndexByte(command[i:], '\'')
	if n < 0 {
		sp.write(command[i:])
		return len(command)
	}
	sp.write(command[i : i+n])
	return i + n
}

// doubleQuoted reads what is quoted from i to the next " not quoted by a
// backslash, which ends it, or to the end, and returns the index of the
// last byte read. In double quotes a backslash quotes only $, `, ", \ and
// a line break; before any other character it stands for itself.
func (sp *wordSplitter) doubleQuoted(command string, i int) int {
	sp.write("")
	for ; i < len(command); i++ {
		switch c := command[i]; {
		case c == '"':
			return i
		case c == '\\' && i+1 < len(command) && strings.IndexByte("$`\"\\\n", command[i+1]) >= 0:
			i++
			if command[i] != '\n' {
				sp.write(command[i : i+1])
			}
		default:
			sp.write(command[i : i+1])
		}
	}
	return i
}

var (
	// shellKeywords may open a simple command without being its program
	// (if grep ...; then TOKEN=... deliver; fi).
	shellKeywords = []string{"!", "{", "}", "if", "then", "else", "elif", "fi", "do", "done", "while", "until", "time"}
	// declareBuiltins take assignments for arguments (export A=... B=...).
	declareBuiltins = []string{"export", "readonly", "declare", "typeset", "local"}
	// envRunners run the program after their options and assignments with
	// those assignments in its environment (env A=... prog, sudo A=... prog).
	envRunners = []string{"env", "sudo"}
)

// commandWords reads the words of a simple command for what is at a
// command position: the index of its program (len(words) when it has
// none), and those of its assignments (NAME=value): the leading ones,
// those after env or sudo and their options, and those after export and
// the other builtins that declare variables. A word after an option of
// env or sudo is taken for the option's value (sudo -u app), never for the
// program, so that no assignment after it is missed.
func commandWords(words []string) (program int, assigns []int) {
	i := 0
	for ; i < len(words) && (slices.Contains(shellKeywords, words[i]) || assignment(words[i])); i++ {
		if assignment(words[i]) {
			assigns = append(assigns, i)
		}
	}
	if i == len(words) {
		return i, assigns
	}
	switch name := path.Base(words[i]); {
	case slices.Contains(declareBuiltins, name):
		for j := i + 1; j < len(words); j++ {
			if assignment(words[j]) {
				assigns = append(assigns, j)
			}
		}
	case slices.Contains(envRunners, name):
		return runnerWords(words, i, assigns)
	}
	return i, assigns
}

// runnerWords is commandWords from words[runner], env or sudo: its
// assignments, up to the program it runs, which commandWords reads as one
// at a command position (sudo env A=... prog).
func runnerWords(words []string, runner int, assigns []int) (program int, _ []int) {
	afterOption := false
	for j := runner + 1; j < len(words); j++ {
		switch w := words[j]; {
		case assignment(w):
			assigns, afterOption = append(assigns, j), false
		case strings.HasPrefix(w, "-"):
			afterOption = w != "--"
		case afterOption:
			afterOption = false
		default:
			p, more := commandWords(words[j:])
			for _, a := range more {
				assigns = append(assigns, j+a)
			}
			return j + p, assigns
		}
	}
	return runner, assigns
}

// assignment reports whether word is a shell assignment, NAME=value with
// NAME a variable name.
func assignment(word string) bool {
	name, _, ok := strings.Cut(word, "=")
	return ok && validEnvName(name)
}

// A shellRunner is a program that runs an argument as a shell command:
// those after the option that gives one (a letter of a short option, alone
// or in a cluster such as -ec, or a long option, --command CMD or
// --command=CMD), or, when it has no such option, any.
type shellRunner struct {
	letters string
	long    []string
}

var (
	dashC       = shellRunner{letters: "c"}
	dashCommand = shellRunner{letters: "c", long: []string{"--command"}}
	anyArgument = shellRunner{}
	// shellRunnerOf names the programs that run an argument as a shell
	// command, by the base name of their path.
	shellRunnerOf = map[string]shellRunner{
		// The shells.
		"sh": dashC, "bash": dashC, "dash": dashC, "zsh": dashC, "ksh": dashC, "ksh93": dashC, "mksh": dashC,
		"pdksh": dashC, "oksh": dashC, "lksh": dashC, "ash": dashC, "yash": dashC, "posh": dashC,
		"csh": dashC, "tcsh": dashC, "fish": dashCommand,
		// Programs that hand their command to a shell.
		"su": dashCommand, "runuser": dashCommand, "flock": dashCommand, "script": dashCommand,
		"sudo": {letters: "is", long: []string{"--shell", "--login"}},
		// env -S splits its argument into env's own (env -S 'A=1 prog').
		"env": {letters: "S", long: []string{"--split-string"}},
		// A remote command, a command to repeat, a word eval runs.
		"ssh": anyArgument, "autossh": anyArgument, "watch": anyArgument, "eval": anyArgument,
		"parallel": anyArgument, "tmux": anyArgument,
	}
)

// gives reports whether opt, a word after the runner, is its option that
// gives a shell command.
func (r shellRunner) gives(opt string) bool {
	if slices.Contains(r.long, opt) {
		return true
	}
	cluster, short := strings.CutPrefix(opt, "-")
	isLetter := func(c rune) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }
	return short && cluster != "" && strings.IndexFunc(cluster, func(c rune) bool { return !isLetter(c) }) < 0 &&
		strings.ContainsAny(cluster, r.letters)
}

// join makes r a runner of o's options too.
func (r *shellRunner) join(o shellRunner) {
	for _, c := range o.letters {
		if !strings.ContainsRune(r.letters, c) {
			r.letters += string(c)
		}
	}
	for _, l := range o.long {
		if !slices.Contains(r.long, l) {
			r.long = append(r.long, l)
		}
	}
}

// shellArgs reads which words of a simple command a program before them
// runs as a shell command (shellRunnerOf): for each, where in it the
// command starts, or -1 when none does. They are the words after the
// runner's option that gives one, wherever it comes after the runner
// (bash -o pipefail -c ..., sudo -u app bash -lc ...), or after a runner
// with no such option (ssh host ...), and a word that gives one to the
// runner's long option after = (su --command=...), from there. Where it
// is not sure which word is the command, it takes every word after the
// option: a shell's $0 and arguments too, which only hides more.
func shellArgs(args []string) []int {
	out := make([]int, len(args))
	var seen shellRunner // the options of the runners seen so far
	all := false
	for i, a := range args {
		out[i] = -1
		if all {
			out[i] = 0
			continue
		}
		for _, long := range seen.long {
			if rest, found := strings.CutPrefix(a, long+"="); found {
				out[i] = len(a) - len(rest)
			}
		}
		r, runner := shellRunnerOf[path.Base(a)]
		all = seen.gives(a) || runner && r.letters == "" && len(r.long) == 0
		if runner {
			seen.join(r)
		}
	}
	return out
}
