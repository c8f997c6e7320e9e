package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestParseResponse(t *testing.T) {
	const ok = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
	cases := []struct {
		raw     string
		closed  bool
		status  string
		body    string
		problem error // errIncomplete, or any other error when non-nil and not errIncomplete
	}{
		{raw: ok + "Content-Length: 5\r\n\r\nhello", status: "200 OK", body: "hello"},
		{raw: ok + "content-length: 5\r\n\r\nhello, and more", status: "200 OK", body: "hello"},
		{raw: ok + "Content-Length: 5\r\n\r\nhel", problem: errIncomplete},
		{raw: ok + "Content-Length: 5\r\n\r\nhel", closed: true, problem: errIncomplete},
		{raw: ok + "Content-Length: 5\r\n", problem: errIncomplete},
		{raw: "", closed: true, problem: errIncomplete},
		{raw: ok + "\r\nto the end", problem: errIncomplete},
		{raw: ok + "\r\nto the end", closed: true, status: "200 OK", body: "to the end"},
		{raw: ok + "Transfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n1;x=y\r\n!\r\n0\r\n\r\n", status: "200 OK", body: "hello!"},
		{raw: ok + "Transfer-Encoding: chunked\r\n\r\nA\r\n0123456789\r\n0\r\n", status: "200 OK", body: "0123456789"},
		{raw: ok + "Transfer-Encoding: chunked\r\n\r\n5\r\nhel", problem: errIncomplete},
		{raw: ok + "Transfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n", closed: true, problem: errIncomplete},
		{raw: ok + "Transfer-Encoding: chunked\r\n\r\nzz\r\n", problem: io.EOF},
		{raw: ok + "Content-Length: -1\r\n\r\n", problem: io.EOF},
		{raw: "HTTP/1.1 400 Bad Request\r\nContent-Length: 3\r\n\r\nbad", status: "400 Bad Request", body: "bad"},
		{raw: "SSH-2.0-OpenSSH\r\n\r\n", problem: io.EOF},
	}
	for _, c := range cases {
		status, body, err := parseResponse([]byte(c.raw), c.closed)
		switch {
		case c.problem == errIncomplete && err != errIncomplete,
			c.problem != nil && err == nil,
			c.problem == nil && (err != nil || status != c.status || string(body) != c.body):
			t.Errorf("%q (closed %v): got %q %q %v", c.raw, c.closed, status, body, err)
		}
	}
}

// agent serves the unix socket with answer(request), the raw bytes to write back, then closes.
func agent(t testing.TB, answer func(request *http.Request, body []byte) string) string {
	socket := filepath.Join(t.TempDir(), "agent.sock")
	listener, err := net.Listen("unix", socket)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { listener.Close() })
	go func() {
		for {
			conn, err := listener.Accept()
			if err != nil {
				return
			}
			request, err := http.ReadRequest(bufio.NewReader(conn))
			if err == nil {
				body, _ := io.ReadAll(request.Body)
				io.WriteString(conn, answer(request, body))
			}
			conn.Close()
		}
	}()
	return socket
}

type call struct {
	Env   map[string]string `json:"env"`
	Stdin string            `json:"stdin"`
}

// shim runs one call in-process as the runtime would: CNI_COMMAND and a network config.
func shim(t *testing.T, command, stdin string) (code int, out string) {
	t.Setenv("CNI_COMMAND", command)
	t.Setenv("CNI_CONTAINERID", "ctr-1")
	t.Setenv("CNI_IFNAME", "eth0")
	t.Setenv("NOT_CNI", "secret")
	var stdout bytes.Buffer
	code = run(strings.NewReader(stdin), &stdout)
	return code, stdout.String()
}

func conf(socket, queue string) string {
	return `{"cniVersion":"1.0.0","name":"n","type":"netlease","agentSocket":"` + socket +
		`","deleteQueue":"` + queue + `","timeoutSeconds":1}`
}

func cniError(t *testing.T, out string) (code int, msg string) {
	var e struct {
		Code int
		Msg  string
	}
	if err := json.Unmarshal([]byte(out), &e); err != nil {
		t.Fatalf("not a CNI error: %q", out)
	}
	return e.Code, e.Msg
}

func queued(t *testing.T, queue string) []call {
	names, _ := filepath.Glob(filepath.Join(queue, "*.json"))
	var calls []call
	for _, name := range names {
		var c call
		text, _ := os.ReadFile(name)
		if err := json.Unmarshal(text, &c); err != nil {
			t.Fatalf("queued %s: %v", name, err)
		}
		calls = append(calls, c)
	}
	return calls
}

func TestForwardsTheCallAndPrintsTheAnswer(t *testing.T) {
	var got call
	var path string
	socket := agent(t, func(request *http.Request, body []byte) string {
		path = request.Method + " " + request.URL.Path
		json.Unmarshal(body, &got)
		// as node:http frames response.end(body)
		answer := `{"exitCode":3,"stdout":"{\"a\":\"é\u00e9\\n\"}\n"}`
		return "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: " +
			strconv.Itoa(len(answer)) + "\r\nConnection: close\r\n\r\n" + answer
	})
	// Quotes, backslashes, escapes and control characters in stdin reach the agent as they are.
	stdin := strings.Replace(conf(socket, t.TempDir()), `"name":"n"`, "\"name\":\t\"\\\" \\\\ \\u0001 é\"\r\n", 1)
	code, out := shim(t, "ADD", stdin)
	if code != 3 || out != "{\"a\":\"éé\\n\"}\n" {
		t.Errorf("exit %d, stdout %q", code, out)
	}
	want := call{Env: map[string]string{"CNI_COMMAND": "ADD", "CNI_CONTAINERID": "ctr-1", "CNI_IFNAME": "eth0"}, Stdin: stdin}
	for _, kv := range os.Environ() { // CNI_* variables of the test's own environment, if any
		if name, value, _ := strings.Cut(kv, "="); strings.HasPrefix(name, "CNI_") {
			want.Env[name] = value
		}
	}
	if path != "POST /cni" || !reflect.DeepEqual(got, want) {
		t.Errorf("agent got %s %+v", path, got)
	}
}

func TestChunkedAnswer(t *testing.T) {
	socket := agent(t, func(*http.Request, []byte) string {
		return "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" +
			"10\r\n{\"exitCode\":0,\"s\r\n" + "e\r\ntdout\":\"done\"}\r\n0\r\n\r\n"
	})
	if code, out := shim(t, "CHECK", conf(socket, t.TempDir())); code != 0 || out != "done" {
		t.Errorf("exit %d, stdout %q", code, out)
	}
}

// A cut-short or wrong answer is the agent not answering: ADD gets 11, DEL is queued.
func TestBadAnswers(t *testing.T) {
	for name, answer := range map[string]string{
		"truncated":    "HTTP/1.1 200 OK\r\nContent-Length: 40\r\n\r\n{\"exitCode\":0,",
		"headers only": "HTTP/1.1 200 OK\r\nContent-Le",
		"nothing":      "",
		"not json":     "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello",
		"not answer":   "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}",
		"status 400":   "HTTP/1.1 400 Bad Request\r\nContent-Length: 14\r\n\r\nPOST /cni only",
	} {
		t.Run(name, func(t *testing.T) {
			socket := agent(t, func(*http.Request, []byte) string { return answer })
			queue := filepath.Join(t.TempDir(), "queue")
			code, out := shim(t, "ADD", conf(socket, queue))
			if errCode, msg := cniError(t, out); code != 1 || errCode != 11 || !strings.Contains(msg, socket) {
				t.Errorf("ADD: exit %d, %s", code, out)
			}
			code, out = shim(t, "DEL", conf(socket, queue))
			if calls := queued(t, queue); code != 0 || out != "" || len(calls) != 1 || calls[0].Env["CNI_COMMAND"] != "DEL" {
				t.Errorf("DEL: exit %d, stdout %q, queued %+v", code, out, calls)
			}
		})
	}
}

func TestAgentDown(t *testing.T) {
	dir := t.TempDir()
	socket, queue := filepath.Join(dir, "no-agent.sock"), filepath.Join(dir, "queue")
	for command, want := range map[string]int{"ADD": 11, "CHECK": 11, "STATUS": 50} {
		code, out := shim(t, command, conf(socket, queue))
		errCode, msg := cniError(t, out)
		if code != 1 || errCode != want || !strings.HasPrefix(msg, "no-node-agent: ") || !strings.Contains(msg, socket) {
			t.Errorf("%s: exit %d, %s", command, code, out)
		}
	}
	stdin := conf(socket, queue)
	for i := 0; i < 2; i++ {
		if code, out := shim(t, "DEL", stdin); code != 0 || out != "" {
			t.Errorf("DEL: exit %d, stdout %q", code, out)
		}
	}
	calls := queued(t, queue)
	if len(calls) != 2 || calls[0].Stdin != stdin || calls[0].Env["CNI_IFNAME"] != "eth0" || calls[0].Env["NOT_CNI"] != "" {
		t.Errorf("queued %+v", calls)
	}
	// As the delegated IPAM plugin, the settings come from `ipam`.
	ipam := `{"cniVersion":"0.4.0","type":"bridge","ipam":{"type":"netlease","agentSocket":"/nowhere/ipam.sock"}}`
	if _, out := shim(t, "ADD", ipam); !strings.Contains(out, "/nowhere/ipam.sock") || !strings.Contains(out, `"cniVersion":"0.4.0"`) {
		t.Errorf("ADD as IPAM: %s", out)
	}
}

func TestTimeout(t *testing.T) {
	defer func(saved time.Duration) { grace = saved }(grace)
	grace = 0
	socket := filepath.Join(t.TempDir(), "mute.sock")
	listener, err := net.Listen("unix", socket) // accepts (backlog) but never answers
	if err != nil {
		t.Fatal(err)
	}
	defer listener.Close()
	started := time.Now()
	code, out := shim(t, "ADD", strings.Replace(conf(socket, t.TempDir()), `"timeoutSeconds":1`, `"timeoutSeconds":0.3`, 1))
	if errCode, _ := cniError(t, out); code != 1 || errCode != 11 || !strings.Contains(out, "timed out") {
		t.Errorf("exit %d, %s", code, out)
	}
	if took := time.Since(started); took < 250*time.Millisecond || took > 2*time.Second {
		t.Errorf("gave up after %v, not 0.3s", took)
	}
}

func TestAnsweredByTheShim(t *testing.T) {
	cases := []struct{ command, stdin, want string }{
		{"VERSION", `{"cniVersion":"0.4.0"}`, `{"cniVersion":"0.4.0","supportedVersions":["0.3.1","0.4.0","1.0.0","1.1.0"]}`},
		{"VERSION", ``, `{"cniVersion":"1.1.0","supportedVersions":["0.3.1","0.4.0","1.0.0","1.1.0"]}`},
		{"VERSION", `{"cniVersion":"9.9.9"}`, `{"cniVersion":"9.9.9","code":1,"msg":"incompatible-version: incompatible CNI version \"9.9.9\"","details":"supported: 0.3.1, 0.4.0, 1.0.0, 1.1.0"}`},
		{"VERSION", `{"cniVersion":`, `{"cniVersion":"1.1.0","code":6,"msg":"bad-request: failed to decode network configuration","details":"unexpected end of JSON input"}`},
		{"", `{}`, `{"cniVersion":"1.1.0","code":4,"msg":"bad-request: missing environment variable CNI_COMMAND"}`},
		{"FOO", `{"cniVersion":"1.0.0"}`, `{"cniVersion":"1.0.0","code":4,"msg":"bad-request: invalid CNI_COMMAND \"FOO\"","details":"expected one of ADD, DEL, CHECK, VERSION, GC, STATUS"}`},
		{"DEL", `not json`, `{"cniVersion":"1.1.0","code":6,"msg":"bad-request: failed to decode network configuration","details":"invalid character 'o' in literal null (expecting 'u')"}`},
	}
	for _, c := range cases {
		code, out := shim(t, c.command, c.stdin)
		wantCode := 1
		if strings.Contains(c.want, "supportedVersions") {
			wantCode = 0
		}
		if c.command == "DEL" { // the details are the parser's own words
			out = out[:strings.Index(out, `"details"`)]
			c.want = c.want[:strings.Index(c.want, `"details"`)]
		}
		if code != wantCode || strings.TrimSuffix(out, "\n") != c.want {
			t.Errorf("%s %q: exit %d, %s", c.command, c.stdin, code, out)
		}
	}
}

// Calls and answers larger than a socket buffer go through whole.
func TestLargeCallAndAnswer(t *testing.T) {
	var got call
	stdout := strings.Repeat("a", 3<<20)
	socket := agent(t, func(_ *http.Request, body []byte) string {
		json.Unmarshal(body, &got)
		answer := `{"exitCode":0,"stdout":"` + stdout + `"}`
		return "HTTP/1.1 200 OK\r\nContent-Length: " + strconv.Itoa(len(answer)) + "\r\n\r\n" + answer
	})
	stdin := strings.Replace(conf(socket, t.TempDir()), `"name":"n"`, `"name":"`+strings.Repeat("n", 5<<20)+`"`, 1)
	if code, out := shim(t, "ADD", stdin); code != 0 || out != stdout || got.Stdin != stdin {
		t.Errorf("exit %d, stdout of %d bytes, the agent got %d bytes of stdin", code, len(out), len(got.Stdin))
	}
}

// An agent that closes the connection unread: an error (EPIPE or ECONNRESET), not a SIGPIPE.
func TestAgentHangsUp(t *testing.T) {
	socket := filepath.Join(t.TempDir(), "rude.sock")
	listener, err := net.Listen("unix", socket)
	if err != nil {
		t.Fatal(err)
	}
	defer listener.Close()
	go func() {
		for {
			conn, err := listener.Accept()
			if err != nil {
				return
			}
			conn.Close()
		}
	}()
	stdin := strings.Replace(conf(socket, t.TempDir()), `"name":"n"`, `"name":"`+strings.Repeat("n", 1<<20)+`"`, 1)
	if code, out := shim(t, "ADD", stdin); code != 1 || !strings.Contains(out, `"code":11`) {
		t.Errorf("exit %d, %.300s", code, out)
	}
}

// Found by fuzzing (issue 18): settings the shim uses itself, and a stdin that is no config,
// were passed over (the default socket, a relative path): ADD got "try again later" (11) and a
// DEL was queued in a relative directory. They are the request's mistakes: error 6 or 7 naming
// the field, and nothing queued.
func TestConfigsTheShimCannotUse(t *testing.T) {
	reasonOf := map[int]string{6: "bad-request", 7: "invalid-config"}
	dir := t.TempDir()
	wd, _ := os.Getwd()
	if err := os.Chdir(dir); err != nil { // where a relative queue would land
		t.Fatal(err)
	}
	defer os.Chdir(wd)
	cases := []struct {
		stdin string
		code  int
		msg   string
	}{
		{``, 6, "failed to decode network configuration"},
		{" \n", 6, "failed to decode network configuration"},
		{`null`, 7, "expected a JSON object"},
		{`[{"agentSocket":"/x.sock"}]`, 7, "expected a JSON object"},
		{`{"type":"netlease","agentSocket":"relative.sock","deleteQueue":"queue"}`, 7, "agentSocket: must be an absolute path; deleteQueue: must be an absolute path"},
		{`{"type":"netlease","agentSocket":5}`, 7, "agentSocket: expected a string"},
		{`{"type":"netlease","agentSocket":null}`, 7, "agentSocket: expected a string"},
		{`{"type":"netlease","agentSocket":"/` + strings.Repeat("s", 107) + `"}`, 7, "agentSocket: must be at most 107 bytes"},
		{`{"type":"bridge","ipam":{"type":"netlease","deleteQueue":"relative/queue"}}`, 7, "ipam.deleteQueue: must be an absolute path"},
	}
	for _, c := range cases {
		for _, command := range []string{"ADD", "DEL", "CHECK", "STATUS", "GC"} {
			code, out := shim(t, command, c.stdin)
			errCode, msg := cniError(t, out)
			if code != 1 || errCode != c.code || !strings.HasPrefix(msg, reasonOf[c.code]+": ") || !strings.Contains(msg, c.msg) {
				t.Errorf("%s %q: exit %d, %s", command, c.stdin, code, out)
			}
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("written in the working directory: %v", entries)
	}
}

// Found by fuzzing (issue 18): stdin within the shim's limit whose request is larger than the
// agent reads (quoting doubles each \") was refused by the agent with HTTP 400: ADD got "try
// again later" (11) and DEL was queued. The shim refuses it itself (5), and queues nothing.
func TestCallTooLargeForTheAgent(t *testing.T) {
	called := false
	socket := agent(t, func(*http.Request, []byte) string {
		called = true
		return "HTTP/1.1 400 Bad Request\r\nContent-Length: 7\r\n\r\ntoo big"
	})
	queue := filepath.Join(t.TempDir(), "queue")
	quotes := strings.Repeat(`\"`, 5<<20) // 10 MiB of stdin, 20 MiB once quoted
	stdin := strings.Replace(conf(socket, queue), `"name":"n"`, `"name":"`+quotes+`"`, 1)
	for _, command := range []string{"ADD", "DEL"} {
		code, out := shim(t, command, stdin)
		if errCode, msg := cniError(t, out); code != 1 || errCode != 5 || !strings.HasPrefix(msg, "bad-request: cannot pass the call to the node agent") {
			t.Errorf("%s: exit %d, %.300s", command, code, out)
		}
	}
	if calls := queued(t, queue); called || len(calls) != 0 {
		t.Errorf("the agent was called (%v), %d DELs queued", called, len(calls))
	}
}
