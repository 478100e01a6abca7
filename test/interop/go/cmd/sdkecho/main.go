// Command sdkecho is an SDK peer for the router interop suite: `host` binds a service and echoes every
// message back prefixed with "echo:", `dial` connects to it through an edge router, exchanges N messages,
// checks every answer and closes. Each prints one line when done ("bound", "ok <n>") and exits non-zero on
// any error, so the Node suite can drive it.
//
// Two more modes for tests that need one SDK context across several steps:
//
//   - `host` also reads `cost <n>` and `precedence <default|required|failed>` from stdin when it has one, and
//     changes its own terminator through the router as an SDK does (see hostCommands).
//   - `bind <identity.json> <service> <seconds>` binds like `host` but waits until the router has accepted the
//     bind (one established listener) and fails with the SDK's error if that does not happen within <seconds>;
//     then prints "bound" and echoes like `host`.
//   - `session <identity.json> <service>` authenticates, prints "ready", then reads commands from stdin, one a
//     line, and answers each with one line: `dial <n>` (a new connection, n messages, close: "ok <n>"), `open`
//     (a connection kept open: "opened"), `stickydial <n>` (as dial, passing the stickiness token the previous
//     stickydial got: "ok <n> <token>"), `exchange <n> [delayMs]` (n messages on the open connection, with an
//     optional pause between them: "ok <n>"), `close` ("closed"), `quit`. A failed step answers
//     "error <what>: <the SDK's error>" and the session goes on. `whoami` answers "session <jwt|legacy> <api session
//     id> <sha256 of its token>".
//
// `bench <identity.json> <service> <seconds> <concurrency>` (bench.go) measures dial to first byte for the fabric
// benchmark and prints one JSON line.
package main

import (
	"bufio"
	"crypto/hmac"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base32"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/openziti/edge-api/rest_model"
	edge_apis "github.com/openziti/sdk-golang/edge-apis"
	"github.com/openziti/sdk-golang/ziti"
	"github.com/openziti/sdk-golang/ziti/edge"
	"github.com/sirupsen/logrus"
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
	// SDKECHO_USERNAME and SDKECHO_PASSWORD: a password login instead of the identity file's certificate (the file
	// then only gives the controller URL and its CA).
	if user := os.Getenv("SDKECHO_USERNAME"); user != "" {
		creds := edge_apis.NewUpdbCredentials(user, os.Getenv("SDKECHO_PASSWORD"))
		if cfg.ID.CA != "" {
			pool := x509.NewCertPool()
			pool.AppendCertsFromPEM([]byte(strings.TrimPrefix(cfg.ID.CA, "pem:")))
			creds.CaPool = pool
		}
		cfg.Credentials = creds
	}
	ctx, err := ziti.NewContext(cfg)
	if err != nil {
		fail("new context: %v", err)
	}
	// SDKECHO_TOTP_SECRET: answer TOTP auth queries with codes of this secret. SDKECHO_TOTP_ENROLL=1: enroll TOTP
	// when the login asks for it, answering with a code of the provisioning URL's secret (printed as "totp-secret <s>").
	if impl, ok := ctx.(*ziti.ContextImpl); ok {
		if secret := os.Getenv("SDKECHO_TOTP_SECRET"); secret != "" {
			impl.AddMfaTotpCodeListener(func(_ ziti.Context, _ *rest_model.AuthQueryDetail, respond ziti.MfaCodeResponse) {
				_ = respond(totpCode(secret))
			})
		}
		if os.Getenv("SDKECHO_TOTP_ENROLL") == "1" {
			impl.AddMfaTotpEnrollmentListener(func(_ ziti.Context, provisioningUrl string, respond ziti.MfaTotpEnrollmentResponse) {
				u, err := url.Parse(provisioningUrl)
				if err != nil {
					respond("", err)
					return
				}
				secret := u.Query().Get("secret")
				fmt.Printf("totp-secret %s\n", secret)
				respond(totpCode(secret), nil)
			})
		}
	}
	return ctx
}

// totpCode is the current RFC 6238 code (SHA-1, 6 digits, 30 s) of a base32 secret.
func totpCode(secret string) string {
	key, err := base32.StdEncoding.WithPadding(base32.NoPadding).DecodeString(strings.ToUpper(strings.TrimRight(secret, "=")))
	if err != nil {
		return ""
	}
	var counter [8]byte
	binary.BigEndian.PutUint64(counter[:], uint64(time.Now().Unix()/30))
	mac := hmac.New(sha1.New, key)
	mac.Write(counter[:])
	sum := mac.Sum(nil)
	offset := sum[len(sum)-1] & 0x0f
	return fmt.Sprintf("%06d", (binary.BigEndian.Uint32(sum[offset:offset+4])&0x7fffffff)%1000000)
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
	go hostCommands(listener)
	serve(listener)
}

// hostCommands changes the host's own terminator through its router, as an SDK does: `cost <n>` and
// `precedence <default|required|failed>` from stdin, each answered "cost <n>" / "precedence <p>" once the router
// took it, or "error <what>: <the SDK's error>". Without stdin (the usual `host`) it ends at once.
func hostCommands(listener edge.Listener) {
	precedences := map[string]edge.Precedence{"default": edge.PrecedenceDefault, "required": edge.PrecedenceRequired, "failed": edge.PrecedenceFailed}
	lines := bufio.NewScanner(os.Stdin)
	for lines.Scan() {
		fields := strings.Fields(lines.Text())
		if len(fields) != 2 {
			continue
		}
		switch fields[0] {
		case "cost":
			cost, err := strconv.ParseUint(fields[1], 10, 16)
			if err == nil {
				err = listener.UpdateCost(uint16(cost))
			}
			if err != nil {
				fmt.Printf("error cost: %v\n", err)
			} else {
				fmt.Printf("cost %d\n", cost)
			}
		case "precedence":
			precedence, known := precedences[fields[1]]
			var err error = fmt.Errorf("unknown precedence %q", fields[1])
			if known {
				err = listener.UpdatePrecedence(precedence)
			}
			if err != nil {
				fmt.Printf("error precedence: %v\n", err)
			} else {
				fmt.Printf("precedence %s\n", fields[1])
			}
		}
	}
}

// serve echoes every line of every accepted connection back prefixed with "echo:". It prints "accepted" for each
// connection it accepts (where a dial landed, however the connection ends) and "peer closed" when a dialer closes
// its side cleanly.
func serve(listener edge.Listener) {
	for {
		conn, err := listener.Accept()
		if err != nil {
			fail("accept: %v", err)
		}
		fmt.Println("accepted")
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

// bind listens and waits until the router accepted the bind (one established listener) or the time is up.
func bind(identityFile, service string, seconds int) {
	ctx := context(identityFile)
	options := ziti.DefaultListenOptions()
	options.ConnectTimeout = time.Duration(seconds) * time.Second
	options.WaitForNEstablishedListeners = 1
	listener, err := ctx.ListenWithOptions(service, options)
	if err != nil {
		fail("listen: %v", err)
	}
	fmt.Println("bound")
	serve(listener)
}

// exchange writes count messages on conn and checks every answer, pausing delay between them.
func exchange(conn net.Conn, reader *bufio.Reader, count int, delay time.Duration) error {
	for i := 0; i < count; i++ {
		if i > 0 && delay > 0 {
			time.Sleep(delay)
		}
		msg := fmt.Sprintf("message %d %s\n", i, time.Now().Format(time.RFC3339Nano))
		if _, err := conn.Write([]byte(msg)); err != nil {
			return fmt.Errorf("write %d: %w", i, err)
		}
		_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
		answer, err := reader.ReadString('\n')
		if err != nil {
			return fmt.Errorf("read %d: %w", i, err)
		}
		if answer != "echo:"+msg {
			return fmt.Errorf("answer %d: got %q, want %q", i, answer, "echo:"+msg)
		}
	}
	return nil
}

// session runs stdin commands against one SDK context (see the package comment).
func session(identityFile, service string) {
	ctx := context(identityFile)
	if err := ctx.Authenticate(); err != nil {
		fail("authenticate: %v", err)
	}
	fmt.Println("ready")
	var conn net.Conn
	var reader *bufio.Reader
	var sticky []byte
	answer := func(format string, args ...any) {
		fmt.Println(strings.ReplaceAll(fmt.Sprintf(format, args...), "\n", " "))
	}
	number := func(fields []string, i, def int) int {
		if len(fields) <= i {
			return def
		}
		n, err := strconv.Atoi(fields[i])
		if err != nil {
			return def
		}
		return n
	}
	lines := bufio.NewScanner(os.Stdin)
	for lines.Scan() {
		fields := strings.Fields(lines.Text())
		if len(fields) == 0 {
			continue
		}
		switch fields[0] {
		case "dial":
			n := number(fields, 1, 1)
			c, err := ctx.Dial(service)
			if err != nil {
				answer("error dial: %v", err)
				continue
			}
			answer("%s", oneExchange(c, n, ""))
		case "stickydial":
			// Like dial, with the stickiness token of the previous stickydial (none at first); keeps the token
			// the controller hands back. Answers "ok <n> <token>".
			n := number(fields, 1, 1)
			c, err := ctx.DialWithOptions(service, &ziti.DialOptions{ConnectTimeout: 15 * time.Second, StickinessToken: sticky})
			if err != nil {
				answer("error dial: %v", err)
				continue
			}
			sticky = c.GetStickinessToken()
			answer("%s", oneExchange(c, n, " "+string(sticky)))
		case "open":
			if conn != nil {
				_ = conn.Close()
			}
			c, err := ctx.Dial(service)
			if err != nil {
				conn = nil
				answer("error dial: %v", err)
				continue
			}
			conn, reader = c, bufio.NewReader(c)
			answer("opened")
		case "exchange":
			if conn == nil {
				answer("error exchange: no open connection")
				continue
			}
			n := number(fields, 1, 1)
			if err := exchange(conn, reader, n, time.Duration(number(fields, 2, 0))*time.Millisecond); err != nil {
				answer("error %v", err)
			} else {
				answer("ok %d", n)
			}
		case "close":
			if conn == nil {
				answer("closed")
				continue
			}
			err := conn.Close()
			conn = nil
			if err != nil {
				answer("error close: %v", err)
			} else {
				answer("closed")
			}
		case "whoami":
			// The SDK's API session: "session <jwt|legacy> <id> <token digest>"; the digest changes when a JWT is
			// refreshed, the id does not.
			impl, ok := ctx.(*ziti.ContextImpl)
			if !ok {
				answer("error whoami: unexpected context type %T", ctx)
				continue
			}
			current := impl.CtrlClt.GetCurrentApiSession()
			if current == nil {
				answer("error whoami: no API session")
				continue
			}
			token := current.GetToken()
			kind := "legacy"
			if strings.HasPrefix(string(token), "ey") {
				kind = "jwt"
			}
			answer("session %s %s %x", kind, current.GetId(), sha256.Sum256(token))
		case "quit":
			if conn != nil {
				_ = conn.Close()
			}
			ctx.Close()
			return
		default:
			answer("error unknown command %q", fields[0])
		}
	}
	ctx.Close()
}

// oneExchange sends n messages on a new connection, checks the echoes and closes it: "ok <n><suffix>" or the error.
func oneExchange(c net.Conn, n int, suffix string) string {
	err := exchange(c, bufio.NewReader(c), n, 0)
	closeErr := c.Close()
	if err != nil {
		return fmt.Sprintf("error %v", err)
	}
	if closeErr != nil {
		return fmt.Sprintf("error close: %v", closeErr)
	}
	return fmt.Sprintf("ok %d%s", n, suffix)
}

func main() {
	// SDKECHO_LOG=debug: the SDK's own log at debug level on stderr (its token refreshes are logged there).
	if os.Getenv("SDKECHO_LOG") == "debug" {
		logrus.SetLevel(logrus.DebugLevel)
	}
	if len(os.Args) < 4 {
		fail("usage: sdkecho host <identity.json> <service> | dial <identity.json> <service> <count> | " +
			"bind <identity.json> <service> <seconds> | session <identity.json> <service> | " +
			"bench <identity.json> <service> <seconds> <concurrency>")
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
	case "bind":
		seconds := 20
		if len(os.Args) > 4 {
			n, err := strconv.Atoi(os.Args[4])
			if err != nil {
				fail("seconds: %v", err)
			}
			seconds = n
		}
		bind(os.Args[2], os.Args[3], seconds)
	case "session":
		session(os.Args[2], os.Args[3])
	case "bench":
		benchMain(os.Args[2:])
	default:
		fail("unknown mode %s", os.Args[1])
	}
}
