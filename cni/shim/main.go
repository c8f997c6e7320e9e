// The netlease CNI executable. The runtime execs it for every call on hosts that have no Node.js,
// so it does the least it can: it answers VERSION itself and passes every other call (the CNI_*
// environment and stdin) to the node agent over a unix socket, then prints the agent's answer
// with its exit code. When the agent does not answer, ADD and CHECK get error 11 naming the
// socket, STATUS gets 50, and DEL is queued on disk (fsync'd) for the agent to apply when it
// starts, so no deletion is ever lost.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"time"
)

const (
	defaultSocket = "/run/netlease/cni.sock"
	defaultQueue  = "/var/lib/netlease/cni-del-queue"
	// A call's own budget is the network config's timeoutSeconds, which the agent enforces; the
	// shim waits a little longer so the agent's answer, not the shim's deadline, decides.
	defaultTimeoutSeconds = 30
	graceSeconds          = 5
	maxStdin              = 16 << 20
)

var supportedVersions = []string{"0.3.1", "0.4.0", "1.0.0", "1.1.0"}

// The verbs the agent answers; errors the shim can tell alone (a bad command, stdin that is not
// JSON) it answers itself, so they are never "try again later" nor queued.
var forwarded = map[string]bool{"ADD": true, "DEL": true, "CHECK": true, "GC": true, "STATUS": true}

// The fields the shim needs: where the agent listens and where DELs wait. netlease reads its
// settings from the top level as the main plugin and from `ipam` when another plugin delegates.
type settings struct {
	AgentSocket    string  `json:"agentSocket"`
	DeleteQueue    string  `json:"deleteQueue"`
	TimeoutSeconds float64 `json:"timeoutSeconds"`
}

type netConf struct {
	CNIVersion string `json:"cniVersion"`
	Type       string `json:"type"`
	settings
	IPAM *settings `json:"ipam"`
}

// One CNI call as the agent receives it: the same in the queue.
type call struct {
	Env   map[string]string `json:"env"`
	Stdin string            `json:"stdin"`
}

type answer struct {
	ExitCode int    `json:"exitCode"`
	Stdout   string `json:"stdout"`
}

type cniError struct {
	CNIVersion string `json:"cniVersion"`
	Code       int    `json:"code"`
	Msg        string `json:"msg"`
	Details    string `json:"details,omitempty"`
}

func main() {
	os.Exit(run(os.Stdin, os.Stdout))
}

func run(in io.Reader, out io.Writer) int {
	stdin, err := io.ReadAll(io.LimitReader(in, maxStdin+1))
	if err != nil || len(stdin) > maxStdin {
		return fail(out, "1.1.0", 5, "cannot read stdin", fmt.Sprint(err))
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
		return fail(out, version, 4, "missing environment variable CNI_COMMAND", "")
	case !forwarded[command]:
		return fail(out, version, 4, fmt.Sprintf("invalid CNI_COMMAND %q", command),
			"expected one of ADD, DEL, CHECK, VERSION, GC, STATUS")
	case decodeErr != nil:
		return fail(out, version, 6, "failed to decode network configuration", decodeErr.Error())
	}
	s := conf.effective()
	request := call{Env: cniEnv(), Stdin: string(stdin)}
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
		return conf, nil
	}
	var syntax any
	if err := json.Unmarshal(stdin, &syntax); err != nil {
		return conf, err
	}
	_ = json.Unmarshal(stdin, &conf)
	return conf, nil
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
		return fail(out, "1.1.0", 6, "failed to decode network configuration", decodeErr.Error())
	}
	if len(bytes.TrimSpace(stdin)) > 0 && !supported(version) {
		return fail(out, version, 1, fmt.Sprintf("incompatible CNI version %q", version),
			"supported: "+strings.Join(supportedVersions, ", "))
	}
	return emit(out, map[string]any{"cniVersion": version, "supportedVersions": supportedVersions}, 0)
}

func supported(version string) bool {
	for _, v := range supportedVersions {
		if v == version {
			return true
		}
	}
	return false
}

// The CNI_* variables of the call, and nothing else of the runtime's environment.
func cniEnv() map[string]string {
	env := map[string]string{}
	for _, kv := range os.Environ() {
		if name, value, ok := strings.Cut(kv, "="); ok && strings.HasPrefix(name, "CNI_") {
			env[name] = value
		}
	}
	return env
}

// ask posts the call to the agent: HTTP/1.1 on the unix socket, JSON both ways.
func ask(s settings, request call) (answer, error) {
	body, err := json.Marshal(request)
	if err != nil {
		return answer{}, err
	}
	timeout := time.Duration(s.TimeoutSeconds+graceSeconds) * time.Second
	client := &http.Client{
		Timeout: timeout,
		Transport: &http.Transport{
			DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
				var d net.Dialer
				return d.DialContext(ctx, "unix", s.AgentSocket)
			},
		},
	}
	response, err := client.Post("http://netlease-agent/cni", "application/json", bytes.NewReader(body))
	if err != nil {
		return answer{}, err
	}
	defer response.Body.Close()
	text, err := io.ReadAll(response.Body)
	if err != nil {
		return answer{}, err
	}
	if response.StatusCode != http.StatusOK {
		return answer{}, fmt.Errorf("agent answered %s: %s", response.Status, strings.TrimSpace(string(text)))
	}
	var got answer
	if err := json.Unmarshal(text, &got); err != nil {
		return answer{}, fmt.Errorf("agent answered something else than a CNI answer: %w", err)
	}
	return got, nil
}

func agentDown(out io.Writer, command, version string, s settings, request call, cause error) int {
	switch command {
	case "DEL":
		if err := enqueue(s.DeleteQueue, request); err != nil {
			return fail(out, version, 11, fmt.Sprintf("netlease node agent at %s does not answer and the DEL cannot be queued in %s", s.AgentSocket, s.DeleteQueue), err.Error())
		}
		return 0
	case "STATUS":
		return fail(out, version, 50, fmt.Sprintf("netlease is not available: the node agent at %s does not answer", s.AgentSocket), cause.Error())
	default:
		return fail(out, version, 11, fmt.Sprintf("netlease node agent at %s does not answer", s.AgentSocket), cause.Error())
	}
}

func fail(out io.Writer, version string, code int, msg, details string) int {
	return emit(out, cniError{CNIVersion: version, Code: code, Msg: msg, Details: details}, 1)
}

func emit(out io.Writer, value any, exitCode int) int {
	text, _ := json.Marshal(value)
	out.Write(append(text, '\n'))
	return exitCode
}
