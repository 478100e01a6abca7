package interop

import (
	"fmt"
	"testing"
	"time"

	"github.com/go-openapi/strfmt"
	"github.com/openziti/edge-api/rest_client_api_client/current_identity"
	clientsession "github.com/openziti/edge-api/rest_client_api_client/session"
	"github.com/openziti/edge-api/rest_management_api_client/api_session"
	"github.com/openziti/edge-api/rest_management_api_client/auth_policy"
	"github.com/openziti/edge-api/rest_management_api_client/authenticator"
	"github.com/openziti/edge-api/rest_management_api_client/certificate_authority"
	"github.com/openziti/edge-api/rest_management_api_client/config"
	"github.com/openziti/edge-api/rest_management_api_client/controllers"
	"github.com/openziti/edge-api/rest_management_api_client/edge_router"
	"github.com/openziti/edge-api/rest_management_api_client/edge_router_policy"
	"github.com/openziti/edge-api/rest_management_api_client/enrollment"
	"github.com/openziti/edge-api/rest_management_api_client/external_jwt_signer"
	"github.com/openziti/edge-api/rest_management_api_client/identity"
	"github.com/openziti/edge-api/rest_management_api_client/informational"
	"github.com/openziti/edge-api/rest_management_api_client/posture_checks"
	"github.com/openziti/edge-api/rest_management_api_client/role_attributes"
	"github.com/openziti/edge-api/rest_management_api_client/router"
	"github.com/openziti/edge-api/rest_management_api_client/service"
	"github.com/openziti/edge-api/rest_management_api_client/service_edge_router_policy"
	"github.com/openziti/edge-api/rest_management_api_client/service_policy"
	mgmtsession "github.com/openziti/edge-api/rest_management_api_client/session"
	"github.com/openziti/edge-api/rest_management_api_client/settings"
	"github.com/openziti/edge-api/rest_management_api_client/terminator"
	"github.com/openziti/edge-api/rest_model"
)

func TestManagementInformational(t *testing.T) {
	m := admin(t)
	v, err := m.Informational.ListVersion(informational.NewListVersionParams())
	must(t, err, "version")
	validate(t, "version", v.Payload)
	if v.Payload.Data == nil || v.Payload.Data.APIVersions == nil {
		t.Fatalf("version has no apiVersions: %+v", v.Payload.Data)
	}
	root, err := m.Informational.ListRoot(informational.NewListRootParams())
	must(t, err, "root")
	validate(t, "root", root.Payload)
	sum, err := m.Informational.ListSummary(informational.NewListSummaryParams(), nil)
	must(t, err, "summary")
	if _, ok := sum.Payload.Data["identities"]; !ok {
		t.Fatalf("summary has no identities count: %v", sum.Payload.Data)
	}
	caps, err := m.Informational.ListEnumeratedCapabilities(informational.NewListEnumeratedCapabilitiesParams())
	must(t, err, "capabilities")
	validate(t, "capabilities", caps.Payload)
}

func TestManagementIdentities(t *testing.T) {
	m := admin(t)
	name := unique("go-identity")
	attrs := rest_model.Attributes{"go-interop", "alpha"}
	created, err := m.Identity.CreateIdentity(identity.NewCreateIdentityParams().WithIdentity(&rest_model.IdentityCreate{
		Name: &name, Type: ptr(rest_model.IdentityTypeDefault), IsAdmin: ptr(false), RoleAttributes: &attrs,
		Enrollment: &rest_model.IdentityCreateEnrollment{Ott: true},
		Tags:       &rest_model.Tags{SubTags: map[string]any{"suite": "go"}},
	}), nil)
	must(t, err, "create identity")
	validate(t, "create envelope", created.Payload)
	id := created.Payload.Data.ID

	detail, err := m.Identity.DetailIdentity(identity.NewDetailIdentityParams().WithID(id), nil)
	must(t, err, "detail identity")
	validate(t, "identity detail", detail.Payload)
	d := detail.Payload.Data
	if *d.Name != name || *d.IsAdmin || len(*d.RoleAttributes) != 2 || d.Enrollment == nil || d.Enrollment.Ott == nil {
		t.Fatalf("unexpected identity detail: %+v", d)
	}
	if d.Enrollment.Ott.JWT == "" || time.Time(d.Enrollment.Ott.ExpiresAt).IsZero() {
		t.Fatalf("ott enrollment has no jwt/expiry: %+v", d.Enrollment.Ott)
	}
	if d.Tags == nil || d.Tags.SubTags["suite"] != "go" {
		t.Fatalf("tags not stored: %+v", d.Tags)
	}

	// list with a filter, paging
	list, err := m.Identity.ListIdentities(identity.NewListIdentitiesParams().WithFilter(filter(fmt.Sprintf(`name = "%s"`, name))), nil)
	must(t, err, "list identities")
	validate(t, "identity list", list.Payload)
	if len(list.Payload.Data) != 1 || *list.Payload.Data[0].ID != id || *list.Payload.Meta.Pagination.TotalCount != 1 {
		t.Fatalf("filtered list: %d items", len(list.Payload.Data))
	}
	list, err = m.Identity.ListIdentities(identity.NewListIdentitiesParams().WithFilter(filter(`anyOf(roleAttributes) = "go-interop"`)).WithLimit(ptr(int64(1))), nil)
	must(t, err, "list identities by attribute")
	if len(list.Payload.Data) != 1 || *list.Payload.Meta.Pagination.Limit != 1 {
		t.Fatalf("attribute list with limit 1 returned %d", len(list.Payload.Data))
	}
	list, err = m.Identity.ListIdentities(identity.NewListIdentitiesParams().WithRoleFilter([]string{"#alpha"}).WithRoleSemantic(ptr("AllOf")), nil)
	must(t, err, "list identities by role filter")
	found := false
	for _, i := range list.Payload.Data {
		found = found || *i.ID == id
	}
	if !found {
		t.Fatal("role filter #alpha did not return the identity")
	}

	// patch: only the given fields change
	_, err = m.Identity.PatchIdentity(identity.NewPatchIdentityParams().WithID(id).WithIdentity(&rest_model.IdentityPatch{
		RoleAttributes: &rest_model.Attributes{"go-interop", "beta"},
	}), nil)
	must(t, err, "patch identity")
	detail, err = m.Identity.DetailIdentity(identity.NewDetailIdentityParams().WithID(id), nil)
	must(t, err, "detail after patch")
	if *detail.Payload.Data.Name != name || (*detail.Payload.Data.RoleAttributes)[0] != "beta" /* a sorted set, as upstream */ {
		t.Fatalf("patch result: name %s attributes %v", *detail.Payload.Data.Name, *detail.Payload.Data.RoleAttributes)
	}

	// update (PUT): every field replaced
	newName := name + "-renamed"
	_, err = m.Identity.UpdateIdentity(identity.NewUpdateIdentityParams().WithID(id).WithIdentity(&rest_model.IdentityUpdate{
		Name: &newName, Type: ptr(rest_model.IdentityTypeDefault), IsAdmin: ptr(false),
		DefaultHostingCost: ptr(rest_model.TerminatorCost(5)),
	}), nil)
	must(t, err, "update identity")
	detail, err = m.Identity.DetailIdentity(identity.NewDetailIdentityParams().WithID(id), nil)
	must(t, err, "detail after update")
	if *detail.Payload.Data.Name != newName || len(*detail.Payload.Data.RoleAttributes) != 0 || *detail.Payload.Data.DefaultHostingCost != 5 {
		t.Fatalf("update result: %+v", detail.Payload.Data)
	}

	// sub-lists on a fresh identity
	_, err = m.Identity.GetIdentityEnrollments(identity.NewGetIdentityEnrollmentsParams().WithID(id), nil)
	must(t, err, "identity enrollments")
	_, err = m.Identity.GetIdentityAuthenticators(identity.NewGetIdentityAuthenticatorsParams().WithID(id), nil)
	must(t, err, "identity authenticators")
	_, err = m.Identity.ListIdentityServices(identity.NewListIdentityServicesParams().WithID(id), nil)
	must(t, err, "identity services")
	_, err = m.Identity.ListIdentityEdgeRouters(identity.NewListIdentityEdgeRoutersParams().WithID(id), nil)
	must(t, err, "identity edge routers")
	_, err = m.Identity.ListIdentityServicePolicies(identity.NewListIdentityServicePoliciesParams().WithID(id), nil)
	must(t, err, "identity service policies")
	_, err = m.Identity.ListIdentitysEdgeRouterPolicies(identity.NewListIdentitysEdgeRouterPoliciesParams().WithID(id), nil)
	must(t, err, "identity edge router policies")
	_, err = m.Identity.ListIdentitysServiceConfigs(identity.NewListIdentitysServiceConfigsParams().WithID(id), nil)
	must(t, err, "identity service configs")
	_, err = m.Identity.GetIdentityPostureData(identity.NewGetIdentityPostureDataParams().WithID(id), nil)
	must(t, err, "identity posture data")
	_, err = m.Identity.GetIdentityFailedServiceRequests(identity.NewGetIdentityFailedServiceRequestsParams().WithID(id), nil)
	must(t, err, "identity failed service requests")

	// disable / enable
	_, err = m.Identity.DisableIdentity(identity.NewDisableIdentityParams().WithID(id).WithDisable(&rest_model.DisableParams{DurationMinutes: ptr(int64(10))}), nil)
	must(t, err, "disable identity")
	detail, err = m.Identity.DetailIdentity(identity.NewDetailIdentityParams().WithID(id), nil)
	must(t, err, "detail after disable")
	if !*detail.Payload.Data.Disabled || detail.Payload.Data.DisabledUntil == nil {
		t.Fatalf("identity not disabled: %+v", detail.Payload.Data)
	}
	_, err = m.Identity.EnableIdentity(identity.NewEnableIdentityParams().WithID(id), nil)
	must(t, err, "enable identity")

	// identity types
	types, err := m.Identity.ListIdentityTypes(identity.NewListIdentityTypesParams(), nil)
	must(t, err, "identity types")
	validate(t, "identity types", types.Payload)
	if len(types.Payload.Data) == 0 {
		t.Fatal("no identity types")
	}
	_, err = m.Identity.DetailIdentityType(identity.NewDetailIdentityTypeParams().WithID(*types.Payload.Data[0].ID), nil)
	must(t, err, "identity type detail")

	// role attributes list
	ra, err := m.RoleAttributes.ListIdentityRoleAttributes(role_attributes.NewListIdentityRoleAttributesParams(), nil)
	must(t, err, "identity role attributes")
	validate(t, "role attributes", ra.Payload)

	// errors the client maps: 404 and 400
	_, err = m.Identity.DetailIdentity(identity.NewDetailIdentityParams().WithID("does-not-exist"), nil)
	wantStatus(t, err, 404, "detail unknown identity")
	_, err = m.Identity.CreateIdentity(identity.NewCreateIdentityParams().WithIdentity(&rest_model.IdentityCreate{
		Name: &newName, Type: ptr(rest_model.IdentityTypeDefault), IsAdmin: ptr(false),
	}), nil)
	wantStatus(t, err, 400, "create duplicate identity")
	_, err = m.Identity.ListIdentities(identity.NewListIdentitiesParams().WithFilter(filter(`name ==== 3`)), nil)
	wantStatus(t, err, 400, "bad filter")

	_, err = m.Identity.DeleteIdentity(identity.NewDeleteIdentityParams().WithID(id), nil)
	must(t, err, "delete identity")
	_, err = m.Identity.DeleteIdentity(identity.NewDeleteIdentityParams().WithID(id), nil)
	wantStatus(t, err, 404, "delete identity twice")
}

// builtInConfigTypeID finds a built-in config type by name.
func builtInConfigTypeID(t *testing.T, name string) string {
	t.Helper()
	m := admin(t)
	res, err := m.Config.ListConfigTypes(config.NewListConfigTypesParams().WithFilter(filter(fmt.Sprintf(`name = "%s"`, name))), nil)
	must(t, err, "list config types")
	if len(res.Payload.Data) != 1 {
		t.Fatalf("built-in config type %s not found", name)
	}
	return *res.Payload.Data[0].ID
}

func TestManagementConfigsAndServices(t *testing.T) {
	m := admin(t)
	// built-in config types exist and can be read
	interceptID := builtInConfigTypeID(t, "intercept.v1")
	hostID := builtInConfigTypeID(t, "host.v1")
	ct, err := m.Config.DetailConfigType(config.NewDetailConfigTypeParams().WithID(interceptID), nil)
	must(t, err, "detail config type")
	validate(t, "config type", ct.Payload)
	if ct.Payload.Data.Schema == nil {
		t.Fatal("intercept.v1 has no schema")
	}

	// custom config type: create, patch, update
	ctName := unique("go-ct")
	ctRes, err := m.Config.CreateConfigType(config.NewCreateConfigTypeParams().WithConfigType(&rest_model.ConfigTypeCreate{
		Name: &ctName, Schema: map[string]any{"type": "object", "properties": map[string]any{"n": map[string]any{"type": "integer"}}, "required": []any{"n"}},
	}), nil)
	must(t, err, "create config type")
	ctID := ctRes.Payload.Data.ID
	_, err = m.Config.PatchConfigType(config.NewPatchConfigTypeParams().WithID(ctID).WithConfigType(&rest_model.ConfigTypePatch{Tags: &rest_model.Tags{SubTags: map[string]any{"x": "y"}}}), nil)
	must(t, err, "patch config type")
	_, err = m.Config.UpdateConfigType(config.NewUpdateConfigTypeParams().WithID(ctID).WithConfigType(&rest_model.ConfigTypeUpdate{Name: ptr(ctName + "-u"), Schema: map[string]any{"type": "object"}}), nil)
	must(t, err, "update config type")

	// configs with the built-in types
	interceptName := unique("go-intercept")
	ic, err := m.Config.CreateConfig(config.NewCreateConfigParams().WithConfig(&rest_model.ConfigCreate{
		Name: &interceptName, ConfigTypeID: &interceptID,
		Data: map[string]any{"protocols": []any{"tcp"}, "addresses": []any{"go.interop.test"}, "portRanges": []any{map[string]any{"low": 80, "high": 443}}},
	}), nil)
	must(t, err, "create intercept.v1 config")
	hostName := unique("go-host")
	hc, err := m.Config.CreateConfig(config.NewCreateConfigParams().WithConfig(&rest_model.ConfigCreate{
		Name: &hostName, ConfigTypeID: &hostID,
		Data: map[string]any{"protocol": "tcp", "address": "127.0.0.1", "port": 8080},
	}), nil)
	must(t, err, "create host.v1 config")
	_, err = m.Config.CreateConfig(config.NewCreateConfigParams().WithConfig(&rest_model.ConfigCreate{
		Name: ptr(unique("go-bad")), ConfigTypeID: &hostID, Data: map[string]any{"protocol": 7},
	}), nil)
	wantStatus(t, err, 400, "config violating its schema")

	cd, err := m.Config.DetailConfig(config.NewDetailConfigParams().WithID(ic.Payload.Data.ID), nil)
	must(t, err, "detail config")
	validate(t, "config detail", cd.Payload)
	if *cd.Payload.Data.ConfigTypeID != interceptID || cd.Payload.Data.ConfigType == nil {
		t.Fatalf("config detail: %+v", cd.Payload.Data)
	}
	_, err = m.Config.PatchConfig(config.NewPatchConfigParams().WithID(hc.Payload.Data.ID).WithConfig(&rest_model.ConfigPatch{
		Data: map[string]any{"protocol": "tcp", "address": "127.0.0.1", "port": 9090},
	}), nil)
	must(t, err, "patch config")
	_, err = m.Config.UpdateConfig(config.NewUpdateConfigParams().WithID(hc.Payload.Data.ID).WithConfig(&rest_model.ConfigUpdate{
		Name: &hostName, Data: map[string]any{"protocol": "udp", "address": "127.0.0.1", "port": 53},
	}), nil)
	must(t, err, "update config")
	cl, err := m.Config.ListConfigs(config.NewListConfigsParams().WithFilter(filter(fmt.Sprintf(`name in ["%s", "%s"]`, interceptName, hostName))), nil)
	must(t, err, "list configs")
	validate(t, "config list", cl.Payload)
	if len(cl.Payload.Data) != 2 {
		t.Fatalf("config list: %d", len(cl.Payload.Data))
	}
	byType, err := m.Config.ListConfigsForConfigType(config.NewListConfigsForConfigTypeParams().WithID(hostID), nil)
	must(t, err, "configs of config type")
	if len(byType.Payload.Data) == 0 {
		t.Fatal("no configs for host.v1")
	}

	// service with configs
	svcName := unique("go-svc")
	sres, err := m.Service.CreateService(service.NewCreateServiceParams().WithService(&rest_model.ServiceCreate{
		Name: &svcName, EncryptionRequired: ptr(true), RoleAttributes: []string{"go-svc-attr"},
		Configs: []string{ic.Payload.Data.ID, hc.Payload.Data.ID}, TerminatorStrategy: "smartrouting",
	}), nil)
	must(t, err, "create service")
	svcID := sres.Payload.Data.ID
	sd, err := m.Service.DetailService(service.NewDetailServiceParams().WithID(svcID), nil)
	must(t, err, "detail service")
	validate(t, "service detail", sd.Payload)
	if len(sd.Payload.Data.Configs) != 2 || !*sd.Payload.Data.EncryptionRequired {
		t.Fatalf("service detail: %+v", sd.Payload.Data)
	}
	sl, err := m.Service.ListServices(service.NewListServicesParams().WithFilter(filter(fmt.Sprintf(`name contains "%s"`, svcName[:len(svcName)-2]))), nil)
	must(t, err, "list services")
	validate(t, "service list", sl.Payload)
	_, err = m.Service.PatchService(service.NewPatchServiceParams().WithID(svcID).WithService(&rest_model.ServicePatch{RoleAttributes: []string{"go-svc-attr", "patched"}}), nil)
	must(t, err, "patch service")
	_, err = m.Service.UpdateService(service.NewUpdateServiceParams().WithID(svcID).WithService(&rest_model.ServiceUpdate{
		Name: &svcName, RoleAttributes: []string{"go-svc-attr"}, Configs: []string{ic.Payload.Data.ID}, EncryptionRequired: true,
	}), nil)
	must(t, err, "update service")
	cfgs, err := m.Service.ListServiceConfig(service.NewListServiceConfigParams().WithID(svcID), nil)
	must(t, err, "service configs")
	if len(cfgs.Payload.Data) != 1 {
		t.Fatalf("service configs after update: %d", len(cfgs.Payload.Data))
	}
	svcsOfConfig, err := m.Config.ListConfigServices(config.NewListConfigServicesParams().WithID(ic.Payload.Data.ID), nil)
	must(t, err, "services of config")
	if len(svcsOfConfig.Payload.Data) != 1 {
		t.Fatalf("services of config: %d", len(svcsOfConfig.Payload.Data))
	}
	for _, call := range []func() error{
		func() error {
			_, err := m.Service.ListServiceEdgeRouters(service.NewListServiceEdgeRoutersParams().WithID(svcID), nil)
			return err
		},
		func() error {
			_, err := m.Service.ListServiceIdentities(service.NewListServiceIdentitiesParams().WithID(svcID), nil)
			return err
		},
		func() error {
			_, err := m.Service.ListServiceServicePolicies(service.NewListServiceServicePoliciesParams().WithID(svcID), nil)
			return err
		},
		func() error {
			_, err := m.Service.ListServiceServiceEdgeRouterPolicies(service.NewListServiceServiceEdgeRouterPoliciesParams().WithID(svcID), nil)
			return err
		},
		func() error {
			_, err := m.Service.ListServiceTerminators(service.NewListServiceTerminatorsParams().WithID(svcID), nil)
			return err
		},
	} {
		must(t, call(), "service sub-list")
	}
	ra, err := m.RoleAttributes.ListServiceRoleAttributes(role_attributes.NewListServiceRoleAttributesParams(), nil)
	must(t, err, "service role attributes")
	validate(t, "service role attributes", ra.Payload)

	// identity service config overrides
	idName := unique("go-cfg-identity")
	idRes, err := m.Identity.CreateIdentity(identity.NewCreateIdentityParams().WithIdentity(&rest_model.IdentityCreate{Name: &idName, Type: ptr(rest_model.IdentityTypeDefault), IsAdmin: ptr(false)}), nil)
	must(t, err, "create identity for overrides")
	_, err = m.Identity.AssociateIdentitysServiceConfigs(identity.NewAssociateIdentitysServiceConfigsParams().WithID(idRes.Payload.Data.ID).WithServiceConfigs(rest_model.ServiceConfigsAssignList{
		{ServiceID: &svcID, ConfigID: &hc.Payload.Data.ID},
	}), nil)
	must(t, err, "associate service configs")
	scl, err := m.Identity.ListIdentitysServiceConfigs(identity.NewListIdentitysServiceConfigsParams().WithID(idRes.Payload.Data.ID), nil)
	must(t, err, "list service configs")
	if len(scl.Payload.Data) != 1 {
		t.Fatalf("service config overrides: %d", len(scl.Payload.Data))
	}
	_, err = m.Identity.DisassociateIdentitysServiceConfigs(identity.NewDisassociateIdentitysServiceConfigsParams().WithID(idRes.Payload.Data.ID).WithServiceConfigIDPairs(rest_model.ServiceConfigsAssignList{
		{ServiceID: &svcID, ConfigID: &hc.Payload.Data.ID},
	}), nil)
	must(t, err, "disassociate service configs")

	// cleanup: a config type still used cannot be deleted
	_, err = m.Config.DeleteConfigType(config.NewDeleteConfigTypeParams().WithID(hostID), nil)
	if err == nil {
		t.Fatal("deleting a used built-in config type succeeded")
	}
	_, err = m.Identity.DeleteIdentity(identity.NewDeleteIdentityParams().WithID(idRes.Payload.Data.ID), nil)
	must(t, err, "delete identity")
	_, err = m.Service.DeleteService(service.NewDeleteServiceParams().WithID(svcID), nil)
	must(t, err, "delete service")
	_, err = m.Config.DeleteConfig(config.NewDeleteConfigParams().WithID(ic.Payload.Data.ID), nil)
	must(t, err, "delete config")
	_, err = m.Config.DeleteConfig(config.NewDeleteConfigParams().WithID(hc.Payload.Data.ID), nil)
	must(t, err, "delete config")
	_, err = m.Config.DeleteConfigType(config.NewDeleteConfigTypeParams().WithID(ctID), nil)
	must(t, err, "delete config type")
}

func TestManagementRoutersAndPolicies(t *testing.T) {
	m := admin(t)
	tag := unique("go-pol")
	// identity, service, edge router, transit router
	idRes, err := m.Identity.CreateIdentity(identity.NewCreateIdentityParams().WithIdentity(&rest_model.IdentityCreate{
		Name: ptr(tag + "-id"), Type: ptr(rest_model.IdentityTypeDefault), IsAdmin: ptr(false), RoleAttributes: &rest_model.Attributes{tag},
	}), nil)
	must(t, err, "create identity")
	svcRes, err := m.Service.CreateService(service.NewCreateServiceParams().WithService(&rest_model.ServiceCreate{
		Name: ptr(tag + "-svc"), EncryptionRequired: ptr(true), RoleAttributes: []string{tag},
	}), nil)
	must(t, err, "create service")
	erRes, err := m.EdgeRouter.CreateEdgeRouter(edge_router.NewCreateEdgeRouterParams().WithEdgeRouter(&rest_model.EdgeRouterCreate{
		Name: ptr(tag + "-er"), RoleAttributes: &rest_model.Attributes{tag}, IsTunnelerEnabled: false, Cost: ptr(int64(10)),
	}), nil)
	must(t, err, "create edge router")
	erID := erRes.Payload.Data.ID
	er, err := m.EdgeRouter.DetailEdgeRouter(edge_router.NewDetailEdgeRouterParams().WithID(erID), nil)
	must(t, err, "detail edge router")
	validate(t, "edge router detail", er.Payload)
	if er.Payload.Data.EnrollmentJWT == nil || *er.Payload.Data.EnrollmentJWT == "" || *er.Payload.Data.IsVerified {
		t.Fatalf("new edge router: %+v", er.Payload.Data)
	}
	_, err = m.EdgeRouter.PatchEdgeRouter(edge_router.NewPatchEdgeRouterParams().WithID(erID).WithEdgeRouter(&rest_model.EdgeRouterPatch{Cost: ptr(int64(20))}), nil)
	must(t, err, "patch edge router")
	_, err = m.EdgeRouter.UpdateEdgeRouter(edge_router.NewUpdateEdgeRouterParams().WithID(erID).WithEdgeRouter(&rest_model.EdgeRouterUpdate{
		Name: ptr(tag + "-er"), RoleAttributes: &rest_model.Attributes{tag, "updated"},
	}), nil)
	must(t, err, "update edge router")
	erl, err := m.EdgeRouter.ListEdgeRouters(edge_router.NewListEdgeRoutersParams().WithFilter(filter(fmt.Sprintf(`name = "%s-er"`, tag))), nil)
	must(t, err, "list edge routers")
	validate(t, "edge router list", erl.Payload)
	if len(erl.Payload.Data) != 1 {
		t.Fatalf("edge router list: %d", len(erl.Payload.Data))
	}
	_, err = m.EdgeRouter.ReEnrollEdgeRouter(edge_router.NewReEnrollEdgeRouterParams().WithID(erID), nil)
	must(t, err, "re-enroll edge router")
	era, err := m.RoleAttributes.ListEdgeRouterRoleAttributes(role_attributes.NewListEdgeRouterRoleAttributesParams(), nil)
	must(t, err, "edge router role attributes")
	validate(t, "edge router role attributes", era.Payload)

	trRes, err := m.Router.CreateTransitRouter(router.NewCreateTransitRouterParams().WithRouter(&rest_model.RouterCreate{Name: ptr(tag + "-tr")}), nil)
	must(t, err, "create transit router")
	trID := trRes.Payload.Data.ID
	_, err = m.Router.PatchTransitRouter(router.NewPatchTransitRouterParams().WithID(trID).WithRouter(&rest_model.RouterPatch{Cost: ptr(int64(3))}), nil)
	must(t, err, "patch transit router")
	_, err = m.Router.UpdateRouter(router.NewUpdateRouterParams().WithID(trID).WithRouter(&rest_model.RouterUpdate{Name: ptr(tag + "-tr2")}), nil)
	must(t, err, "update router")
	trd, err := m.Router.DetailRouter(router.NewDetailRouterParams().WithID(trID), nil)
	must(t, err, "detail router")
	validate(t, "router detail", trd.Payload)
	trl, err := m.Router.ListTransitRouters(router.NewListTransitRoutersParams().WithFilter(filter(fmt.Sprintf(`name = "%s-tr2"`, tag))), nil)
	must(t, err, "list transit routers")
	if len(trl.Payload.Data) != 1 {
		t.Fatalf("transit routers: %d", len(trl.Payload.Data))
	}
	_, err = m.Router.ListRouters(router.NewListRoutersParams(), nil)
	must(t, err, "list routers")

	// terminators on the transit router
	termRes, err := m.Terminator.CreateTerminator(terminator.NewCreateTerminatorParams().WithTerminator(&rest_model.TerminatorCreate{
		Service: &svcRes.Payload.Data.ID, Router: &trID, Binding: ptr("transport"), Address: ptr("tcp:127.0.0.1:1"),
	}), nil)
	must(t, err, "create terminator")
	termID := termRes.Payload.Data.ID
	td, err := m.Terminator.DetailTerminator(terminator.NewDetailTerminatorParams().WithID(termID), nil)
	must(t, err, "detail terminator")
	validate(t, "terminator detail", td.Payload)
	_, err = m.Terminator.PatchTerminator(terminator.NewPatchTerminatorParams().WithID(termID).WithTerminator(&rest_model.TerminatorPatch{Cost: ptr(rest_model.TerminatorCost(7))}), nil)
	must(t, err, "patch terminator")
	_, err = m.Terminator.UpdateTerminator(terminator.NewUpdateTerminatorParams().WithID(termID).WithTerminator(&rest_model.TerminatorUpdate{
		Service: &svcRes.Payload.Data.ID, Router: &trID, Binding: ptr("transport"), Address: ptr("tcp:127.0.0.1:2"),
	}), nil)
	must(t, err, "update terminator")
	tl, err := m.Terminator.ListTerminators(terminator.NewListTerminatorsParams().WithFilter(filter(fmt.Sprintf(`service = "%s"`, svcRes.Payload.Data.ID))), nil)
	must(t, err, "list terminators")
	validate(t, "terminator list", tl.Payload)
	if len(tl.Payload.Data) != 1 || *tl.Payload.Data[0].Address != "tcp:127.0.0.1:2" {
		t.Fatalf("terminator list: %d", len(tl.Payload.Data))
	}
	_, err = m.Terminator.DeleteTerminator(terminator.NewDeleteTerminatorParams().WithID(termID), nil)
	must(t, err, "delete terminator")

	// the three policy types
	role := "#" + tag
	spRes, err := m.ServicePolicy.CreateServicePolicy(service_policy.NewCreateServicePolicyParams().WithPolicy(&rest_model.ServicePolicyCreate{
		Name: ptr(tag + "-sp"), Type: ptr(rest_model.DialBindDial), Semantic: ptr(rest_model.SemanticAnyOf),
		IdentityRoles: rest_model.Roles{role}, ServiceRoles: rest_model.Roles{role}, PostureCheckRoles: rest_model.Roles{},
	}), nil)
	must(t, err, "create service policy")
	spID := spRes.Payload.Data.ID
	erpRes, err := m.EdgeRouterPolicy.CreateEdgeRouterPolicy(edge_router_policy.NewCreateEdgeRouterPolicyParams().WithPolicy(&rest_model.EdgeRouterPolicyCreate{
		Name: ptr(tag + "-erp"), Semantic: ptr(rest_model.SemanticAllOf), IdentityRoles: rest_model.Roles{role}, EdgeRouterRoles: rest_model.Roles{role},
	}), nil)
	must(t, err, "create edge router policy")
	erpID := erpRes.Payload.Data.ID
	serpRes, err := m.ServiceEdgeRouterPolicy.CreateServiceEdgeRouterPolicy(service_edge_router_policy.NewCreateServiceEdgeRouterPolicyParams().WithPolicy(&rest_model.ServiceEdgeRouterPolicyCreate{
		Name: ptr(tag + "-serp"), Semantic: ptr(rest_model.SemanticAllOf), ServiceRoles: rest_model.Roles{role}, EdgeRouterRoles: rest_model.Roles{"#all"},
	}), nil)
	must(t, err, "create service edge router policy")
	serpID := serpRes.Payload.Data.ID

	spd, err := m.ServicePolicy.DetailServicePolicy(service_policy.NewDetailServicePolicyParams().WithID(spID), nil)
	must(t, err, "detail service policy")
	validate(t, "service policy detail", spd.Payload)
	if len(spd.Payload.Data.IdentityRolesDisplay) != 1 {
		t.Fatalf("service policy roles display: %+v", spd.Payload.Data.IdentityRolesDisplay)
	}
	erpd, err := m.EdgeRouterPolicy.DetailEdgeRouterPolicy(edge_router_policy.NewDetailEdgeRouterPolicyParams().WithID(erpID), nil)
	must(t, err, "detail edge router policy")
	validate(t, "edge router policy detail", erpd.Payload)
	serpd, err := m.ServiceEdgeRouterPolicy.DetailServiceEdgeRouterPolicy(service_edge_router_policy.NewDetailServiceEdgeRouterPolicyParams().WithID(serpID), nil)
	must(t, err, "detail service edge router policy")
	validate(t, "service edge router policy detail", serpd.Payload)

	// policy-derived sub-lists
	ids, err := m.ServicePolicy.ListServicePolicyIdentities(service_policy.NewListServicePolicyIdentitiesParams().WithID(spID), nil)
	must(t, err, "service policy identities")
	validate(t, "service policy identities", ids.Payload)
	if len(ids.Payload.Data) != 1 || *ids.Payload.Data[0].ID != idRes.Payload.Data.ID {
		t.Fatalf("service policy identities: %d", len(ids.Payload.Data))
	}
	svcs, err := m.ServicePolicy.ListServicePolicyServices(service_policy.NewListServicePolicyServicesParams().WithID(spID), nil)
	must(t, err, "service policy services")
	if len(svcs.Payload.Data) != 1 {
		t.Fatalf("service policy services: %d", len(svcs.Payload.Data))
	}
	_, err = m.ServicePolicy.ListServicePolicyPostureChecks(service_policy.NewListServicePolicyPostureChecksParams().WithID(spID), nil)
	must(t, err, "service policy posture checks")
	idsvcs, err := m.Identity.ListIdentityServices(identity.NewListIdentityServicesParams().WithID(idRes.Payload.Data.ID), nil)
	must(t, err, "identity services")
	if len(idsvcs.Payload.Data) != 1 || *idsvcs.Payload.Data[0].ID != svcRes.Payload.Data.ID {
		t.Fatalf("identity services: %d", len(idsvcs.Payload.Data))
	}
	svcids, err := m.Service.ListServiceIdentities(service.NewListServiceIdentitiesParams().WithID(svcRes.Payload.Data.ID), nil)
	must(t, err, "service identities")
	if len(svcids.Payload.Data) != 1 {
		t.Fatalf("service identities: %d", len(svcids.Payload.Data))
	}
	erps, err := m.EdgeRouterPolicy.ListEdgeRouterPolicyEdgeRouters(edge_router_policy.NewListEdgeRouterPolicyEdgeRoutersParams().WithID(erpID), nil)
	must(t, err, "edge router policy routers")
	if len(erps.Payload.Data) != 1 || *erps.Payload.Data[0].ID != erID {
		t.Fatalf("edge router policy routers: %d", len(erps.Payload.Data))
	}
	erpIDs, err := m.EdgeRouterPolicy.ListEdgeRouterPolicyIdentities(edge_router_policy.NewListEdgeRouterPolicyIdentitiesParams().WithID(erpID), nil)
	must(t, err, "edge router policy identities")
	if len(erpIDs.Payload.Data) != 1 {
		t.Fatalf("edge router policy identities: %d", len(erpIDs.Payload.Data))
	}
	ider, err := m.Identity.ListIdentityEdgeRouters(identity.NewListIdentityEdgeRoutersParams().WithID(idRes.Payload.Data.ID), nil)
	must(t, err, "identity edge routers")
	if len(ider.Payload.Data) != 1 {
		t.Fatalf("identity edge routers: %d", len(ider.Payload.Data))
	}
	erids, err := m.EdgeRouter.ListEdgeRouterIdentities(edge_router.NewListEdgeRouterIdentitiesParams().WithID(erID), nil)
	must(t, err, "edge router identities")
	if len(erids.Payload.Data) != 1 {
		t.Fatalf("edge router identities: %d", len(erids.Payload.Data))
	}
	ersvcs, err := m.EdgeRouter.ListEdgeRouterServices(edge_router.NewListEdgeRouterServicesParams().WithID(erID), nil)
	must(t, err, "edge router services")
	if len(ersvcs.Payload.Data) != 1 {
		t.Fatalf("edge router services: %d", len(ersvcs.Payload.Data))
	}
	_, err = m.EdgeRouter.ListEdgeRouterEdgeRouterPolicies(edge_router.NewListEdgeRouterEdgeRouterPoliciesParams().WithID(erID), nil)
	must(t, err, "edge router's edge router policies")
	_, err = m.EdgeRouter.ListEdgeRouterServiceEdgeRouterPolicies(edge_router.NewListEdgeRouterServiceEdgeRouterPoliciesParams().WithID(erID), nil)
	must(t, err, "edge router's service edge router policies")
	serpers, err := m.ServiceEdgeRouterPolicy.ListServiceEdgeRouterPolicyEdgeRouters(service_edge_router_policy.NewListServiceEdgeRouterPolicyEdgeRoutersParams().WithID(serpID), nil)
	must(t, err, "serp edge routers")
	if len(serpers.Payload.Data) == 0 {
		t.Fatal("serp with #all has no edge routers")
	}
	serpsvcs, err := m.ServiceEdgeRouterPolicy.ListServiceEdgeRouterPolicyServices(service_edge_router_policy.NewListServiceEdgeRouterPolicyServicesParams().WithID(serpID), nil)
	must(t, err, "serp services")
	if len(serpsvcs.Payload.Data) != 1 {
		t.Fatalf("serp services: %d", len(serpsvcs.Payload.Data))
	}
	svcers, err := m.Service.ListServiceEdgeRouters(service.NewListServiceEdgeRoutersParams().WithID(svcRes.Payload.Data.ID), nil)
	must(t, err, "service edge routers")
	if len(svcers.Payload.Data) == 0 {
		t.Fatal("service has no edge routers")
	}
	advice, err := m.Identity.GetIdentityPolicyAdvice(identity.NewGetIdentityPolicyAdviceParams().WithID(idRes.Payload.Data.ID).WithServiceID(svcRes.Payload.Data.ID), nil)
	must(t, err, "policy advice")
	validate(t, "policy advice", advice.Payload.Data) // upstream sends meta: null here
	if !advice.Payload.Data.IsDialAllowed || advice.Payload.Data.IsBindAllowed {
		t.Fatalf("policy advice: %+v", advice.Payload.Data)
	}

	// policy patch / update / list
	_, err = m.ServicePolicy.PatchServicePolicy(service_policy.NewPatchServicePolicyParams().WithID(spID).WithPolicy(&rest_model.ServicePolicyPatch{Type: rest_model.DialBindBind}), nil)
	must(t, err, "patch service policy")
	_, err = m.ServicePolicy.UpdateServicePolicy(service_policy.NewUpdateServicePolicyParams().WithID(spID).WithPolicy(&rest_model.ServicePolicyUpdate{
		Name: ptr(tag + "-sp"), Type: ptr(rest_model.DialBindDial), Semantic: ptr(rest_model.SemanticAnyOf),
		IdentityRoles: rest_model.Roles{"@" + idRes.Payload.Data.ID}, ServiceRoles: rest_model.Roles{"@" + svcRes.Payload.Data.ID}, PostureCheckRoles: rest_model.Roles{},
	}), nil)
	must(t, err, "update service policy")
	spl, err := m.ServicePolicy.ListServicePolicies(service_policy.NewListServicePoliciesParams().WithFilter(filter(fmt.Sprintf(`name = "%s-sp" and type = 1` /* upstream filters the type as 1=Dial, 2=Bind */, tag))), nil)
	must(t, err, "list service policies")
	validate(t, "service policy list", spl.Payload)
	if len(spl.Payload.Data) != 1 {
		t.Fatalf("service policy list: %d", len(spl.Payload.Data))
	}
	_, err = m.EdgeRouterPolicy.PatchEdgeRouterPolicy(edge_router_policy.NewPatchEdgeRouterPolicyParams().WithID(erpID).WithPolicy(&rest_model.EdgeRouterPolicyPatch{Semantic: rest_model.SemanticAnyOf}), nil)
	must(t, err, "patch edge router policy")
	_, err = m.EdgeRouterPolicy.UpdateEdgeRouterPolicy(edge_router_policy.NewUpdateEdgeRouterPolicyParams().WithID(erpID).WithPolicy(&rest_model.EdgeRouterPolicyUpdate{
		Name: ptr(tag + "-erp"), Semantic: ptr(rest_model.SemanticAllOf), IdentityRoles: rest_model.Roles{"#all"}, EdgeRouterRoles: rest_model.Roles{"@" + erID},
	}), nil)
	must(t, err, "update edge router policy")
	erpl, err := m.EdgeRouterPolicy.ListEdgeRouterPolicies(edge_router_policy.NewListEdgeRouterPoliciesParams().WithFilter(filter(fmt.Sprintf(`name = "%s-erp"`, tag))), nil)
	must(t, err, "list edge router policies")
	validate(t, "edge router policy list", erpl.Payload)
	_, err = m.ServiceEdgeRouterPolicy.PatchServiceEdgeRouterPolicy(service_edge_router_policy.NewPatchServiceEdgeRouterPolicyParams().WithID(serpID).WithPolicy(&rest_model.ServiceEdgeRouterPolicyPatch{EdgeRouterRoles: rest_model.Roles{role}}), nil)
	must(t, err, "patch serp")
	_, err = m.ServiceEdgeRouterPolicy.UpdateServiceEdgeRouterPolicy(service_edge_router_policy.NewUpdateServiceEdgeRouterPolicyParams().WithID(serpID).WithPolicy(&rest_model.ServiceEdgeRouterPolicyUpdate{
		Name: ptr(tag + "-serp"), Semantic: ptr(rest_model.SemanticAnyOf), ServiceRoles: rest_model.Roles{role}, EdgeRouterRoles: rest_model.Roles{role},
	}), nil)
	must(t, err, "update serp")
	serpl, err := m.ServiceEdgeRouterPolicy.ListServiceEdgeRouterPolicies(service_edge_router_policy.NewListServiceEdgeRouterPoliciesParams().WithFilter(filter(fmt.Sprintf(`name = "%s-serp"`, tag))), nil)
	must(t, err, "list serps")
	validate(t, "serp list", serpl.Payload)
	_, err = m.ServicePolicy.CreateServicePolicy(service_policy.NewCreateServicePolicyParams().WithPolicy(&rest_model.ServicePolicyCreate{
		Name: ptr(tag + "-bad"), Type: ptr(rest_model.DialBindDial), Semantic: ptr(rest_model.SemanticAnyOf),
		IdentityRoles: rest_model.Roles{"@no-such-identity"}, ServiceRoles: rest_model.Roles{}, PostureCheckRoles: rest_model.Roles{},
	}), nil)
	wantStatus(t, err, 400, "service policy naming an unknown identity")

	// cleanup
	_, err = m.ServicePolicy.DeleteServicePolicy(service_policy.NewDeleteServicePolicyParams().WithID(spID), nil)
	must(t, err, "delete service policy")
	_, err = m.EdgeRouterPolicy.DeleteEdgeRouterPolicy(edge_router_policy.NewDeleteEdgeRouterPolicyParams().WithID(erpID), nil)
	must(t, err, "delete edge router policy")
	_, err = m.ServiceEdgeRouterPolicy.DeleteServiceEdgeRouterPolicy(service_edge_router_policy.NewDeleteServiceEdgeRouterPolicyParams().WithID(serpID), nil)
	must(t, err, "delete serp")
	_, err = m.EdgeRouter.DeleteEdgeRouter(edge_router.NewDeleteEdgeRouterParams().WithID(erID), nil)
	must(t, err, "delete edge router")
	_, err = m.Router.DeleteTransitRouter(router.NewDeleteTransitRouterParams().WithID(trID), nil)
	must(t, err, "delete transit router")
	_, err = m.Service.DeleteService(service.NewDeleteServiceParams().WithID(svcRes.Payload.Data.ID), nil)
	must(t, err, "delete service")
	_, err = m.Identity.DeleteIdentity(identity.NewDeleteIdentityParams().WithID(idRes.Payload.Data.ID), nil)
	must(t, err, "delete identity")
}

func TestManagementCertificateAuthorities(t *testing.T) {
	m := admin(t)
	ca := newTestCA(t, unique("go-ca"))
	name := unique("go-ca")
	res, err := m.CertificateAuthority.CreateCa(certificate_authority.NewCreateCaParams().WithCa(&rest_model.CaCreate{
		Name: &name, CertPem: &ca.certPEM, IsAuthEnabled: ptr(true), IsAutoCaEnrollmentEnabled: ptr(true), IsOttCaEnrollmentEnabled: ptr(true),
		IdentityRoles: rest_model.Roles{"go-ca-enrolled"}, IdentityNameFormat: "[caName]-[commonName]",
	}), nil)
	must(t, err, "create CA")
	caID := res.Payload.Data.ID
	d, err := m.CertificateAuthority.DetailCa(certificate_authority.NewDetailCaParams().WithID(caID), nil)
	must(t, err, "detail CA")
	validate(t, "CA detail", d.Payload)
	if *d.Payload.Data.IsVerified || d.Payload.Data.VerificationToken == "" {
		t.Fatalf("new CA: %+v", d.Payload.Data)
	}
	jwt, err := m.CertificateAuthority.GetCaJWT(certificate_authority.NewGetCaJWTParams().WithID(caID), nil)
	must(t, err, "CA jwt")
	if len(jwt.Payload) < 20 {
		t.Fatalf("CA jwt: %q", jwt.Payload)
	}

	// verification: a wrong certificate is refused, the token-CN certificate is accepted
	_, badPEM, _ := ca.issue(t, "not-the-token")
	_, err = m.CertificateAuthority.VerifyCa(certificate_authority.NewVerifyCaParams().WithID(caID).WithCertificate(badPEM), nil)
	wantStatus(t, err, 400, "verify CA with a wrong common name")
	_, goodPEM, _ := ca.issue(t, d.Payload.Data.VerificationToken.String())
	_, err = m.CertificateAuthority.VerifyCa(certificate_authority.NewVerifyCaParams().WithID(caID).WithCertificate(goodPEM), nil)
	must(t, err, "verify CA")
	d, err = m.CertificateAuthority.DetailCa(certificate_authority.NewDetailCaParams().WithID(caID), nil)
	must(t, err, "detail CA after verify")
	if !*d.Payload.Data.IsVerified {
		t.Fatal("CA not verified")
	}

	_, err = m.CertificateAuthority.PatchCa(certificate_authority.NewPatchCaParams().WithID(caID).WithCa(&rest_model.CaPatch{IsAuthEnabled: ptr(false)}), nil)
	must(t, err, "patch CA")
	_, err = m.CertificateAuthority.UpdateCa(certificate_authority.NewUpdateCaParams().WithID(caID).WithCa(&rest_model.CaUpdate{
		Name: &name, IsAuthEnabled: ptr(true), IsAutoCaEnrollmentEnabled: ptr(true), IsOttCaEnrollmentEnabled: ptr(true),
		IdentityRoles: rest_model.Roles{"go-ca-enrolled"}, IdentityNameFormat: ptr("[caName]-[commonName]"),
	}), nil)
	must(t, err, "update CA")
	l, err := m.CertificateAuthority.ListCas(certificate_authority.NewListCasParams().WithFilter(filter(fmt.Sprintf(`name = "%s"`, name))), nil)
	must(t, err, "list CAs")
	validate(t, "CA list", l.Payload)
	if len(l.Payload.Data) != 1 || !*l.Payload.Data[0].IsVerified {
		t.Fatalf("CA list: %d", len(l.Payload.Data))
	}
	_, err = m.CertificateAuthority.DeleteCa(certificate_authority.NewDeleteCaParams().WithID(caID), nil)
	must(t, err, "delete CA")
}

func TestManagementExternalJWTSigners(t *testing.T) {
	m := admin(t)
	ca := newTestCA(t, unique("go-jwt-signer"))
	name := unique("go-ext-jwt")
	res, err := m.ExternalJWTSigner.CreateExternalJWTSigner(external_jwt_signer.NewCreateExternalJWTSignerParams().WithExternalJWTSigner(&rest_model.ExternalJWTSignerCreate{
		Name: &name, CertPem: &ca.certPEM, Enabled: ptr(true), Issuer: ptr("https://issuer.go.test/" + name), Audience: ptr("go-interop"),
		ClaimsProperty: ptr("email"), UseExternalID: ptr(true), ExternalAuthURL: ptr("https://auth.go.test/authorize"), ClientID: ptr("go-client"), Scopes: []string{"openid"},
	}), nil)
	must(t, err, "create external JWT signer")
	id := res.Payload.Data.ID
	d, err := m.ExternalJWTSigner.DetailExternalJWTSigner(external_jwt_signer.NewDetailExternalJWTSignerParams().WithID(id), nil)
	must(t, err, "detail external JWT signer")
	validate(t, "external JWT signer detail", d.Payload)
	if *d.Payload.Data.ClaimsProperty != "email" || !*d.Payload.Data.UseExternalID || d.Payload.Data.Fingerprint == nil {
		t.Fatalf("signer detail: %+v", d.Payload.Data)
	}
	_, err = m.ExternalJWTSigner.PatchExternalJWTSigner(external_jwt_signer.NewPatchExternalJWTSignerParams().WithID(id).WithExternalJWTSigner(&rest_model.ExternalJWTSignerPatch{Enabled: ptr(false)}), nil)
	must(t, err, "patch external JWT signer")
	jwks := strfmt.URI("https://issuer.go.test/jwks")
	_, err = m.ExternalJWTSigner.UpdateExternalJWTSigner(external_jwt_signer.NewUpdateExternalJWTSignerParams().WithID(id).WithExternalJWTSigner(&rest_model.ExternalJWTSignerUpdate{
		Name: &name, JwksEndpoint: &jwks, Enabled: ptr(true), Issuer: ptr("https://issuer.go.test/" + name), Audience: ptr("go-interop"),
	}), nil)
	must(t, err, "update external JWT signer (cert → jwks)")
	l, err := m.ExternalJWTSigner.ListExternalJWTSigners(external_jwt_signer.NewListExternalJWTSignersParams().WithFilter(filter(fmt.Sprintf(`name = "%s"`, name))), nil)
	must(t, err, "list external JWT signers")
	validate(t, "external JWT signer list", l.Payload)
	if len(l.Payload.Data) != 1 || l.Payload.Data[0].JwksEndpoint == nil || l.Payload.Data[0].CertPem != nil {
		t.Fatalf("signer list: %+v", l.Payload.Data)
	}
	_, err = m.ExternalJWTSigner.CreateExternalJWTSigner(external_jwt_signer.NewCreateExternalJWTSignerParams().WithExternalJWTSigner(&rest_model.ExternalJWTSignerCreate{
		Name: ptr(unique("go-ext-bad")), Enabled: ptr(true), Issuer: ptr("https://x"), Audience: ptr("y"),
	}), nil)
	wantStatus(t, err, 400, "signer with neither certPem nor jwksEndpoint")

	// auth policies referencing the signer
	apName := unique("go-ap")
	ap, err := m.AuthPolicy.CreateAuthPolicy(auth_policy.NewCreateAuthPolicyParams().WithAuthPolicy(&rest_model.AuthPolicyCreate{
		Name: &apName,
		Primary: &rest_model.AuthPolicyPrimary{
			Cert:   &rest_model.AuthPolicyPrimaryCert{Allowed: ptr(true), AllowExpiredCerts: ptr(false)},
			ExtJWT: &rest_model.AuthPolicyPrimaryExtJWT{Allowed: ptr(true), AllowedSigners: []string{id}},
			Updb: &rest_model.AuthPolicyPrimaryUpdb{Allowed: ptr(true), LockoutDurationMinutes: ptr(int64(5)), MaxAttempts: ptr(int64(3)),
				MinPasswordLength: ptr(int64(8)), RequireMixedCase: ptr(true), RequireNumberChar: ptr(true), RequireSpecialChar: ptr(false)},
		},
		Secondary: &rest_model.AuthPolicySecondary{RequireTotp: ptr(false), RequireExtJWTSigner: &id},
	}), nil)
	must(t, err, "create auth policy")
	apID := ap.Payload.Data.ID
	apd, err := m.AuthPolicy.DetailAuthPolicy(auth_policy.NewDetailAuthPolicyParams().WithID(apID), nil)
	must(t, err, "detail auth policy")
	validate(t, "auth policy detail", apd.Payload)
	if *apd.Payload.Data.Secondary.RequireExtJWTSigner != id || *apd.Payload.Data.Primary.Updb.MaxAttempts != 3 {
		t.Fatalf("auth policy detail: %+v", apd.Payload.Data)
	}
	_, err = m.AuthPolicy.PatchAuthPolicy(auth_policy.NewPatchAuthPolicyParams().WithID(apID).WithAuthPolicy(&rest_model.AuthPolicyPatch{
		Secondary: &rest_model.AuthPolicySecondaryPatch{RequireTotp: ptr(true)},
	}), nil)
	must(t, err, "patch auth policy")
	_, err = m.AuthPolicy.UpdateAuthPolicy(auth_policy.NewUpdateAuthPolicyParams().WithID(apID).WithAuthPolicy(&rest_model.AuthPolicyUpdate{
		AuthPolicyCreate: rest_model.AuthPolicyCreate{
			Name: &apName,
			Primary: &rest_model.AuthPolicyPrimary{
				Cert:   &rest_model.AuthPolicyPrimaryCert{Allowed: ptr(true), AllowExpiredCerts: ptr(true)},
				ExtJWT: &rest_model.AuthPolicyPrimaryExtJWT{Allowed: ptr(false), AllowedSigners: []string{}},
				Updb: &rest_model.AuthPolicyPrimaryUpdb{Allowed: ptr(false), LockoutDurationMinutes: ptr(int64(0)), MaxAttempts: ptr(int64(0)),
					MinPasswordLength: ptr(int64(5)), RequireMixedCase: ptr(false), RequireNumberChar: ptr(false), RequireSpecialChar: ptr(false)},
			},
			Secondary: &rest_model.AuthPolicySecondary{RequireTotp: ptr(false)},
		},
	}), nil)
	must(t, err, "update auth policy")
	apl, err := m.AuthPolicy.ListAuthPolicies(auth_policy.NewListAuthPoliciesParams().WithFilter(filter(fmt.Sprintf(`name = "%s" or id = "default"`, apName))), nil)
	must(t, err, "list auth policies")
	validate(t, "auth policy list", apl.Payload)
	if len(apl.Payload.Data) != 2 {
		t.Fatalf("auth policy list: %d", len(apl.Payload.Data))
	}
	// an identity using the policy
	idRes, err := m.Identity.CreateIdentity(identity.NewCreateIdentityParams().WithIdentity(&rest_model.IdentityCreate{
		Name: ptr(unique("go-ap-identity")), Type: ptr(rest_model.IdentityTypeDefault), IsAdmin: ptr(false), AuthPolicyID: &apID,
	}), nil)
	must(t, err, "identity with auth policy")
	_, err = m.AuthPolicy.DeleteAuthPolicy(auth_policy.NewDeleteAuthPolicyParams().WithID(apID), nil)
	wantStatus(t, err, 409, "delete auth policy in use")
	_, err = m.Identity.DeleteIdentity(identity.NewDeleteIdentityParams().WithID(idRes.Payload.Data.ID), nil)
	must(t, err, "delete identity")
	_, err = m.AuthPolicy.DeleteAuthPolicy(auth_policy.NewDeleteAuthPolicyParams().WithID(apID), nil)
	must(t, err, "delete auth policy")
	_, err = m.ExternalJWTSigner.DeleteExternalJWTSigner(external_jwt_signer.NewDeleteExternalJWTSignerParams().WithID(id), nil)
	must(t, err, "delete external JWT signer")
}

func TestManagementPostureChecks(t *testing.T) {
	m := admin(t)
	types, err := m.PostureChecks.ListPostureCheckTypes(posture_checks.NewListPostureCheckTypesParams(), nil)
	must(t, err, "posture check types")
	validate(t, "posture check types", types.Payload)
	if len(types.Payload.Data) < 5 {
		t.Fatalf("posture check types: %d", len(types.Payload.Data))
	}
	_, err = m.PostureChecks.DetailPostureCheckType(posture_checks.NewDetailPostureCheckTypeParams().WithID("OS"), nil)
	must(t, err, "posture check type OS")

	attr := unique("go-pc")
	creates := []rest_model.PostureCheckCreate{}
	domain := &rest_model.PostureCheckDomainCreate{Domains: []string{"go.test"}}
	domain.SetName(ptr(unique("go-domain")))
	domain.SetRoleAttributes(&rest_model.Attributes{attr})
	creates = append(creates, domain)
	mac := &rest_model.PostureCheckMacAddressCreate{MacAddresses: []string{"00:11:22:33:44:55"}}
	mac.SetName(ptr(unique("go-mac")))
	creates = append(creates, mac)
	mfa := &rest_model.PostureCheckMfaCreate{PostureCheckMfaProperties: rest_model.PostureCheckMfaProperties{PromptOnWake: true, TimeoutSeconds: 300}}
	mfa.SetName(ptr(unique("go-mfa")))
	creates = append(creates, mfa)
	osCheck := &rest_model.PostureCheckOperatingSystemCreate{OperatingSystems: []*rest_model.OperatingSystem{{Type: ptr(rest_model.OsTypeLinux), Versions: []string{">=5.0.0"}}}}
	osCheck.SetName(ptr(unique("go-os")))
	creates = append(creates, osCheck)
	proc := &rest_model.PostureCheckProcessCreate{Process: &rest_model.Process{OsType: ptr(rest_model.OsTypeLinux), Path: ptr("/usr/bin/ziti")}}
	proc.SetName(ptr(unique("go-proc")))
	creates = append(creates, proc)
	multi := &rest_model.PostureCheckProcessMultiCreate{Semantic: ptr(rest_model.SemanticAllOf), Processes: []*rest_model.ProcessMulti{{OsType: ptr(rest_model.OsTypeWindows), Path: ptr(`C:\ziti.exe`)}}}
	multi.SetName(ptr(unique("go-multi")))
	creates = append(creates, multi)

	var ids []string
	for _, c := range creates {
		res, err := m.PostureChecks.CreatePostureCheck(posture_checks.NewCreatePostureCheckParams().WithPostureCheck(c), nil)
		must(t, err, "create posture check "+string(c.TypeID()))
		ids = append(ids, res.Payload.Data.ID)
	}
	for _, id := range ids {
		d, err := m.PostureChecks.DetailPostureCheck(posture_checks.NewDetailPostureCheckParams().WithID(id), nil)
		must(t, err, "detail posture check")
		validate(t, "posture check detail", d.Payload)
	}
	l, err := m.PostureChecks.ListPostureChecks(posture_checks.NewListPostureChecksParams().WithFilter(filter(`name contains "go-"`)).WithLimit(ptr(int64(100))), nil)
	must(t, err, "list posture checks")
	validate(t, "posture check list", l.Payload)
	if len(l.Payload.Data()) < len(ids) {
		t.Fatalf("posture check list: %d", len(l.Payload.Data()))
	}
	dp := &rest_model.PostureCheckDomainPatch{Domains: []string{"go.test", "other.test"}}
	_, err = m.PostureChecks.PatchPostureCheck(posture_checks.NewPatchPostureCheckParams().WithID(ids[0]).WithPostureCheck(dp), nil)
	must(t, err, "patch domain posture check")
	du := &rest_model.PostureCheckDomainUpdate{Domains: []string{"only.test"}}
	du.SetName(ptr(unique("go-domain-u")))
	_, err = m.PostureChecks.UpdatePostureCheck(posture_checks.NewUpdatePostureCheckParams().WithID(ids[0]).WithPostureCheck(du), nil)
	must(t, err, "update domain posture check")
	d, err := m.PostureChecks.DetailPostureCheck(posture_checks.NewDetailPostureCheckParams().WithID(ids[0]), nil)
	must(t, err, "detail after update")
	if dd, ok := d.Payload.Data().(*rest_model.PostureCheckDomainDetail); !ok || len(dd.Domains) != 1 || dd.Domains[0] != "only.test" {
		t.Fatalf("domain check after update: %#v", d.Payload.Data())
	}
	ra, err := m.RoleAttributes.ListPostureCheckRoleAttributes(role_attributes.NewListPostureCheckRoleAttributesParams(), nil)
	must(t, err, "posture check role attributes")
	validate(t, "posture check role attributes", ra.Payload)
	for _, id := range ids {
		_, err := m.PostureChecks.DeletePostureCheck(posture_checks.NewDeletePostureCheckParams().WithID(id), nil)
		must(t, err, "delete posture check")
	}
}

func TestManagementEnrollmentsAndAuthenticators(t *testing.T) {
	m := admin(t)
	idRes, err := m.Identity.CreateIdentity(identity.NewCreateIdentityParams().WithIdentity(&rest_model.IdentityCreate{
		Name: ptr(unique("go-enr")), Type: ptr(rest_model.IdentityTypeDefault), IsAdmin: ptr(false),
	}), nil)
	must(t, err, "create identity")
	idID := idRes.Payload.Data.ID
	expires := strfmt.DateTime(time.Now().Add(time.Hour).UTC())
	username := unique("go-user")
	enr, err := m.Enrollment.CreateEnrollment(enrollment.NewCreateEnrollmentParams().WithEnrollment(&rest_model.EnrollmentCreate{
		IdentityID: &idID, Method: ptr("updb"), Username: &username, ExpiresAt: &expires,
	}), nil)
	must(t, err, "create updb enrollment")
	enrID := enr.Payload.Data.ID
	ed, err := m.Enrollment.DetailEnrollment(enrollment.NewDetailEnrollmentParams().WithID(enrID), nil)
	must(t, err, "detail enrollment")
	validate(t, "enrollment detail", ed.Payload)
	// Upstream's enrollment detail carries no username, not even for updb (the enrollment keeps it for the enroll).
	if *ed.Payload.Data.Method != "updb" || ed.Payload.Data.Username != "" || ed.Payload.Data.JWT == "" {
		t.Fatalf("enrollment detail: %+v", ed.Payload.Data)
	}
	newExpiry := strfmt.DateTime(time.Now().Add(2 * time.Hour).UTC())
	_, err = m.Enrollment.RefreshEnrollment(enrollment.NewRefreshEnrollmentParams().WithID(enrID).WithRefresh(&rest_model.EnrollmentRefresh{ExpiresAt: &newExpiry}), nil)
	must(t, err, "refresh enrollment")
	el, err := m.Enrollment.ListEnrollments(enrollment.NewListEnrollmentsParams().WithFilter(filter(fmt.Sprintf(`identity = "%s"`, idID))), nil)
	must(t, err, "list enrollments")
	validate(t, "enrollment list", el.Payload)
	if len(el.Payload.Data) != 1 {
		t.Fatalf("enrollment list: %d", len(el.Payload.Data))
	}
	_, err = m.Enrollment.CreateEnrollment(enrollment.NewCreateEnrollmentParams().WithEnrollment(&rest_model.EnrollmentCreate{
		IdentityID: &idID, Method: ptr("updb"), Username: ptr(unique("u")), ExpiresAt: &expires,
	}), nil)
	wantStatus(t, err, 409, "second updb enrollment")
	jwts, err := m.Enrollment.ListNetworkJWTs(enrollment.NewListNetworkJWTsParams())
	must(t, err, "network jwts")
	validate(t, "network jwts", jwts.Payload)
	_, err = m.Enrollment.DeleteEnrollment(enrollment.NewDeleteEnrollmentParams().WithID(enrID), nil)
	must(t, err, "delete enrollment")

	// authenticators: updb created by the admin, then a cert one
	password := "Go-Interop-Pw-1"
	auth, err := m.Authenticator.CreateAuthenticator(authenticator.NewCreateAuthenticatorParams().WithAuthenticator(&rest_model.AuthenticatorCreate{
		IdentityID: &idID, Method: ptr("updb"), Username: username, Password: password,
	}), nil)
	must(t, err, "create updb authenticator")
	authID := auth.Payload.Data.ID
	ad, err := m.Authenticator.DetailAuthenticator(authenticator.NewDetailAuthenticatorParams().WithID(authID), nil)
	must(t, err, "detail authenticator")
	validate(t, "authenticator detail", ad.Payload)
	if *ad.Payload.Data.Method != "updb" || ad.Payload.Data.Username != username {
		t.Fatalf("authenticator: %+v", ad.Payload.Data)
	}
	_, _ = clientAs(t, username, password)
	_, err = m.Authenticator.PatchAuthenticator(authenticator.NewPatchAuthenticatorParams().WithID(authID).WithAuthenticator(&rest_model.AuthenticatorPatch{
		Password: ptr(rest_model.PasswordNullable("Go-Interop-Pw-2")),
	}), nil)
	must(t, err, "patch authenticator")
	_, _ = clientAs(t, username, "Go-Interop-Pw-2")
	_, err = m.Authenticator.UpdateAuthenticator(authenticator.NewUpdateAuthenticatorParams().WithID(authID).WithAuthenticator(&rest_model.AuthenticatorUpdate{
		Username: ptr(rest_model.Username(username)), Password: ptr(rest_model.Password("Go-Interop-Pw-3")),
	}), nil)
	must(t, err, "update authenticator")
	_, _ = clientAs(t, username, "Go-Interop-Pw-3")
	al, err := m.Authenticator.ListAuthenticators(authenticator.NewListAuthenticatorsParams().WithFilter(filter(fmt.Sprintf(`identity = "%s"`, idID))), nil)
	must(t, err, "list authenticators")
	validate(t, "authenticator list", al.Payload)
	if len(al.Payload.Data) != 1 {
		t.Fatalf("authenticator list: %d", len(al.Payload.Data))
	}
	_, err = m.Authenticator.ReEnrollAuthenticator(authenticator.NewReEnrollAuthenticatorParams().WithID(authID).WithReEnroll(&rest_model.ReEnroll{ExpiresAt: &expires}), nil)
	must(t, err, "re-enroll authenticator")
	_, err = m.Authenticator.DetailAuthenticator(authenticator.NewDetailAuthenticatorParams().WithID(authID), nil)
	wantStatus(t, err, 404, "authenticator after re-enroll")
	enrs, err := m.Identity.GetIdentityEnrollments(identity.NewGetIdentityEnrollmentsParams().WithID(idID), nil)
	must(t, err, "identity enrollments after re-enroll")
	if len(enrs.Payload.Data) != 1 || *enrs.Payload.Data[0].Method != "updb" {
		t.Fatalf("enrollments after re-enroll: %d", len(enrs.Payload.Data))
	}
	_, err = m.Identity.DeleteIdentity(identity.NewDeleteIdentityParams().WithID(idID), nil)
	must(t, err, "delete identity")
}

func TestManagementSessionsAndSettings(t *testing.T) {
	m := admin(t)
	tag := unique("go-sess")
	n := newNetwork(t, tag)
	name := tag + "-user"
	id, password := enrollUpdbIdentity(t, name, tag)
	c, apiSession := clientAs(t, name, password)
	s, err := c.Session.CreateSession(clientsession.NewCreateSessionParams().WithSession(&rest_model.SessionCreate{ServiceID: n.serviceID, Type: rest_model.DialBindDial}), nil)
	must(t, err, "create session")

	// API sessions
	asl, err := m.APISession.ListAPISessions(api_session.NewListAPISessionsParams().WithFilter(filter(fmt.Sprintf(`identity = "%s"`, id))), nil)
	must(t, err, "list api sessions")
	validate(t, "api session list", asl.Payload)
	if len(asl.Payload.Data) != 1 || *asl.Payload.Data[0].ID != *apiSession.ID {
		t.Fatalf("api sessions of the identity: %d", len(asl.Payload.Data))
	}
	asd, err := m.APISession.DetailAPISessions(api_session.NewDetailAPISessionsParams().WithID(*apiSession.ID), nil)
	must(t, err, "detail api session")
	validate(t, "api session detail", asd.Payload)
	if *asd.Payload.Data.IdentityID != id {
		t.Fatalf("api session identity %s", *asd.Payload.Data.IdentityID)
	}

	// sessions
	sd, err := m.Session.DetailSession(mgmtsession.NewDetailSessionParams().WithID(*s.Payload.Data.ID), nil)
	must(t, err, "management session detail")
	validate(t, "management session detail", sd.Payload)
	if *sd.Payload.Data.ServiceID != n.serviceID || *sd.Payload.Data.APISessionID != *apiSession.ID {
		t.Fatalf("session detail: %+v", sd.Payload.Data)
	}
	_, err = m.Session.DeleteSession(mgmtsession.NewDeleteSessionParams().WithID(*s.Payload.Data.ID), nil)
	must(t, err, "management session delete")
	_, err = m.Session.DetailSession(mgmtsession.NewDetailSessionParams().WithID(*s.Payload.Data.ID), nil)
	wantStatus(t, err, 404, "deleted session")

	// deleting the API session logs the client out
	_, err = m.APISession.DeleteAPISessions(api_session.NewDeleteAPISessionsParams().WithID(*apiSession.ID), nil)
	must(t, err, "delete api session")
	_, err = c.CurrentIdentity.GetCurrentIdentity(current_identity.NewGetCurrentIdentityParams(), nil)
	wantStatus(t, err, 401, "client after its api session was deleted")

	// controllers and controller settings
	ctrls, err := m.Controllers.ListControllers(controllers.NewListControllersParams(), nil)
	must(t, err, "list controllers")
	validate(t, "controller list", ctrls.Payload)
	global, err := m.Settings.DetailControllerSetting(settings.NewDetailControllerSettingParams().WithID("global"), nil)
	must(t, err, "global controller settings")
	validate(t, "global controller settings", global.Payload)
	_, err = m.Settings.PatchControllerSetting(settings.NewPatchControllerSettingParams().WithID("global").WithControllerSetting(&rest_model.ControllerSettingPatch{
		ControllerSettings: rest_model.ControllerSettings{Oidc: &rest_model.ControllerSettingsOidc{RedirectUris: []string{"https://app.go.test/cb"}, PostLogoutUris: []string{}}},
	}), nil)
	must(t, err, "patch global settings")
	sl, err := m.Settings.ListControllerSettings(settings.NewListControllerSettingsParams(), nil)
	must(t, err, "list controller settings")
	validate(t, "controller settings list", sl.Payload)
	if len(ctrls.Payload.Data) > 0 {
		ctrlID := *ctrls.Payload.Data[0].ID
		_, err = m.Settings.CreateControllerSetting(settings.NewCreateControllerSettingParams().WithControllerSetting(&rest_model.ControllerSettingCreate{
			ControllerID:       &ctrlID,
			ControllerSettings: rest_model.ControllerSettings{Oidc: &rest_model.ControllerSettingsOidc{RedirectUris: []string{"https://ctrl.go.test/cb"}, PostLogoutUris: []string{}}},
		}), nil)
		must(t, err, "create controller setting")
		_, err = m.Settings.UpdateControllerSetting(settings.NewUpdateControllerSettingParams().WithID(ctrlID).WithControllerSetting(&rest_model.ControllerSettingUpdate{
			ControllerSettings: rest_model.ControllerSettings{Oidc: &rest_model.ControllerSettingsOidc{RedirectUris: []string{"https://ctrl.go.test/cb2"}, PostLogoutUris: []string{}}},
		}), nil)
		must(t, err, "update controller setting")
		eff, err := m.Settings.DetailControllerSettingEffective(settings.NewDetailControllerSettingEffectiveParams().WithID(ctrlID), nil)
		must(t, err, "effective controller setting")
		validate(t, "effective controller setting", eff.Payload)
		_, err = m.Settings.DeleteControllerSetting(settings.NewDeleteControllerSettingParams().WithID(ctrlID), nil)
		must(t, err, "delete controller setting")
	}
}
