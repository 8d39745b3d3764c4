package handlers

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

// A shell command splits into the words a shell would give its program,
// quotes and the backslashes that quote removed, nothing expanded; quoting
// left open runs to the end rather than losing what follows it.
func TestShellWords(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		command string
		want    []string
	}{
		{"curl -fsS https://api.example.com/x", []string{"curl", "-fsS", "https://api.example.com/x"}},
		{"  a \t b\nc  ", []string{"a", "b", "c"}},
		{`curl -H 'Authorization: Bearer 3f9c' -d "{\"a\": 1}"`, []string{"curl", "-H", "Authorization: Bearer 3f9c", "-d", `{"a": 1}`}},
		{`a'b c'"d e"f`, []string{"ab cd ef"}},
		{`'' "" x`, []string{"", "", "x"}},
		{`it\'s a\ b \"c\"`, []string{"it's", "a b", `"c"`}},
		{`"\$HOME \a \\ \""`, []string{`$HOME \a \ "`}},
		{`'single \ keeps "all"'`, []string{`single \ keeps "all"`}},
		{"one \\\ntwo", []string{"one", "two"}},
		{"\"joined \\\nline\"", []string{"joined line"}},
		{"$TOKEN ${X:-y} $(cmd) `b`", []string{"$TOKEN", "${X:-y}", "$", "cmd", "`b`"}},
		{"a;b&&c|d 2>&1 <in >out", []string{"a", "b", "c", "d", "2", "1", "in", "out"}},
		{"échec 'à côté'", []string{"échec", "à côté"}},
		{"", nil},
		{"   ", nil},
		// Malformed: each open quote runs to the end.
		{"curl -H 'Authorization: Bearer 3f9c --token abc", []string{"curl", "-H", "Authorization: Bearer 3f9c --token abc"}},
		{`curl --token "tk 12 -v`, []string{"curl", "--token", "tk 12 -v"}},
		{`a "b \`, []string{"a", `b \`}},
		{`a "b \"`, []string{"a", `b "`}},
		{`end\`, []string{`end\`}},
		{`'`, []string{""}},
		{`"`, []string{""}},
		{`x '`, []string{"x", ""}},
	} {
		if got := shellWords(c.command); !slices.Equal(got, c.want) {
			t.Errorf("shellWords(%q) = %q, want %q", c.command, got, c.want)
		}
	}
	// A command cut anywhere, as one written wrong may end: in a quote,
	// after a backslash, in a header; every cut is read without a panic,
	// and a credential it holds whole is still hidden.
	const command = `curl -H "Cookie: a=\"b\"" --header='X-Api-Key: Ak7Hx2Pq9Wm4' -H 'Authorization: Bearer Bt3f9cAbc7Qx' \`
	for i := range len(command) + 1 {
		var s sentSecrets
		s.addArgs([]string{"sh", "-c", command[:i]})
		if strings.HasSuffix(command[:i], "Bt3f9cAbc7Qx") && s.hideString("Bt3f9cAbc7Qx") != "[REDACTED]" {
			t.Errorf("cut after the bearer token, %q keeps it shown", command[:i])
		}
	}
}

// In a shell command and in header arguments: the value of an option
// named like a secret's key and the secrets of a URL among its words, a
// header given to -H or --header but a plain one (Content-Type), and a
// header of any argument named like a secret's key; a Bearer credential
// and a cookie's value alone too. What is no secret stays shown.
func TestShellAndHeaderArgumentSecretRules(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		what       string
		args       []string
		text, want string
	}{
		{"sh -c", []string{"sh", "-c", `curl -fsS -H 'Authorization: Bearer Bt3f9cAbc77' https://api.example.com/x?token=Qt4Lp8Wz2Nx6 --token Tk5Rv8Nc3Jx6`},
			"Bearer Bt3f9cAbc77 | Bt3f9cAbc77 | api.example.com/x Qt4Lp8Wz2Nx6 | Tk5Rv8Nc3Jx6 | -fsS",
			"[REDACTED] | [REDACTED] | api.example.com/x [REDACTED] | [REDACTED] | -fsS"},
		{"bash -c, --token= and nested quotes", []string{"bash", "-c", `set -e; run --api-key=Ak7Hx2Pq9Wm4 && ssh host "curl --header 'X-Api-Key: Xk9pQ2rT7vLm' -H 'Content-Type: application/json'"`},
			"Ak7Hx2Pq9Wm4 Xk9pQ2rT7vLm application/json", "[REDACTED] [REDACTED] application/json"},
		// An open quote runs to the end: what it holds is still read.
		{"an unterminated quote", []string{"sh", "-c", `curl --password Pw9Open4Quote -H "Authorization: Bearer Un7Term1nated`},
			"Un7Term1nated Pw9Open4Quote", "[REDACTED] [REDACTED]"},
		{"an option in an unterminated quote", []string{"sh", "-c", `curl -H 'X-Api-Key: Ak3Open7Quote --token Tk8Open2Quote -v`},
			"Ak3Open7Quote --token Tk8Open2Quote -v | Tk8Open2Quote", "[REDACTED] | [REDACTED]"},
		{"header arguments", []string{"curl", "-H", "X-Request-Id: rq-20261130-0001", "--header", "Cookie: session=Ss5Kd8Lw2Mq4; theme=darkmode", "-H", "Accept: application/vnd.acme+json",
			"--header=X-Hook-Key:Hk5Rv8Nc3Jx6", "-HX-Signature: Sg3Nb8Kd5Rt1"},
			"rq-20261130-0001 Ss5Kd8Lw2Mq4 darkmode application/vnd.acme+json Hk5Rv8Nc3Jx6 Sg3Nb8Kd5Rt1",
			"[REDACTED] [REDACTED] [REDACTED] application/vnd.acme+json [REDACTED] [REDACTED]"},
		{"headers without -H", []string{"http", "POST", "api.example.com", "Authorization: Basic QmFzaWMxMjM0NTY=", "Proxy-Authorization:Px7Wq3Zr5Tn2", "X-Request-Id: rq-20261130-0002", "Note: 2026-11-30T10:30"},
			"QmFzaWMxMjM0NTY= Px7Wq3Zr5Tn2 rq-20261130-0002 2026-11-30T10:30", "[REDACTED] [REDACTED] rq-20261130-0002 2026-11-30T10:30"},
		{"no secrets", []string{"sh", "-c", "echo 'Author: Ada Lovelace' --output /srv/out/report.json 10:30:00 -H"},
			"Ada Lovelace /srv/out/report.json 10:30:00", "Ada Lovelace /srv/out/report.json 10:30:00"},
	} {
		var s sentSecrets
		s.addArgs(c.args)
		if got := s.hideString(c.text); got != c.want {
			t.Errorf("%s: the secrets of %q hide\n%s, want\n%s", c.what, c.args, got, c.want)
		}
	}
}

// A shell command splits into simple commands at ; & | ( ) and line
// breaks out of quotes, but not at the & and | of a redirection.
func TestShellCommands(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		command string
		want    [][]string
	}{
		{"a b; c d", [][]string{{"a", "b"}, {"c", "d"}}},
		{"a && b || c | d & e", [][]string{{"a"}, {"b"}, {"c"}, {"d"}, {"e"}}},
		{"x=$(cat f) run\nnext", [][]string{{"x=$"}, {"cat", "f"}, {"run"}, {"next"}}},
		{"run 2>&1 >|out &>all <&3 x", [][]string{{"run", "2", "1", "out", "all", "3", "x"}}},
		{"echo 'a; b' \"c | d\" e\\;f", [][]string{{"echo", "a; b", "c | d", "e;f"}}},
		{";; |", nil},
	} {
		got := shellCommands(c.command)
		if !slices.EqualFunc(got, c.want, slices.Equal) {
			t.Errorf("shellCommands(%q) = %q, want %q", c.command, got, c.want)
		}
	}
}

// An assignment at a command position (leading a command, after env or
// sudo and their options, after export and its kin) gives a secret unless
// its name is a plain setting's, as the env option's does; one elsewhere
// (an argument of echo or make) gives none.
func TestAssignmentSecretRules(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		what       string
		args       []string
		text, want string
	}{
		{"sh -c, leading", []string{"sh", "-c", "API_TOKEN=3f9cAb7Qx2Lm LOG_LEVEL=debugging ./deliver --verbose"},
			"3f9cAb7Qx2Lm debugging", "[REDACTED] debugging"},
		{"env as the program", []string{"/usr/bin/env", "-i", "DB_PASSWORD=Pw8Kd3Nb5Rt1", "LEDGER_DIR=/srv/ledger/data", "./deliver"},
			"Pw8Kd3Nb5Rt1 /srv/ledger/data", "[REDACTED] /srv/ledger/data"},
		{"export, then a command", []string{"bash", "-c", "set -e; export DB_PASSWORD=Pw2Zc6Tm8Vn5 BILLING_MODE=production; run && env -u HOME SIGNING_KEY=Sk4Lp8Wz2Nx6 ./deliver"},
			"Pw2Zc6Tm8Vn5 production Sk4Lp8Wz2Nx6", "[REDACTED] production [REDACTED]"},
		{"sudo with an option's value, env in sudo", []string{"sh", "-c", "sudo -u billing env ACME_CRED=Cr5Kd8Lw2Mq4 /srv/deliver"},
			"Cr5Kd8Lw2Mq4 billing", "[REDACTED] billing"},
		{"after a keyword, unquoted &", []string{"sh", "-c", "if true; then HOOK_SECRET=Hs7Wq3Zr5Tn2 run; fi; curl https://h.example/x?a=1&sig=Sg9Pq2Wm4Zc6"},
			"Hs7Wq3Zr5Tn2 Sg9Pq2Wm4Zc6", "[REDACTED] [REDACTED]"},
		{"no command position", []string{"sh", "-c", "echo GREETING=goodmorning; make TARGET=everything"},
			"goodmorning everything", "goodmorning everything"},
	} {
		var s sentSecrets
		s.addArgs(c.args)
		if got := s.hideString(c.text); got != c.want {
			t.Errorf("%s: the secrets of %q hide\n%s, want\n%s", c.what, c.args, got, c.want)
		}
	}
}

// The -H of grep and its kin names files, so the pattern after it is no
// header's; wherever that is not sure, -H still gives a header, and a
// header named like a secret's key is one to grep too.
func TestSearchFlagIsNoHeader(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		what       string
		args       []string
		text, want string
	}{
		{"grep -H", []string{"/bin/grep", "-H", "Error: disk full", "/var/log/app.log"}, "disk full", "disk full"},
		{"grep -H in a pipe", []string{"sh", "-c", "curl -fsS -H 'X-Hook-Key: Hk2Zc6Tm8Vn5' https://h.example/x | rg -i -H 'Warning: low memory'"},
			"Hk2Zc6Tm8Vn5 low memory", "[REDACTED] low memory"},
		{"a secret's header to grep", []string{"grep", "-H", "Authorization: Bearer Bt3f9cAbc7Qx", "access.log"}, "Bt3f9cAbc7Qx", "[REDACTED]"},
		{"an argument of grep between", []string{"grep", "-e", "x", "-H", "Error: disk full"}, "disk full", "[REDACTED]"},
		{"grep as a value", []string{"curl", "-d", "grep", "-H", "X-Hook-Key: Hk5Rv8Nc3Jx6"}, "Hk5Rv8Nc3Jx6", "[REDACTED]"},
		{"sudo -H then curl -H", []string{"sh", "-c", "sudo -H curl -H 'X-Hook-Key: Hk9Pq2Wm4Zc6' https://h.example/x"}, "Hk9Pq2Wm4Zc6", "[REDACTED]"},
		{"grep run by xargs", []string{"sh", "-c", "ls | xargs grep -H 'Error: disk full'"}, "disk full", "[REDACTED]"},
	} {
		var s sentSecrets
		s.addArgs(c.args)
		if got := s.hideString(c.text); got != c.want {
			t.Errorf("%s: the secrets of %q hide\n%s, want\n%s", c.what, c.args, got, c.want)
		}
	}
}

// A program runs an argument as a shell command after its option that
// gives one (a shell's -c, alone, in a cluster or after other options;
// su's --command, given whole or after =), or, when it has none (ssh,
// watch, eval), wherever it comes; no other argument is one.
func TestShellArgs(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		args []string
		want []int
	}{
		{[]string{"/bin/sh", "-c", "run"}, []int{-1, -1, 0}},
		{[]string{"bash", "-o", "pipefail", "-ec", "run"}, []int{-1, -1, -1, -1, 0}},
		{[]string{"sudo", "-u", "app", "/usr/bin/bash", "-lc", "run"}, []int{-1, -1, -1, -1, -1, 0}},
		// Its $0 and arguments: not sure which is the command, so taken.
		{[]string{"sh", "-c", "run", "name", "arg one"}, []int{-1, -1, 0, 0, 0}},
		{[]string{"su", "app", "--command", "run"}, []int{-1, -1, -1, 0}},
		{[]string{"flock", "/run/lock", "--command=run it"}, []int{-1, -1, len("--command=")}},
		{[]string{"sudo", "-i", "run it"}, []int{-1, -1, 0}},
		{[]string{"ssh", "-i", "/etc/key", "deploy@host", "cd /srv && run"}, []int{-1, 0, 0, 0, 0}},
		{[]string{"bash", "/srv/deliver.sh", "msg=Deployment done"}, []int{-1, -1, -1}},
		{[]string{"bash", "--noprofile", "msg=Deployment done"}, []int{-1, -1, -1}},
		{[]string{"notify", "--message", "msg=Deployment done"}, []int{-1, -1, -1}},
		{[]string{"grep", "-c", "a b"}, []int{-1, -1, -1}},
		{[]string{"bash", "--command=x", "a b"}, []int{-1, -1, -1}}, // bash has no --command
	} {
		if got := shellArgs(c.args); !slices.Equal(got, c.want) {
			t.Errorf("shellArgs(%q) = %v, want %v", c.args, got, c.want)
		}
	}
}

// In an argument that no program is known to run as a shell command (a
// message), an assignment at a command position gives a secret only when
// its name looks like a secret's key or its value like a token: a plain
// word stays shown. In one a program runs as a shell command (sh -c, ssh,
// su), blanks or not, and in a shell command within a message, the env
// option's rule holds.
func TestMessageAssignmentSecretRules(t *testing.T) {
	t.Parallel()
	const word = "Deployment"
	for _, c := range []struct {
		what   string
		args   []string
		hidden bool
	}{
		{"a message option", []string{"notify", "--message", "msg=" + word + " done"}, false},
		{"a message argument", []string{"logger", "status=" + word + " finished"}, false},
		{"a shell script's argument", []string{"bash", "/srv/deliver.sh", "msg=" + word + " done"}, false},
		{"a message in a shell command", []string{"sh", "-c", "notify --message 'msg=" + word + " done'"}, false},
		{"a name like a secret's key", []string{"notify", "API_TOKEN=" + word + " sent"}, true},
		{"sh -c", []string{"sh", "-c", "NOTE=" + word + " run"}, true},
		{"sh -c without blanks", []string{"sh", "-c", "NOTE=" + word + ";run"}, true},
		{"bash -c after other options", []string{"sudo", "-u", "app", "bash", "-o", "pipefail", "-lc", "NOTE=" + word + " run"}, true},
		{"ssh's remote command", []string{"ssh", "-i", "/etc/key", "deploy@host", "cd /srv && NOTE=" + word + " ./run"}, true},
		{"su --command=", []string{"su", "app", "--command=NOTE=" + word + " run"}, true},
		{"a shell command in a message", []string{"wrapper", "--then", "sh -c 'NOTE=" + word + " run'"}, true},
	} {
		var s sentSecrets
		s.addArgs(c.args)
		if got := s.hideString(word) != word; got != c.hidden {
			t.Errorf("%s: %q hides %s: %v, want %v", c.what, c.args, word, got, c.hidden)
		}
	}
	var s sentSecrets
	s.addArgs([]string{"notify", "note=Cr5Kd8Lw2Mq4 rotated", "LOG_LEVEL=Lv5Kd8Lw2Mq4 set"})
	if got, want := s.hideString("Cr5Kd8Lw2Mq4 Lv5Kd8Lw2Mq4"), "[REDACTED] Lv5Kd8Lw2Mq4"; got != want {
		t.Errorf("token-shaped values in a message hide %q, want %q", got, want)
	}
}

// A shell command is quoted with its secrets hidden where they are,
// whatever their length and however deep, and the rest as written: its
// quotes, escapes and operators, so that it still splits into the same
// words, but the hidden ones, which the marker ends.
func TestShellEditsKeepTheCommand(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ command, want string }{
		{`curl --token=ab'cd' -H "X-Api-Key: k3y" x`, `curl --token=[REDACTED] -H "X-Api-Key: [REDACTED]" x`},
		{`curl '--token=abcd' --token ab\ cd x`, `curl '--token=[REDACTED]' --token [REDACTED] x`},
		{`sh -c "curl --token 'ab'\"cd\" x; TOKEN=\$T run"`, `sh -c "curl --token '[REDACTED]' x; TOKEN=[REDACTED] run"`},
		{`bash -c 'ssh host "curl -H '\''Cookie: s=1'\'' https://u:pw@h/x?a=1"'`,
			// The ' that ended the header, written '\'' as the outer quotes
			// need, is quoted again after the marker: '\''' reads as it did.
			`bash -c 'ssh host "curl -H '\''Cookie: [REDACTED]'\'''' https://u:[REDACTED]@h/x?[REDACTED]"'`},
		{`sh -c 'TOKEN=$(cat /run/token) API_KEY=k run | tee log'`, `sh -c 'TOKEN=$(cat /run/token) API_KEY=[REDACTED] run | tee log'`},
		{"sh -c \"run --token 'a\nb' ; run2\"", "sh -c \"run --token '[REDACTED]' ; run2\""},
		{`sh -c 'curl --token "abc`, `sh -c 'curl --token "[REDACTED]`},
		{`run --message 'msg=Deployment done' --token=`, `run --message 'msg=Deployment done' --token=`},
	} {
		got := applyEdits(c.command, shellEdits(c.command, 1, false))
		if got != c.want {
			t.Errorf("the quoted %s is\n%s, want\n%s", c.command, got, c.want)
		}
		if n, want := len(shellWords(got)), len(shellWords(c.command)); n != want {
			t.Errorf("the quoted %s splits into %d words, want %d", c.command, n, want)
		}
	}
	// Cut anywhere, as a command written wrong may end, it is read without
	// a panic and keeps its words, but those with a secret, each of which
	// holds the marker instead.
	const command = `bash -c 'ssh h "curl -H '\''Cookie: s=1'\'' https://u:pw@h/x?a=1"' && sh -c "TOKEN=\$T run --token 'a b' \" ; su --command='X_CRED=ab run' | env -S "A=1 run" \`
	for i := range len(command) + 1 {
		got := applyEdits(command[:i], shellEdits(command[:i], 1, false))
		words, want := shellWords(got), shellWords(command[:i])
		if len(words) != len(want) {
			t.Fatalf("the quoted %s is %s: %q, want the words %q", command[:i], got, words, want)
		}
		for k, w := range words {
			if w != want[k] && !strings.Contains(w, "[REDACTED]") {
				t.Errorf("the quoted %s is %s: %q, not %q", command[:i], got, w, want[k])
			}
		}
	}
}

// A command and the same command given to sh -c within a command written
// as one string hide the same secrets, whatever their length: the words
// of the second's shell command are the first's words as quoted.
func TestShellCommandWithinIsQuotedAsItsWords(t *testing.T) {
	t.Parallel()
	for _, command := range []string{
		`curl -fsS -H 'Authorization: Bearer b1' -H "X-Api-Key: k2" -H 'Accept: text/plain' https://u:p3@h.example/x?sig=s4`,
		`env -i DB_PASSWORD=p5 LOG_LEVEL=debug ./deliver --api-key=k6 --token t7 --verbose`,
		`grep -H 'Error: disk full' /var/log/app.log`,
		`notify --message 'msg=Deployment done' 'API_TOKEN=t8 sent'`,
	} {
		list, _ := asList(command)
		shell, _ := asList("sh -c '" + strings.ReplaceAll(command, "'", `'\''`) + "'")
		var words, sh []string
		if err := json.Unmarshal([]byte(list), &words); err != nil {
			t.Fatalf("%s: %v", list, err)
		}
		if err := json.Unmarshal([]byte(shell), &sh); err != nil || len(sh) != 3 {
			t.Fatalf("%s: %v", shell, err)
		}
		if got := shellWords(sh[2]); !slices.Equal(got, words) {
			t.Errorf("%s within sh -c is quoted\n%q, want the words of\n%q", command, got, words)
		}
	}
}
