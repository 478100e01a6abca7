// Package interop runs real OpenZiti Go clients (the generated edge-api clients and sdk-golang) against a
// Portcullis that the test runner (test/interop/run.mjs) started. Nothing here starts a controller: the
// controller is found through PORTCULLIS_URL, PORTCULLIS_ADMIN_USER, PORTCULLIS_ADMIN_PASSWORD and
// PORTCULLIS_CA_FILE.
package interop

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha1"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base32"
	"encoding/binary"
	"encoding/pem"
	"fmt"
	"math/big"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	openapierrors "github.com/go-openapi/errors"
	"github.com/go-openapi/runtime"
	httptransport "github.com/go-openapi/runtime/client"
	"github.com/go-openapi/strfmt"
	"github.com/openziti/edge-api/rest_client_api_client"
	clientauth "github.com/openziti/edge-api/rest_client_api_client/authentication"
	"github.com/openziti/edge-api/rest_management_api_client"
	mgmtauth "github.com/openziti/edge-api/rest_management_api_client/authentication"
	"github.com/openziti/edge-api/rest_model"
)

type env struct {
	root     *url.URL
	user     string
	password string
	caFile   string
	caPool   *x509.CertPool
}

var theEnv *env

func testEnv(t *testing.T) *env {
	t.Helper()
	if theEnv != nil {
		return theEnv
	}
	raw := os.Getenv("PORTCULLIS_URL")
	if raw == "" {
		t.Fatal("PORTCULLIS_URL is not set: run these tests through `npm run test:interop`")
	}
	root, err := url.Parse(raw)
	if err != nil {
		t.Fatalf("PORTCULLIS_URL: %v", err)
	}
	caFile := os.Getenv("PORTCULLIS_CA_FILE")
	pemBytes, err := os.ReadFile(caFile)
	if err != nil {
		t.Fatalf("PORTCULLIS_CA_FILE: %v", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pemBytes) {
		t.Fatal("PORTCULLIS_CA_FILE holds no certificate")
	}
	theEnv = &env{root: root, user: os.Getenv("PORTCULLIS_ADMIN_USER"), password: os.Getenv("PORTCULLIS_ADMIN_PASSWORD"), caFile: caFile, caPool: pool}
	return theEnv
}

func (e *env) httpClient(certs ...tls.Certificate) *http.Client {
	return &http.Client{
		Timeout: 30 * time.Second,
		Transport: &http.Transport{
			TLSClientConfig: &tls.Config{RootCAs: e.caPool, Certificates: certs},
		},
	}
}

func (e *env) mgmtRuntime(certs ...tls.Certificate) *httptransport.Runtime {
	rt := httptransport.NewWithClient(e.root.Host, rest_management_api_client.DefaultBasePath, []string{"https"}, e.httpClient(certs...))
	// The CA JWT operation answers application/jwt; like the ziti CLI, read it as text.
	rt.Consumers["application/jwt"] = runtime.TextConsumer()
	return rt
}

func (e *env) clientRuntime(certs ...tls.Certificate) *httptransport.Runtime {
	rt := httptransport.NewWithClient(e.root.Host, rest_client_api_client.DefaultBasePath, []string{"https"}, e.httpClient(certs...))
	// The MFA QR code is a PNG; the generated client registers no consumer for it.
	rt.Consumers["image/png"] = runtime.ByteStreamConsumer()
	return rt
}

// mgmtAs logs in with a password on the management API and returns a client whose requests carry the token.
func mgmtAs(t *testing.T, username, password string) (*rest_management_api_client.ZitiEdgeManagement, string) {
	t.Helper()
	e := testEnv(t)
	rt := e.mgmtRuntime()
	c := rest_management_api_client.New(rt, strfmt.Default)
	res, err := c.Authentication.Authenticate(mgmtauth.NewAuthenticateParams().WithMethod("password").WithAuth(&rest_model.Authenticate{
		Username: rest_model.Username(username), Password: rest_model.Password(password),
	}))
	if err != nil {
		t.Fatalf("management login of %s: %v", username, err)
	}
	token := *res.Payload.Data.Token
	rt.DefaultAuthentication = httptransport.APIKeyAuth("zt-session", "header", token)
	return c, token
}

var adminClient *rest_management_api_client.ZitiEdgeManagement

// admin returns a management client logged in as the default admin (one API session for the whole run).
func admin(t *testing.T) *rest_management_api_client.ZitiEdgeManagement {
	t.Helper()
	if adminClient == nil {
		e := testEnv(t)
		adminClient, _ = mgmtAs(t, e.user, e.password)
	}
	return adminClient
}

// clientAs logs in on the client API with a password and returns the client and the API session detail.
func clientAs(t *testing.T, username, password string) (*rest_client_api_client.ZitiEdgeClient, *rest_model.CurrentAPISessionDetail) {
	t.Helper()
	e := testEnv(t)
	rt := e.clientRuntime()
	c := rest_client_api_client.New(rt, strfmt.Default)
	res, err := c.Authentication.Authenticate(clientauth.NewAuthenticateParams().WithMethod("password").WithAuth(&rest_model.Authenticate{
		Username: rest_model.Username(username), Password: rest_model.Password(password),
	}))
	if err != nil {
		t.Fatalf("client login of %s: %v", username, err)
	}
	rt.DefaultAuthentication = httptransport.APIKeyAuth("zt-session", "header", *res.Payload.Data.Token)
	return c, res.Payload.Data
}

// clientWithCert logs in on the client API with a client certificate.
func clientWithCert(t *testing.T, cert tls.Certificate) (*rest_client_api_client.ZitiEdgeClient, *rest_model.CurrentAPISessionDetail) {
	t.Helper()
	e := testEnv(t)
	rt := e.clientRuntime(cert)
	c := rest_client_api_client.New(rt, strfmt.Default)
	res, err := c.Authentication.Authenticate(clientauth.NewAuthenticateParams().WithMethod("cert"))
	if err != nil {
		t.Fatalf("client cert login: %v", err)
	}
	rt.DefaultAuthentication = httptransport.APIKeyAuth("zt-session", "header", *res.Payload.Data.Token)
	return c, res.Payload.Data
}

var nameCounter atomic.Int64

// unique returns a name unique within this run.
func unique(prefix string) string {
	return fmt.Sprintf("%s-%d-%d", prefix, time.Now().UnixNano()%1_000_000_000, nameCounter.Add(1))
}

func ptr[T any](v T) *T { return &v }

func must(t *testing.T, err error, what string) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, describe(err))
	}
}

// describe renders go-openapi errors with their payloads (API error code and message).
func describe(err error) string {
	if err == nil {
		return "<nil>"
	}
	type payloader interface {
		GetPayload() *rest_model.APIErrorEnvelope
	}
	if p, ok := err.(payloader); ok && p.GetPayload() != nil && p.GetPayload().Error != nil {
		e := p.GetPayload().Error
		return fmt.Sprintf("%s (code %s: %s)", err.Error(), e.Code, e.Message)
	}
	if ae, ok := err.(*runtime.APIError); ok {
		return fmt.Sprintf("%s: %v", ae.Error(), ae.Response)
	}
	return err.Error()
}

// wantStatus asserts that err is an API error with the given HTTP status, and returns its API error code.
func wantStatus(t *testing.T, err error, status int, what string) string {
	t.Helper()
	if err == nil {
		t.Fatalf("%s: expected HTTP %d, got success", what, status)
	}
	type coded interface {
		Code() int
	}
	type payloader interface {
		GetPayload() *rest_model.APIErrorEnvelope
	}
	if c, ok := err.(coded); ok {
		if c.Code() != status {
			t.Fatalf("%s: expected HTTP %d, got %d: %s", what, status, c.Code(), describe(err))
		}
		if p, ok := err.(payloader); ok && p.GetPayload() != nil && p.GetPayload().Error != nil {
			return p.GetPayload().Error.Code
		}
		return ""
	}
	if ae, ok := err.(*runtime.APIError); ok {
		if ae.Code != status {
			t.Fatalf("%s: expected HTTP %d, got %d: %v", what, status, ae.Code, ae)
		}
		return ""
	}
	t.Fatalf("%s: expected HTTP %d, got a non-API error: %v", what, status, err)
	return ""
}

func validate(t *testing.T, what string, v interface {
	Validate(strfmt.Registry) error
}) {
	t.Helper()
	var problems []string
	collectProblems(v.Validate(strfmt.Default), &problems)
	if len(problems) > 0 {
		t.Fatalf("%s does not validate against the edge-api model:\n  %s", what, strings.Join(problems, "\n  "))
	}
}

// upstreamQuirks are validation failures of the generated models that upstream's own responses show too, so
// no client depends on them: relative `_links` hrefs fail the "uri" format, and the identity detail marks
// `externalId` and `permissions` required although upstream renders them null when unset.
func upstreamQuirk(v *openapierrors.Validation) bool {
	name := v.Name
	if strings.Contains(name, "_links.") && strings.HasSuffix(name, ".href") {
		return true
	}
	if v.Code() == openapierrors.RequiredFailCode && (strings.HasSuffix(name, "externalId") || strings.HasSuffix(name, "permissions")) {
		return true
	}
	return false
}

func collectProblems(err error, out *[]string) {
	if err == nil {
		return
	}
	switch e := err.(type) {
	case *openapierrors.CompositeError:
		for _, inner := range e.Errors {
			collectProblems(inner, out)
		}
	case *openapierrors.Validation:
		if !upstreamQuirk(e) {
			*out = append(*out, e.Error())
		}
	default:
		*out = append(*out, err.Error())
	}
}

func filter(f string) *string { return &f }

// ---- certificates ----

type testCA struct {
	cert    *x509.Certificate
	key     crypto.Signer
	certPEM string
}

func newTestCA(t *testing.T, cn string) *testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	must(t, err, "ca key")
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(time.Now().UnixNano()),
		Subject:               pkix.Name{CommonName: cn, Organization: []string{"Interop Test"}},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	must(t, err, "ca cert")
	cert, _ := x509.ParseCertificate(der)
	return &testCA{cert: cert, key: key, certPEM: string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))}
}

// issue signs a client certificate for cn and returns it as a tls.Certificate plus its PEM and the key PEM.
func (ca *testCA) issue(t *testing.T, cn string) (tls.Certificate, string, string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	must(t, err, "leaf key")
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()),
		Subject:      pkix.Name{CommonName: cn},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	must(t, err, "leaf cert")
	certPEM := string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))
	keyDer, err := x509.MarshalECPrivateKey(key)
	must(t, err, "marshal key")
	keyPEM := string(pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDer}))
	pair, err := tls.X509KeyPair([]byte(certPEM), []byte(keyPEM))
	must(t, err, "key pair")
	return pair, certPEM, keyPEM
}

// ---- TOTP (RFC 6238, SHA-1, 6 digits, 30 s) ----

func totp(t *testing.T, secret string, at time.Time) string {
	t.Helper()
	key, err := base32.StdEncoding.WithPadding(base32.NoPadding).DecodeString(strings.ToUpper(strings.TrimRight(secret, "=")))
	must(t, err, "decode TOTP secret")
	var msg [8]byte
	binary.BigEndian.PutUint64(msg[:], uint64(at.Unix()/30))
	mac := hmac.New(sha1.New, key)
	mac.Write(msg[:])
	sum := mac.Sum(nil)
	off := sum[len(sum)-1] & 0x0f
	code := (binary.BigEndian.Uint32(sum[off:off+4]) & 0x7fffffff) % 1_000_000
	return fmt.Sprintf("%06d", code)
}

// secretFromProvisioningURL extracts the secret parameter of an otpauth:// URL.
func secretFromProvisioningURL(t *testing.T, raw string) string {
	t.Helper()
	u, err := url.Parse(raw)
	must(t, err, "parse provisioning URL")
	s := u.Query().Get("secret")
	if s == "" {
		t.Fatalf("provisioning URL %q has no secret", raw)
	}
	return s
}
