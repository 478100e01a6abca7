package interop

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"testing"
	"time"

	"github.com/go-openapi/strfmt"
	"github.com/openziti/edge-api/rest_client_api_client"
	clientauth "github.com/openziti/edge-api/rest_client_api_client/authentication"
	"github.com/openziti/edge-api/rest_client_api_client/current_api_session"
	"github.com/openziti/edge-api/rest_client_api_client/current_identity"
	"github.com/openziti/edge-api/rest_client_api_client/enroll"
	clientjwt "github.com/openziti/edge-api/rest_client_api_client/external_jwt_signer"
	clientinfo "github.com/openziti/edge-api/rest_client_api_client/informational"
	clientservice "github.com/openziti/edge-api/rest_client_api_client/service"
	clientsession "github.com/openziti/edge-api/rest_client_api_client/session"
	"github.com/openziti/edge-api/rest_management_api_client/identity"
	mgmtsession "github.com/openziti/edge-api/rest_management_api_client/session"
	"github.com/openziti/edge-api/rest_model"
)

// enrollUpdbIdentity creates an identity with an updb enrollment and completes it through the generated
// client's enroll operation; it returns the identity id and the password.
func enrollUpdbIdentity(t *testing.T, name, tag string) (string, string) {
	t.Helper()
	id := newIdentity(t, name, tag, &rest_model.IdentityCreateEnrollment{Updb: name})
	d := identityDetail(t, id)
	if d.Enrollment == nil || d.Enrollment.Updb == nil || d.Enrollment.Updb.Token == "" {
		t.Fatalf("identity has no updb enrollment: %+v", d.Enrollment)
	}
	e := testEnv(t)
	c := rest_client_api_client.New(e.clientRuntime(), strfmt.Default)
	password := "Go-Client-Pw-1"
	_, err := c.Enroll.EnrollUpdb(enroll.NewEnrollUpdbParams().WithToken(strfmt.UUID(d.Enrollment.Updb.Token)).WithUpdbCredentials(enroll.EnrollUpdbBody{
		Password: rest_model.Password(password),
	}))
	must(t, err, "updb enrollment")
	_, err = c.Enroll.EnrollUpdb(enroll.NewEnrollUpdbParams().WithToken(strfmt.UUID(d.Enrollment.Updb.Token)).WithUpdbCredentials(enroll.EnrollUpdbBody{
		Password: rest_model.Password(password),
	}))
	if err == nil {
		t.Fatal("a used updb enrollment token was accepted again")
	}
	return id, password
}

func TestClientAPI(t *testing.T) {
	tag := unique("go-client")
	n := newNetwork(t, tag)
	name := tag + "-user"
	id, password := enrollUpdbIdentity(t, name, tag)
	c, apiSession := clientAs(t, name, password)
	if *apiSession.IdentityID != id || len(apiSession.AuthQueries) != 0 {
		t.Fatalf("api session: identity %s, auth queries %d", *apiSession.IdentityID, len(apiSession.AuthQueries))
	}

	// informational, public
	v, err := c.Informational.ListVersion(clientinfo.NewListVersionParams())
	must(t, err, "client version")
	validate(t, "client version", v.Payload)
	_, err = c.ExternalJWTSigner.ListExternalJWTSigners(clientjwt.NewListExternalJWTSignersParams())
	must(t, err, "client external jwt signers")

	// current identity and API session
	ci, err := c.CurrentIdentity.GetCurrentIdentity(current_identity.NewGetCurrentIdentityParams(), nil)
	must(t, err, "current identity")
	validate(t, "current identity", ci.Payload.Data) // upstream sends meta: null here
	if *ci.Payload.Data.ID != id || *ci.Payload.Data.Name != name {
		t.Fatalf("current identity: %+v", ci.Payload.Data)
	}
	cas, err := c.CurrentAPISession.GetCurrentAPISession(current_api_session.NewGetCurrentAPISessionParams(), nil)
	must(t, err, "current api session")
	validate(t, "current api session", cas.Payload)
	ers, err := c.CurrentIdentity.GetCurrentIdentityEdgeRouters(current_identity.NewGetCurrentIdentityEdgeRoutersParams(), nil)
	must(t, err, "current identity edge routers")
	validate(t, "current identity edge routers", ers.Payload)
	if len(ers.Payload.Data) != 0 {
		// As upstream, only verified (enrolled) edge routers are listed; the fixture's router never enrolls.
		t.Fatalf("current identity edge routers: %d", len(ers.Payload.Data))
	}
	auths, err := c.CurrentAPISession.ListCurrentIdentityAuthenticators(current_api_session.NewListCurrentIdentityAuthenticatorsParams(), nil)
	must(t, err, "current identity authenticators")
	validate(t, "current identity authenticators", auths.Payload)
	if len(auths.Payload.Data) != 1 || *auths.Payload.Data[0].Method != "updb" {
		t.Fatalf("authenticators: %d", len(auths.Payload.Data))
	}

	// services with configs
	svcs, err := c.Service.ListServices(clientservice.NewListServicesParams().WithConfigTypes([]string{"all"}), nil)
	must(t, err, "list services")
	validate(t, "client service list", svcs.Payload)
	if len(svcs.Payload.Data) != 1 {
		t.Fatalf("services: %d", len(svcs.Payload.Data))
	}
	svc := svcs.Payload.Data[0]
	if *svc.ID != n.serviceID || len(svc.Permissions) != 2 || svc.Config["intercept.v1"] == nil || svc.Config["host.v1"] == nil {
		t.Fatalf("service: permissions %v, config %v", svc.Permissions, svc.Config)
	}
	if addrs, _ := svc.Config["intercept.v1"]["addresses"].([]any); len(addrs) != 1 || addrs[0] != n.interceptAddr {
		t.Fatalf("intercept config: %v", svc.Config["intercept.v1"])
	}
	sd, err := c.Service.DetailService(clientservice.NewDetailServiceParams().WithID(n.serviceID), nil)
	must(t, err, "detail service")
	validate(t, "client service detail", sd.Payload)
	svcERs, err := c.Service.ListServiceEdgeRouters(clientservice.NewListServiceEdgeRoutersParams().WithID(n.serviceID), nil)
	must(t, err, "service edge routers")
	validate(t, "service edge routers", svcERs.Payload)
	su, err := c.CurrentAPISession.ListServiceUpdates(current_api_session.NewListServiceUpdatesParams(), nil)
	must(t, err, "service updates")
	validate(t, "service updates", su.Payload)

	// sessions: dial and bind
	dial, err := c.Session.CreateSession(clientsession.NewCreateSessionParams().WithSession(&rest_model.SessionCreate{ServiceID: n.serviceID, Type: rest_model.DialBindDial}), nil)
	must(t, err, "create dial session")
	validate(t, "session create", dial.Payload)
	if dial.Payload.Data.Token == nil || *dial.Payload.Data.Token == "" || len(dial.Payload.Data.EdgeRouters) != 1 {
		t.Fatalf("dial session: %+v", dial.Payload.Data)
	}
	bind, err := c.Session.CreateSession(clientsession.NewCreateSessionParams().WithSession(&rest_model.SessionCreate{ServiceID: n.serviceID, Type: rest_model.DialBindBind}), nil)
	must(t, err, "create bind session")
	again, err := c.Session.CreateSession(clientsession.NewCreateSessionParams().WithSession(&rest_model.SessionCreate{ServiceID: n.serviceID, Type: rest_model.DialBindDial}), nil)
	must(t, err, "repeat dial session")
	if *again.Payload.Data.ID != *dial.Payload.Data.ID {
		t.Fatalf("a repeated dial session got a new id")
	}
	sl, err := c.Session.ListSessions(clientsession.NewListSessionsParams(), nil)
	must(t, err, "list sessions")
	validate(t, "session list", sl.Payload)
	if len(sl.Payload.Data) != 2 {
		t.Fatalf("sessions: %d", len(sl.Payload.Data))
	}
	sdet, err := c.Session.DetailSession(clientsession.NewDetailSessionParams().WithID(*bind.Payload.Data.ID), nil)
	must(t, err, "detail session")
	validate(t, "session detail", sdet.Payload)
	if *sdet.Payload.Data.Type != rest_model.DialBindBind {
		t.Fatalf("bind session type: %s", *sdet.Payload.Data.Type)
	}
	// the admin sees them through the management API
	msl, err := admin(t).Session.ListSessions(mgmtsession.NewListSessionsParams().WithFilter(filter(fmt.Sprintf(`identity = "%s"`, id))), nil)
	must(t, err, "management list sessions")
	validate(t, "management session list", msl.Payload)
	if len(msl.Payload.Data) != 2 {
		t.Fatalf("management sessions: %d", len(msl.Payload.Data))
	}
	_, err = c.Session.DeleteSession(clientsession.NewDeleteSessionParams().WithID(*bind.Payload.Data.ID), nil)
	must(t, err, "delete session")
	_, err = c.Session.CreateSession(clientsession.NewCreateSessionParams().WithSession(&rest_model.SessionCreate{ServiceID: "no-such-service", Type: rest_model.DialBindDial}), nil)
	wantStatus(t, err, 404, "session for an unknown service")

	// API session certificate from a CSR
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	must(t, err, "key")
	csrDER, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: pkix.Name{CommonName: name}}, key)
	must(t, err, "csr")
	csrPEM := string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: csrDER}))
	cert, err := c.CurrentAPISession.CreateCurrentAPISessionCertificate(current_api_session.NewCreateCurrentAPISessionCertificateParams().WithSessionCertificate(&rest_model.CurrentAPISessionCertificateCreate{Csr: &csrPEM}), nil)
	must(t, err, "api session certificate")
	validate(t, "api session certificate", cert.Payload)
	block, _ := pem.Decode([]byte(*cert.Payload.Data.Certificate))
	if block == nil {
		t.Fatal("api session certificate is not PEM")
	}
	leaf, err := x509.ParseCertificate(block.Bytes)
	must(t, err, "parse api session certificate")
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: testEnv(t).caPool, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		t.Fatalf("api session certificate does not chain to the controller CA: %v", err)
	}
	certs, err := c.CurrentAPISession.ListCurrentAPISessionCertificates(current_api_session.NewListCurrentAPISessionCertificatesParams(), nil)
	must(t, err, "list api session certificates")
	if len(certs.Payload.Data) != 1 {
		t.Fatalf("api session certificates: %d", len(certs.Payload.Data))
	}

	// own password change
	newPassword := "Go-Client-Pw-2"
	_, err = c.CurrentAPISession.UpdateCurrentIdentityAuthenticator(current_api_session.NewUpdateCurrentIdentityAuthenticatorParams().WithID(*auths.Payload.Data[0].ID).WithAuthenticator(&rest_model.AuthenticatorUpdateWithCurrent{
		AuthenticatorUpdate: rest_model.AuthenticatorUpdate{Username: ptr(rest_model.Username(name)), Password: ptr(rest_model.Password(newPassword))},
		CurrentPassword:     ptr(rest_model.Password(password)),
	}), nil)
	must(t, err, "change own password")
	c, _ = clientAs(t, name, newPassword)

	// logout
	_, err = c.CurrentAPISession.DeleteCurrentAPISession(current_api_session.NewDeleteCurrentAPISessionParams(), nil)
	must(t, err, "logout")
	_, err = c.CurrentIdentity.GetCurrentIdentity(current_identity.NewGetCurrentIdentityParams(), nil)
	wantStatus(t, err, 401, "current identity after logout")
}

func TestClientMFA(t *testing.T) {
	tag := unique("go-mfa")
	n := newNetwork(t, tag)
	name := tag + "-user"
	id, password := enrollUpdbIdentity(t, name, tag)
	c, _ := clientAs(t, name, password)

	_, err := c.CurrentIdentity.DetailMfa(current_identity.NewDetailMfaParams(), nil)
	wantStatus(t, err, 404, "mfa before enrollment")
	_, err = c.CurrentIdentity.EnrollMfa(current_identity.NewEnrollMfaParams(), nil)
	must(t, err, "enroll mfa")
	mfa, err := c.CurrentIdentity.DetailMfa(current_identity.NewDetailMfaParams(), nil)
	must(t, err, "mfa detail")
	validate(t, "mfa detail", mfa.Payload)
	if *mfa.Payload.Data.IsVerified || mfa.Payload.Data.ProvisioningURL == "" || len(mfa.Payload.Data.RecoveryCodes) == 0 {
		t.Fatalf("unverified mfa: %+v", mfa.Payload.Data)
	}
	secret := secretFromProvisioningURL(t, mfa.Payload.Data.ProvisioningURL)
	_, err = c.CurrentIdentity.DetailMfaQrCode(current_identity.NewDetailMfaQrCodeParams(), nil)
	must(t, err, "mfa QR code")
	_, err = c.CurrentIdentity.VerifyMfa(current_identity.NewVerifyMfaParams().WithMfaValidation(&rest_model.MfaCode{Code: ptr("000000")}), nil)
	wantStatus(t, err, 400, "verify mfa with a wrong code")
	_, err = c.CurrentIdentity.VerifyMfa(current_identity.NewVerifyMfaParams().WithMfaValidation(&rest_model.MfaCode{Code: ptr(totp(t, secret, time.Now()))}), nil)
	must(t, err, "verify mfa")
	if !*identityDetail(t, id).IsMfaEnabled {
		t.Fatal("identity does not show MFA enabled")
	}

	// a new login must answer the MFA auth query before it can use the API
	c2, session := clientAs(t, name, password)
	if len(session.AuthQueries) != 1 || session.AuthQueries[0].TypeID != rest_model.AuthQueryTypeMFA {
		t.Fatalf("auth queries after MFA enrollment: %+v", session.AuthQueries)
	}
	_, err = c2.Service.ListServices(clientservice.NewListServicesParams(), nil)
	if err == nil {
		t.Fatal("services listed before the MFA code was given")
	}
	_, err = c2.Authentication.AuthenticateMfa(clientauth.NewAuthenticateMfaParams().WithMfaAuth(&rest_model.MfaCode{Code: ptr("111111")}), nil)
	wantStatus(t, err, 400, "authenticate mfa with a wrong code") // upstream: 400 MFA_INVALID_TOKEN
	_, err = c2.Authentication.AuthenticateMfa(clientauth.NewAuthenticateMfaParams().WithMfaAuth(&rest_model.MfaCode{Code: ptr(totp(t, secret, time.Now()))}), nil)
	must(t, err, "authenticate mfa")
	svcs, err := c2.Service.ListServices(clientservice.NewListServicesParams(), nil)
	must(t, err, "services after MFA")
	if len(svcs.Payload.Data) != 1 || *svcs.Payload.Data[0].ID != n.serviceID {
		t.Fatalf("services after MFA: %d", len(svcs.Payload.Data))
	}
	// TOTP tokens need an OIDC-backed session; with a legacy zt-session upstream answers 400 INVALID_BACKING_TOKEN_TYPE.
	_, err = c2.CurrentAPISession.CreateTotpToken(current_api_session.NewCreateTotpTokenParams().WithMfaValidation(&rest_model.MfaCode{Code: ptr(totp(t, secret, time.Now()))}), nil)
	wantStatus(t, err, 400, "totp token on a legacy session")
	codes, err := c2.CurrentIdentity.DetailMfaRecoveryCodes(current_identity.NewDetailMfaRecoveryCodesParams().WithMfaValidationCode(ptr(totp(t, secret, time.Now()))), nil)
	must(t, err, "recovery codes")
	if len(codes.Payload.Data.RecoveryCodes) == 0 {
		t.Fatal("no recovery codes")
	}
	_, err = c2.CurrentIdentity.CreateMfaRecoveryCodes(current_identity.NewCreateMfaRecoveryCodesParams().WithMfaValidation(&rest_model.MfaCode{Code: ptr(totp(t, secret, time.Now()))}), nil)
	must(t, err, "regenerate recovery codes")

	// a recovery code also answers the auth query
	codes, err = c2.CurrentIdentity.DetailMfaRecoveryCodes(current_identity.NewDetailMfaRecoveryCodesParams().WithMfaValidationCode(ptr(totp(t, secret, time.Now()))), nil)
	must(t, err, "recovery codes after regeneration")
	c3, _ := clientAs(t, name, password)
	_, err = c3.Authentication.AuthenticateMfa(clientauth.NewAuthenticateMfaParams().WithMfaAuth(&rest_model.MfaCode{Code: &codes.Payload.Data.RecoveryCodes[0]}), nil)
	must(t, err, "authenticate mfa with a recovery code")

	// remove MFA
	_, err = c2.CurrentIdentity.DeleteMfa(current_identity.NewDeleteMfaParams().WithMfaValidationCode(ptr(totp(t, secret, time.Now()))), nil)
	must(t, err, "delete mfa")
	_, s4 := clientAs(t, name, password)
	if len(s4.AuthQueries) != 0 {
		t.Fatalf("auth queries after MFA removal: %d", len(s4.AuthQueries))
	}

	// admin removal path: enroll again, then the admin removes it
	_, err = c2.CurrentIdentity.EnrollMfa(current_identity.NewEnrollMfaParams(), nil)
	must(t, err, "enroll mfa again")
	_, err = admin(t).Identity.RemoveIdentityMfa(identity.NewRemoveIdentityMfaParams().WithID(id), nil)
	must(t, err, "admin removes mfa")
	_, err = c2.CurrentIdentity.DetailMfa(current_identity.NewDetailMfaParams(), nil)
	wantStatus(t, err, 404, "mfa after admin removal")
}
