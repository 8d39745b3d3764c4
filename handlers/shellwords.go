package handlers

import (
	"path"
	"slices"
	"strings"
	"unicode/utf8"
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
	var out [][]string
	for _, c := range splitShell(command).commands {
		out = append(out, wordTexts(c))
	}
	return out
}

// splitShell reads command as shellCommands does, keeping where each word
// was read from and whether it needs a shell (needsShell).
func splitShell(command string) *wordSplitter {
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
			sp.operator = sp.operator || c != '\n'
			sp.endCommand(i)
		case strings.IndexByte(shellBlanks, c) >= 0:
			sp.end(i)
		case strings.IndexByte(shellOperators, c) >= 0:
			sp.operator = true
			sp.end(i)
		default:
			sp.expands = sp.expands || c == '$' || c == '`' || c == '*' || c == '~' && !sp.open
			sp.pattern = sp.pattern || c == '?' || c == '['
			sp.add(i, i, 0, c)
		}
	}
	sp.endCommand(len(command))
	return &sp
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

// A shellWord is a word of a shell command, as shellWords gives it, and
// where in the command it was read from: enough to replace a part of it
// there (shellEdits) and leave the rest of the command as it was written.
type shellWord struct {
	text string
	// from[k] is where text[k] was read from.
	from []wordByte
	// end is where the word ends in the command, after its closing quote;
	// open is the quote left open there (a malformed command), or 0.
	end  int
	open byte
}

// wordByte is where a byte of a word was read from: command[start:end],
// the backslash that quotes it included, in quote (', " or 0 for none).
type wordByte struct {
	start, end int
	quote      byte
}

// wordTexts are the texts of words.
func wordTexts(words []shellWord) []string {
	out := make([]string, len(words))
	for i, w := range words {
		out[i] = w.text
	}
	return out
}

// wordSplitter holds the simple commands splitShell has found, the words
// of the one it reads and the word it reads. A word is begun by any
// character or quote (a pair of quotes with nothing between them is an
// empty word), so open tells one begun from none.
type wordSplitter struct {
	commands [][]shellWord
	words    []shellWord
	word     []byte
	from     []wordByte
	open     bool
	// quote is the quote left open at the end of the command, if any.
	quote byte
	// operator: the command has an operator out of quotes (; & | ( ) <
	// >); expands: a $ or ` out of single quotes, or out of quotes a *
	// (a pattern: *.json, the files it matches), a ~ starting a word (the
	// home directory) or a word that is a pattern (see end).
	operator, expands bool
	// pattern: the word has a ? or [ out of quotes.
	pattern bool
}

// add appends c, read from command[start:end] in quote, to the word.
func (sp *wordSplitter) add(start, i int, quote, c byte) {
	sp.word = append(sp.word, c)
	sp.from = append(sp.from, wordByte{start: start, end: i + 1, quote: quote})
	sp.open = true
}

// end ends the word at command[at]. A word with a ? or [ out of quotes
// is a pattern a shell expands (?.txt, [ab].txt), unless it is a URL or
// holds an = (a query, an option's value: https://h/x?sig=..., -d
// a[]=1), where a program gets it as written whenever no file matches,
// and meant it so.
func (sp *wordSplitter) end(at int) {
	if sp.open {
		text := string(sp.word)
		sp.expands = sp.expands || sp.pattern && !strings.Contains(text, "://") && !strings.Contains(text, "=")
		sp.words = append(sp.words, shellWord{text: text, from: sp.from, end: at, open: sp.quote})
	}
	sp.word, sp.from, sp.open, sp.pattern = nil, nil, false, false
}

// endCommand ends the word and the simple command at command[at].
func (sp *wordSplitter) endCommand(at int) {
	sp.end(at)
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
		sp.add(i-1, i-1, 0, '\\')
	case command[i] != '\n':
		sp.add(i-1, i, 0, command[i])
	}
	return i
}

// singleQuoted reads what is quoted from i to the next ', which ends it,
// or to the end, and returns the index of the last byte read.
func (sp *wordSplitter) singleQuoted(command string, i int) int {
	sp.open = true
	n := strings.IndexByte(command[i:], '\'')
	if n < 0 {
		n, sp.quote = len(command)-i, '\''
	}
	for j := i; j < i+n; j++ {
		sp.add(j, j, '\'', command[j])
	}
	return min(i+n, len(command))
}

// doubleQuoted reads what is quoted from i to the next " not quoted by a
// backslash, which ends it, or to the end, and returns the index of the
// last byte read. In double quotes a backslash quotes only $, `, ", \ and
// a line break; before any other character it stands for itself.
func (sp *wordSplitter) doubleQuoted(command string, i int) int {
	sp.open = true
	for ; i < len(command); i++ {
		switch c := command[i]; {
		case c == '"':
			return i
		case c == '\\' && i+1 < len(command) && strings.IndexByte("$`\"\\\n", command[i+1]) >= 0:
			i++
			if command[i] != '\n' {
				sp.add(i-1, i, '"', command[i])
			}
		default:
			sp.expands = sp.expands || c == '$' || c == '`'
			sp.add(i, i, '"', c)
		}
	}
	sp.quote = '"'
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

// An edit replaces command[start:end] by text.
type edit struct {
	start, end int
	text       string
}

// applyEdits returns command with edits, which do not overlap, made.
func applyEdits(command string, edits []edit) string {
	slices.SortFunc(edits, func(a, b edit) int { return a.start - b.start })
	var b strings.Builder
	at := 0
	for _, e := range edits {
		b.WriteString(command[at:e.start])
		b.WriteString(e.text)
		at = e.end
	}
	b.WriteString(command[at:])
	return b.String()
}

// at is where in the command the word's text[k] begins, and the quote it
// is read in; for k past its last byte, where that byte ends.
func (w shellWord) at(k int) (int, byte) {
	switch {
	case k < len(w.from):
		return w.from[k].start, w.from[k].quote
	case len(w.from) > 0:
		last := w.from[len(w.from)-1]
		return last.end, last.quote
	}
	return w.end, w.open
}

// replaceFrom is the edit of the command that makes the word read as it
// does up to text[p], then suffix: it replaces the rest of the word, its
// closing quote included.
func (w shellWord) replaceFrom(p int, suffix string) edit {
	start, quote := w.at(p)
	return edit{start: start, end: w.end, text: requoted(suffix, quote, w.open)}
}

// within maps e, an edit of the word's text (a shell command in it), to
// the command the word is in.
func (w shellWord) within(e edit) edit {
	start, quote := w.at(e.start)
	end, last := start, quote
	if e.end > e.start {
		end, last = w.from[e.end-1].end, w.from[e.end-1].quote
	}
	return edit{start: start, end: end, text: requoted(e.text, quote, last)}
}

// requoted is text written to be read as it is in quote (', " or 0 for
// none), then the quote changed to the one that what follows is read in.
// The brackets of the redaction marker stay as they are: it stands for a
// value in a message, which no shell expands.
func requoted(text string, quote, then byte) string {
	var b strings.Builder
	for i := 0; i < len(text); i++ {
		c := text[i]
		switch {
		case quote == '\'' && c == '\'':
			b.WriteString(`'\''`)
			continue
		case quote == 0 && c == '\n':
			b.WriteString("'\n'")
			continue
		case quote == '"' && strings.IndexByte("$`\"\\", c) >= 0,
			quote == 0 && strings.IndexByte(shellBlanks+shellOperators+"'\"\\$`", c) >= 0:
			b.WriteByte('\\')
		}
		b.WriteByte(c)
	}
	if quote != then {
		for _, q := range []byte{quote, then} {
			if q != 0 {
				b.WriteByte(q)
			}
		}
	}
	return b.String()
}

// commonPrefix is the length of the longest prefix of a and b that ends
// at a character's end.
func commonPrefix(a, b string) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	for n > 0 && n < len(a) && !utf8.RuneStart(a[n]) {
		n--
	}
	return n
}

// needsShell reports whether the command split needs a shell to run as
// written, which its words as a program and its arguments would not: it
// holds more than one simple command, an operator (a pipeline, a list, a
// redirection), an expansion ($NAME, $(cmd), `cmd`), or an assignment or
// a keyword before its program.
func (sp *wordSplitter) needsShell() bool {
	if sp.operator || sp.expands || len(sp.commands) != 1 {
		return true
	}
	first := sp.commands[0][0].text
	return assignment(first) || slices.Contains(shellKeywords, first)
}
