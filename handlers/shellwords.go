package handlers

import "strings"

// shellBlanks separate the words of a shell command.
const shellBlanks = " \t\n"

// shellOperators end a word as blanks do (cmd;next, a&&b, x|y, 2>&1,
// $(cmd)), without being one.
const shellOperators = ";&|()<>"

// shellWords splits command into words as a POSIX shell does before it
// expands them: at blanks and operators out of quotes, with the quotes
// ('...', "...") and the backslashes that quote removed. Nothing is
// expanded ($NAME, $(cmd) and * stay as written): what a command says
// back is read for the secrets written in it, not for what a shell would
// make of them. Quoting left open (a ' or " without its end, a \ ending
// the command) runs to the end, so that a malformed command still gives
// the words it holds.
func shellWords(command string) []string {
	var sp wordSplitter
	for i := 0; i < len(command); i++ {
		switch c := command[i]; {
		case c == '\\':
			i = sp.escaped(command, i+1)
		case c == '\'':
			i = sp.singleQuoted(command, i+1)
		case c == '"':
			i = sp.doubleQuoted(command, i+1)
		case strings.IndexByte(shellBlanks, c) >= 0 || strings.IndexByte(shellOperators, c) >= 0:
			sp.end()
		default:
			sp.write(command[i : i+1])
		}
	}
	sp.end()
	return sp.words
}

// wordSplitter holds the words shellWords has found and the one it reads.
// A word is begun by any character or quote (a pair of quotes with
// nothing between them is an empty word), so open tells one begun from
// none.
type wordSplitter struct {
	words []string
	word  strings.Builder
	open  bool
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
