package main

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// ask posts the call to the agent, HTTP/1.1 on its unix socket, and returns the agent's answer.
// The exchange is written by hand on the socket's system calls: net/http (TLS, HTTP/2, proxies)
// and even package net (its poller) cost more CPU at start-up than the whole call otherwise does.
func ask(s settings, body []byte) (answer, error) {
	deadline := time.Now().Add(time.Duration(s.TimeoutSeconds*float64(time.Second)) + grace)
	status, text, err := exchange(s.AgentSocket, deadline, body)
	if err != nil {
		return answer{}, err
	}
	if code, _, _ := strings.Cut(status, " "); code != "200" {
		return answer{}, fmt.Errorf("agent answered %s: %s", status, strings.TrimSpace(string(text)))
	}
	parsed, err := parseJSON(text)
	object, _ := parsed.(map[string]any)
	exitCode, isNumber := object["exitCode"].(float64)
	stdout, _ := object["stdout"].(string)
	if err == nil && !isNumber {
		err = errors.New(`no "exitCode"`)
	}
	if err != nil {
		return answer{}, fmt.Errorf("agent answered something else than a CNI answer: %w", err)
	}
	return answer{ExitCode: int(exitCode), Stdout: stdout}, nil
}

// exchange connects, sends the request and reads until the response is whole. The socket is a
// blocking one: before each blocking call, its timeout is set to what is left until the deadline.
func exchange(path string, deadline time.Time, body []byte) (status string, text []byte, err error) {
	fd, err := syscall.Socket(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return "", nil, err
	}
	defer syscall.Close(fd)
	// option: SO_SNDTIMEO (connect, which waits on a full backlog, and send) or SO_RCVTIMEO.
	within := func(option int, call func() (int, error)) (int, error) {
		for {
			left := time.Until(deadline)
			if left <= 0 {
				return 0, errTimeout
			}
			tv := syscall.NsecToTimeval(int64(left))
			if err := syscall.SetsockoptTimeval(fd, syscall.SOL_SOCKET, option, &tv); err != nil {
				return 0, err
			}
			switch n, err := call(); err {
			case syscall.EINTR: // not restarted by the kernel when the socket has a timeout
			case syscall.EAGAIN, syscall.EINPROGRESS:
				return 0, errTimeout
			default:
				return n, err
			}
		}
	}
	if _, err := within(syscall.SO_SNDTIMEO, func() (int, error) {
		return 0, syscall.Connect(fd, &syscall.SockaddrUnix{Name: path})
	}); err != nil {
		return "", nil, fmt.Errorf("dial unix %s: connect: %w", path, err)
	}
	// Connection: close: the agent may also end its answer by closing the connection.
	request := []byte("POST /cni HTTP/1.1\r\nHost: netlease-agent\r\nContent-Type: application/json\r\n" +
		"Content-Length: " + strconv.Itoa(len(body)) + "\r\nConnection: close\r\n\r\n")
	for request = append(request, body...); len(request) > 0; {
		// MSG_NOSIGNAL: an agent gone mid-request is an error (EPIPE), not a SIGPIPE.
		n, err := within(syscall.SO_SNDTIMEO, func() (int, error) {
			return syscall.SendmsgN(fd, request, nil, nil, syscall.MSG_NOSIGNAL)
		})
		if err != nil {
			return "", nil, fmt.Errorf("sending to the agent: %w", err)
		}
		request = request[n:]
	}
	response := make([]byte, 0, 4096)
	for {
		if len(response) == cap(response) {
			response = append(response, 0)[:len(response)] // more room
		}
		n, err := within(syscall.SO_RCVTIMEO, func() (int, error) {
			return syscall.Read(fd, response[len(response):cap(response)])
		})
		if err != nil {
			return "", nil, fmt.Errorf("reading the agent's answer: %w", err)
		}
		response = response[:len(response)+n]
		status, text, err = parseResponse(response, n == 0)
		if err != errIncomplete || n == 0 {
			return status, text, err
		}
	}
}

var errTimeout = errors.New("timed out")

var errIncomplete = errors.New("the agent's answer was cut short")

// parseResponse splits an HTTP/1.1 response into its status ("200 OK") and body, or says it is
// incomplete (errIncomplete) so far. The body is framed by Content-Length (what node:http sends
// for end(body)), by chunked encoding, or else by the end of the connection (closed); an answer
// cut short is never taken for a CNI result.
func parseResponse(raw []byte, closed bool) (status string, body []byte, err error) {
	head, rest, ok := bytes.Cut(raw, []byte("\r\n\r\n"))
	if !ok {
		return "", nil, errIncomplete
	}
	lines := strings.Split(string(head), "\r\n")
	version, status, _ := strings.Cut(lines[0], " ")
	if !strings.HasPrefix(version, "HTTP/1.") || len(status) < 3 {
		return "", nil, fmt.Errorf("agent answered something else than HTTP: %.60q", lines[0])
	}
	length := -1
	for _, line := range lines[1:] {
		name, value, _ := strings.Cut(line, ":")
		value = strings.TrimSpace(value)
		switch {
		case strings.EqualFold(name, "Transfer-Encoding") && strings.EqualFold(value, "chunked"):
			body, err = unchunk(rest)
			return status, body, err
		case strings.EqualFold(name, "Content-Length"):
			if length, err = strconv.Atoi(value); err != nil || length < 0 {
				return "", nil, fmt.Errorf("agent answered a bad Content-Length %.30q", value)
			}
		}
	}
	switch {
	case length >= 0 && len(rest) >= length:
		return status, rest[:length], nil
	case length < 0 && closed:
		return status, rest, nil
	}
	return "", nil, errIncomplete
}

// unchunk decodes a chunked body: chunks of a hex size line, data and CRLF, up to a size 0.
func unchunk(rest []byte) ([]byte, error) {
	var body []byte
	for {
		line, after, ok := bytes.Cut(rest, []byte("\r\n"))
		if !ok {
			return nil, errIncomplete
		}
		hex, _, _ := bytes.Cut(line, []byte(";")) // chunk extensions are ignored
		size, err := strconv.ParseUint(string(bytes.TrimSpace(hex)), 16, 31)
		if err != nil {
			return nil, fmt.Errorf("agent answered a bad chunk size %.30q", line)
		}
		if size == 0 {
			return body, nil // trailers, if any, are not needed
		}
		if uint64(len(after)) < size+2 {
			return nil, errIncomplete
		}
		body, rest = append(body, after[:size]...), after[size+2:]
	}
}
