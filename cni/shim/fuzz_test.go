package main

// Go's native fuzzing of the shim's parsers (issue 18). `go test` runs the seeds below (and any
// failing input Go saved in testdata/fuzz); `go test -run='^$' -fuzz='^FuzzDecode$'` searches
// further, as `npm run fuzz` does for each target.

import (
	"bytes"
	"encoding/json"
	"math"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

var seedConfs = []string{
	``, `null`, `[]`, `{}`, `{"cniVersion":"1.1.0","type":"netlease","agentSocket":"/run/a.sock","deleteQueue":"/q","timeoutSeconds":3}`,
	`{"type":"bridge","ipam":{"type":"netlease","agentSocket":"relative","timeoutSeconds":1e999}}`,
	`{"type":"netlease","agentSocket":5,"deleteQueue":null,"timeoutSeconds":-1,"ipam":[]}`,
	`{"agentSocket":"/` + strings.Repeat("é", 60) + `","cniVersion":"\ud800"}`,
}

// decode and effective: whatever stdin is, the settings the shim acts on are usable ones: an
// absolute path of at most 107 bytes for the socket and the queue, a budget within (0, 600] s,
// and a deadline that does not overflow; or a problem the shim answers with.
func FuzzDecode(f *testing.F) {
	for _, conf := range seedConfs {
		f.Add([]byte(conf))
	}
	f.Fuzz(func(t *testing.T, stdin []byte) {
		conf, err := decode(stdin)
		if err != nil {
			return // not JSON: answered with 6 (FuzzParseJSON checks what is JSON)
		}
		if conf.Empty != (len(bytes.TrimSpace(stdin)) == 0) {
			t.Fatalf("%q: Empty %v", stdin, conf.Empty)
		}
		s := conf.effective()
		if s.Problem != "" {
			return
		}
		for name, path := range map[string]string{"socket": s.AgentSocket, "queue": s.DeleteQueue} {
			if !strings.HasPrefix(path, "/") || len(path) > maxPathBytes {
				t.Fatalf("%q: the %s %q is not a usable path", stdin, name, path)
			}
		}
		if !(s.TimeoutSeconds > 0 && s.TimeoutSeconds <= 600) || math.IsNaN(s.TimeoutSeconds) {
			t.Fatalf("%q: timeout %v", stdin, s.TimeoutSeconds)
		}
		if wait := time.Duration(s.TimeoutSeconds*float64(time.Second)) + grace; wait <= grace || wait > 606*time.Second {
			t.Fatalf("%q: waits %v", stdin, wait)
		}
		if utf8.Valid(stdin) {
			agreesOnSettings(t, stdin, s)
		}
	})
}

// agreesOnSettings: the socket and queue are those encoding/json reads where netlease's settings are.
func agreesOnSettings(t *testing.T, stdin []byte, s settings) {
	var top map[string]any
	if json.Unmarshal(stdin, &top) != nil {
		return // not an object: the shim refused it (Problem) or defaulted
	}
	source := top
	if ipam, ok := top["ipam"].(map[string]any); ok && top["type"] != "netlease" {
		source = ipam
	}
	for name, got := range map[string]string{"agentSocket": s.AgentSocket, "deleteQueue": s.DeleteQueue} {
		if want, ok := source[name].(string); ok && want != got {
			t.Fatalf("%q: %s %q, encoding/json reads %q", stdin, name, got, want)
		}
	}
}

// encodeCall: the agent's request is JSON that gives back every CNI_ variable (the last of a
// name) and stdin as they were, and nothing else of the environment.
func FuzzEncodeCall(f *testing.F) {
	f.Add("CNI_COMMAND=ADD\x00CNI_ARGS=K8S_POD_UID=a;b=c\x00PATH=/bin\x00CNI_COMMAND=DEL", []byte(`{"a":"\u0000"}`))
	f.Add("CNI_\x00=\x00CNI_X=\"\\\x01</script>", []byte("\xff\xfe"))
	f.Fuzz(func(t *testing.T, environ string, stdin []byte) {
		entries := strings.Split(environ, "\x00")
		body := encodeCall(entries, stdin)
		var call struct {
			Env   map[string]string `json:"env"`
			Stdin string            `json:"stdin"`
		}
		if err := json.Unmarshal(body, &call); err != nil {
			t.Fatalf("%q %q: the request is not JSON: %v", environ, stdin, err)
		}
		if !utf8.ValidString(environ) || !utf8.Valid(stdin) {
			return // bytes that are not UTF-8 are passed on as they are; encoding/json replaces them
		}
		want := map[string]string{}
		for _, entry := range entries {
			if name, value, ok := strings.Cut(entry, "="); ok && strings.HasPrefix(name, "CNI_") {
				want[name] = value
			}
		}
		if call.Stdin != string(stdin) || len(call.Env) != len(want) {
			t.Fatalf("%q %q: the agent would read %q", environ, stdin, body)
		}
		for name, value := range want {
			if call.Env[name] != value {
				t.Fatalf("%q: %s is %q, not %q", environ, name, call.Env[name], value)
			}
		}
	})
}

// parseResponse: never a panic, and an answer read before its end is never taken for a whole
// one: whatever a prefix of the bytes parses to, the whole response parses to the same.
func FuzzParseResponse(f *testing.F) {
	f.Add([]byte("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello"), true)
	f.Add([]byte("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n"), false)
	f.Add([]byte("HTTP/1.1 400 Bad\r\n\r\nto the end"), true)
	f.Fuzz(func(t *testing.T, raw []byte, closed bool) {
		status, body, err := parseResponse(raw, closed)
		if err == nil && (len(status) < 3 || len(body) > len(raw)) {
			t.Fatalf("%q: status %q, body of %d bytes", raw, status, len(body))
		}
		for cut := 0; cut < len(raw); cut++ {
			early, earlyBody, earlyErr := parseResponse(raw[:cut], false)
			if earlyErr == nil && (err != nil || early != status || !bytes.Equal(earlyBody, body)) {
				t.Fatalf("%q: the first %d bytes read as %q %q, the whole as %q %q (%v)", raw, cut, early, earlyBody, status, body, err)
			}
		}
	})
}

// The answers the shim gives alone (VERSION, a bad command, a config it cannot use): one line of
// JSON, a version result or a CNI error with the spec's code, in the version the call asked for.
func FuzzShimAnswers(f *testing.F) {
	for _, command := range []string{"VERSION", "", "add", "ADD"} {
		for _, conf := range seedConfs {
			f.Add(command, []byte(conf))
		}
	}
	f.Fuzz(func(t *testing.T, command string, stdin []byte) {
		conf, decodeErr := decode(stdin)
		if forwarded[command] && decodeErr == nil && !conf.Empty && conf.Object && conf.effective().Problem == "" {
			t.Skip("the shim would call the agent (or queue a DEL) at the paths stdin names")
		}
		if strings.ContainsRune(command, 0) {
			t.Skip("an environment cannot hold NUL")
		}
		t.Setenv("CNI_COMMAND", command)
		var out bytes.Buffer
		code := run(bytes.NewReader(stdin), &out)
		var answer struct {
			CNIVersion        *string
			Code              int
			Msg               string
			SupportedVersions []string
		}
		text := out.Bytes()
		if bytes.Count(text, []byte("\n")) != 1 || !bytes.HasSuffix(text, []byte("\n")) || json.Unmarshal(text, &answer) != nil {
			t.Fatalf("%q %q: not one line of JSON: %q", command, stdin, text)
		}
		switch {
		case answer.CNIVersion == nil:
			t.Fatalf("%q %q: no cniVersion: %q", command, stdin, text)
		case code == 0 && (command != "VERSION" || len(answer.SupportedVersions) == 0):
			t.Fatalf("%q %q: exit 0 with %q", command, stdin, text)
		case code == 1 && (answer.Msg == "" || !slices.Contains([]int{1, 4, 6, 7}, answer.Code)):
			t.Fatalf("%q %q: error %q", command, stdin, text)
		case code != 0 && code != 1:
			t.Fatalf("%q %q: exit %d", command, stdin, code)
		}
		if want := conf.CNIVersion; decodeErr == nil && want != "" && utf8.ValidString(want) && *answer.CNIVersion != want {
			t.Fatalf("%q %q: answered in version %q, asked %q", command, stdin, *answer.CNIVersion, want)
		}
	})
}
