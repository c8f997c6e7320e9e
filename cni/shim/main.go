// The netlease CNI executable. The runtime execs it for every call on hosts that have no Node.js,
// so it does the least it can: it answers VERSION itself and passes every other call (the CNI_*
// environment and stdin) to the node agent over a unix socket, then prints the agent's answer
// with its exit code. When the agent does not answer, ADD and CHECK get error 11 naming the
// socket, STATUS gets 50, and DEL is queued on disk (fsync'd) for the agent to apply when it
// starts, so no deletion is ever lost.
//
// Being exec'd per call, its cost is mostly start-up: it uses no net/http, no encoding/json and
// no crypto (see agent.go and json.go), which keeps it to little more than the Go runtime's own.
package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"
)

const (
	defaultSocket         = "/run/netlease/cni.sock"
	defaultQueue          = "/var/lib/netlease/cni-del-queue"
	defaultTimeoutSeconds = 30
	maxStdin              = 16 << 20
	// The agent reads a request of at most this much (worker/agent/cni-api.ts MAX_BODY_BYTES).
	// Quoting lengthens stdin (a \" is sent as \\\", a newline as \u000a), so the request is
	// measured, not stdin.
	maxRequest = 16 << 20
)

// A call's own budget is the network config's timeoutSeconds, which the agent enforces; the shim
// waits this much longer so the agent's answer, not the shim's deadline, decides. (A variable
// for the tests.)
var grace = 5 * time.Second

var supportedVersions = []string{"0.3.1", "0.4.0", "1.0.0", "1.1.0"}

// The verbs the agent answers; errors the shim can tell alone (a bad command, stdin that is not
// JSON) it answers itself, so they are never "try again later" nor queued.
var forwarded = map[string]bool{"ADD": true, "DEL": true, "CHECK": true, "GC": true, "STATUS": true}

// The fields the shim needs: where the agent listens and where DELs wait. netlease reads its
// settings from the top level as the main plugin and from `ipam` when another plugin delegates.
type settings struct {
	AgentSocket    string
	DeleteQueue    string
	TimeoutSeconds float64
	// Why the shim cannot use AgentSocket or DeleteQueue as given ("" when it can): it answers
	// that itself (error 7), as the agent would, rather than call or queue somewhere else.
	Problem string
}

type netConf struct {
	CNIVersion string
	Type       string
	// Empty: no stdin at all. Object: the top level is a JSON object (a config at all).
	Empty, Object bool
	settings
	IPAM *settings
}

// A unix socket path fits sun_path (108 bytes with the NUL); the agent's rule for both paths.
const maxPathBytes = 107

type answer struct {
	ExitCode int
	Stdout   string
}

func main() {
	os.Exit(run(os.Stdin, os.Stdout))
}

func run(in io.Reader, out io.Writer) int {
	stdin, err := io.ReadAll(io.LimitReader(in, maxStdin+1))
	if err != nil || len(stdin) > maxStdin {
		return fail(out, "1.1.0", 5, "bad-request", "cannot read stdin", fmt.Sprint(err))
	}
	conf, decodeErr := decode(stdin)
	version := conf.CNIVersion
	if version == "" {
		version = "1.1.0"
	}
	command := os.Getenv("CNI_COMMAND")
	switch {
	case command == "VERSION":
		return answerVersion(out, stdin, version, decodeErr)
	case command == "":
		return fail(out, version, 4, "bad-request", "missing environment variable CNI_COMMAND", "")
	case !forwarded[command]:
		return fail(out, version, 4, "bad-request", fmt.Sprintf("invalid CNI_COMMAND %q", command),
			"expected one of ADD, DEL, CHECK, VERSION, GC, STATUS")
	case decodeErr != nil:
		return fail(out, version, 6, "bad-request", "failed to decode network configuration", decodeErr.Error())
	case conf.Empty:
		return fail(out, version, 6, "bad-request", "failed to decode network configuration", "no network configuration on stdin")
	case !conf.Object:
		return fail(out, version, 7, "invalid-config", "invalid network configuration: expected a JSON object", "")
	}
	s := conf.effective()
	if s.Problem != "" {
		return fail(out, version, 7, "invalid-config", "invalid network configuration: "+s.Problem, "")
	}
	request := encodeCall(os.Environ(), stdin)
	if len(request) > maxRequest {
		return fail(out, version, 5, "bad-request", "cannot pass the call to the node agent",
			fmt.Sprintf("%d bytes once encoded; the agent reads at most %d", len(request), maxRequest))
	}
	got, err := ask(s, request)
	if err == nil {
		io.WriteString(out, got.Stdout)
		return got.ExitCode
	}
	return agentDown(out, command, version, s, request, err)
}

// decode fails only when stdin is not JSON; fields of the wrong type are the agent's to report
// (error 7 naming the field), so here they just fall back to defaults.
func decode(stdin []byte) (netConf, error) {
	var conf netConf
	if len(bytes.TrimSpace(stdin)) == 0 {
		conf.Empty = true
		return conf, nil
	}
	parsed, err := parseJSON(stdin)
	if err != nil {
		return conf, err
	}
	top, isObject := parsed.(map[string]any)
	conf.Object = isObject
	conf.CNIVersion, _ = top["cniVersion"].(string)
	conf.Type, _ = top["type"].(string)
	conf.settings = settingsOf(top, "")
	if ipam, ok := top["ipam"].(map[string]any); ok {
		s := settingsOf(ipam, "ipam.")
		conf.IPAM = &s
	}
	return conf, nil
}

// settingsOf reads the shim's settings from object, whose fields are named prefix+name in errors.
func settingsOf(object map[string]any, prefix string) settings {
	var s settings
	var socketProblem, queueProblem string
	s.AgentSocket, socketProblem = pathSetting(object, prefix, "agentSocket")
	s.DeleteQueue, queueProblem = pathSetting(object, prefix, "deleteQueue")
	s.Problem = strings.Join(slices.DeleteFunc([]string{socketProblem, queueProblem}, func(p string) bool { return p == "" }), "; ")
	s.TimeoutSeconds, _ = object["timeoutSeconds"].(float64)
	return s
}

// pathSetting reads an absolute path the shim uses itself: "" when absent (the default), else
// the path or why it cannot be used.
func pathSetting(object map[string]any, prefix, name string) (path, problem string) {
	value, present := object[name]
	if !present {
		return "", ""
	}
	path, ok := value.(string)
	switch {
	case !ok:
		return "", prefix + name + ": expected a string"
	case !strings.HasPrefix(path, "/"):
		return "", prefix + name + ": must be an absolute path"
	case len(path) > maxPathBytes:
		return "", fmt.Sprintf("%s%s: must be at most %d bytes (a unix socket path)", prefix, name, maxPathBytes)
	}
	return path, ""
}

// The settings that apply: from `ipam` when netlease is a delegated IPAM plugin, with defaults.
func (c netConf) effective() settings {
	s := c.settings
	if c.Type != "netlease" && c.IPAM != nil {
		s = *c.IPAM
	}
	if s.AgentSocket == "" {
		s.AgentSocket = defaultSocket
	}
	if s.DeleteQueue == "" {
		s.DeleteQueue = defaultQueue
	}
	if s.TimeoutSeconds <= 0 || s.TimeoutSeconds > 600 {
		s.TimeoutSeconds = defaultTimeoutSeconds
	}
	return s
}

func answerVersion(out io.Writer, stdin []byte, version string, decodeErr error) int {
	if decodeErr != nil {
		return fail(out, "1.1.0", 6, "bad-request", "failed to decode network configuration", decodeErr.Error())
	}
	if len(bytes.TrimSpace(stdin)) > 0 && !supported(version) {
		return fail(out, version, 1, "incompatible-version", fmt.Sprintf("incompatible CNI version %q", version),
			"supported: "+strings.Join(supportedVersions, ", "))
	}
	text := quote([]byte(`{"cniVersion":`), version)
	text = append(text, `,"supportedVersions":["`+strings.Join(supportedVersions, `","`)+`"]}`...)
	return emit(out, text, 0)
}

func supported(version string) bool {
	for _, v := range supportedVersions {
		if v == version {
			return true
		}
	}
	return false
}

// encodeCall makes the agent's request, {"env":{...},"stdin":"..."}: the call's CNI_* variables
// (nothing else of the runtime's environment) and stdin. The queue stores the same text.
func encodeCall(environ []string, stdin []byte) []byte {
	body := make([]byte, 0, len(stdin)+1024)
	body = append(body, `{"env":{`...)
	seen := map[string]bool{}
	for i := len(environ) - 1; i >= 0; i-- { // the last of a name wins, as in os.Getenv
		name, value, ok := strings.Cut(environ[i], "=")
		if !ok || !strings.HasPrefix(name, "CNI_") || seen[name] {
			continue
		}
		if len(seen) > 0 {
			body = append(body, ',')
		}
		seen[name] = true
		body = append(quote(body, name), ':')
		body = quote(body, value)
	}
	body = append(body, `},"stdin":`...)
	return append(quote(body, string(stdin)), '}')
}

func agentDown(out io.Writer, command, version string, s settings, request []byte, cause error) int {
	switch command {
	case "DEL":
		if err := enqueue(s.DeleteQueue, request); err != nil {
			return fail(out, version, 11, "no-node-agent", fmt.Sprintf("netlease node agent at %s does not answer and the DEL cannot be queued in %s", s.AgentSocket, s.DeleteQueue), err.Error())
		}
		return 0
	case "STATUS":
		return fail(out, version, 50, "no-node-agent", fmt.Sprintf("netlease is not available: the node agent at %s does not answer", s.AgentSocket), cause.Error())
	default:
		return fail(out, version, 11, "no-node-agent", fmt.Sprintf("netlease node agent at %s does not answer", s.AgentSocket), cause.Error())
	}
}

// fail prints a CNI error: {"cniVersion","code","msg","details"}, details left out when empty. The
// msg starts with the refusal's reason, as the agent's do (cni/refusals.ts is the table of them).
func fail(out io.Writer, version string, code int, reason, msg, details string) int {
	text := quote([]byte(`{"cniVersion":`), version)
	text = append(text, `,"code":`+strconv.Itoa(code)+`,"msg":`...)
	text = quote(text, reason+": "+msg)
	if details != "" {
		text = quote(append(text, `,"details":`...), details)
	}
	return emit(out, append(text, '}'), 1)
}

func emit(out io.Writer, text []byte, exitCode int) int {
	out.Write(append(text, '\n'))
	return exitCode
}
