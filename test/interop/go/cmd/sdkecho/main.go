// Command sdkecho is an SDK peer for the router interop suite: `host` binds a service and echoes every
// message back prefixed with "echo:", `dial` connects to it through an edge router, exchanges N messages,
// checks every answer and closes. Each prints one line when done ("bound", "ok <n>") and exits non-zero on
// any error, so the Node suite can drive it.
package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"strconv"
	"time"

	"github.com/openziti/sdk-golang/ziti"
)

func fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, format+"\n", args...)
	os.Exit(1)
}

func context(identityFile string) ziti.Context {
	cfg, err := ziti.NewConfigFromFile(identityFile)
	if err != nil {
		fail("load identity: %v", err)
	}
	ctx, err := ziti.NewContext(cfg)
	if err != nil {
		fail("new context: %v", err)
	}
	return ctx
}

func host(identityFile, service string) {
	ctx := context(identityFile)
	listener, err := ctx.Listen(service)
	if err != nil {
		fail("listen: %v", err)
	}
	// Listen returns once the router accepted the bind; a dial can still race the controller's terminator.
	deadline := time.Now().Add(20 * time.Second)
	for {
		if terms, _, err := ctx.GetServiceTerminators(service, 0, 10); err == nil && len(terms) > 0 {
			break
		}
		if time.Now().After(deadline) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	fmt.Println("bound")
	for {
		conn, err := listener.Accept()
		if err != nil {
			fail("accept: %v", err)
		}
		go func() {
			defer conn.Close()
			reader := bufio.NewReader(conn)
			for {
				line, err := reader.ReadString('\n')
				if err == io.EOF {
					fmt.Println("peer closed")
					return
				}
				if err != nil {
					fmt.Fprintf(os.Stderr, "read: %v\n", err)
					return
				}
				if _, err := conn.Write([]byte("echo:" + line)); err != nil {
					fmt.Fprintf(os.Stderr, "write: %v\n", err)
					return
				}
			}
		}()
	}
}

func dial(identityFile, service string, count int) {
	ctx := context(identityFile)
	conn, err := ctx.Dial(service)
	if err != nil {
		fail("dial: %v", err)
	}
	reader := bufio.NewReader(conn)
	for i := 0; i < count; i++ {
		msg := fmt.Sprintf("message %d %s\n", i, time.Now().Format(time.RFC3339Nano))
		if _, err := conn.Write([]byte(msg)); err != nil {
			fail("write %d: %v", i, err)
		}
		_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
		answer, err := reader.ReadString('\n')
		if err != nil {
			fail("read %d: %v", i, err)
		}
		if answer != "echo:"+msg {
			fail("answer %d: got %q, want %q", i, answer, "echo:"+msg)
		}
	}
	if err := conn.Close(); err != nil {
		fail("close: %v", err)
	}
	ctx.Close()
	fmt.Printf("ok %d\n", count)
}

func main() {
	if len(os.Args) < 4 {
		fail("usage: sdkecho host <identity.json> <service> | dial <identity.json> <service> <count>")
	}
	switch os.Args[1] {
	case "host":
		host(os.Args[2], os.Args[3])
	case "dial":
		count := 10
		if len(os.Args) > 4 {
			n, err := strconv.Atoi(os.Args[4])
			if err != nil {
				fail("count: %v", err)
			}
			count = n
		}
		dial(os.Args[2], os.Args[3], count)
	default:
		fail("unknown mode %s", os.Args[1])
	}
}
