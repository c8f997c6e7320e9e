package main

import (
	"bytes"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// BenchmarkCPUPerCall measures what the runtime pays per call: the user+sys CPU of one run of
// the static binary (its rusage), against an agent that answers at once. SHIM=path measures
// another build (an older one, say) instead of building this one:
//
//	go test -run - -bench CPUPerCall -benchtime 200x [-count 3]
func BenchmarkCPUPerCall(b *testing.B) {
	bin := os.Getenv("SHIM")
	if bin == "" {
		bin = filepath.Join(b.TempDir(), "netlease")
		build := exec.Command("go", "build", "-trimpath", "-ldflags=-s -w", "-o", bin, ".")
		build.Env, build.Stderr = append(os.Environ(), "CGO_ENABLED=0"), os.Stderr
		if err := build.Run(); err != nil {
			b.Fatal(err)
		}
	}
	answer := `{"exitCode":0,"stdout":"{\"cniVersion\":\"1.0.0\",\"ips\":[{\"address\":\"10.0.0.2/24\"}]}\n"}`
	socket := agent(b, func(*http.Request, []byte) string {
		return "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: " +
			strconv.Itoa(len(answer)) + "\r\nConnection: close\r\n\r\n" + answer
	})
	stdin := []byte(conf(socket, b.TempDir()))
	for _, command := range []string{"VERSION", "ADD", "DEL"} {
		b.Run(command, func(b *testing.B) {
			var cpu time.Duration
			for i := 0; i < b.N; i++ {
				run := exec.Command(bin)
				run.Env = []string{"CNI_COMMAND=" + command, "CNI_CONTAINERID=ctr-1", "CNI_IFNAME=eth0",
					"CNI_NETNS=/var/run/netns/x", "CNI_ARGS=K8S_POD_NAME=a;K8S_POD_UID=u", "CNI_PATH=/opt/cni/bin"}
				run.Stdin, run.Stdout = bytes.NewReader(stdin), io.Discard
				if err := run.Run(); err != nil {
					b.Fatal(err)
				}
				usage := run.ProcessState.SysUsage().(*syscall.Rusage)
				cpu += time.Duration(usage.Utime.Nano() + usage.Stime.Nano())
			}
			b.ReportMetric(float64(cpu.Microseconds())/1000/float64(b.N), "cpu-ms/call")
		})
	}
}
