package interop

import (
	"testing"

	"github.com/openziti/edge-api/rest_management_api_client/config"
	"github.com/openziti/edge-api/rest_management_api_client/edge_router"
	"github.com/openziti/edge-api/rest_management_api_client/edge_router_policy"
	"github.com/openziti/edge-api/rest_management_api_client/identity"
	"github.com/openziti/edge-api/rest_management_api_client/service"
	"github.com/openziti/edge-api/rest_management_api_client/service_edge_router_policy"
	"github.com/openziti/edge-api/rest_management_api_client/service_policy"
	"github.com/openziti/edge-api/rest_model"
)

// network is a small access model built through the management API: a service with an intercept.v1 and a
// host.v1 config, an edge router (never online), and the policies that let every identity carrying the
// attribute `tag` dial and bind the service over that router.
type network struct {
	tag           string
	serviceID     string
	serviceName   string
	edgeRouterID  string
	dialPolicyID  string
	bindPolicyID  string
	interceptCfg  string
	hostCfg       string
	interceptAddr string
}

func newNetwork(t *testing.T, tag string) *network {
	t.Helper()
	m := admin(t)
	n := &network{tag: tag, serviceName: tag + "-svc", interceptAddr: tag + ".go.test"}
	ic, err := m.Config.CreateConfig(config.NewCreateConfigParams().WithConfig(&rest_model.ConfigCreate{
		Name: ptr(tag + "-intercept"), ConfigTypeID: ptr(builtInConfigTypeID(t, "intercept.v1")),
		Data: map[string]any{"protocols": []any{"tcp"}, "addresses": []any{n.interceptAddr}, "portRanges": []any{map[string]any{"low": 443, "high": 443}}},
	}), nil)
	must(t, err, "create intercept config")
	n.interceptCfg = ic.Payload.Data.ID
	hc, err := m.Config.CreateConfig(config.NewCreateConfigParams().WithConfig(&rest_model.ConfigCreate{
		Name: ptr(tag + "-host"), ConfigTypeID: ptr(builtInConfigTypeID(t, "host.v1")),
		Data: map[string]any{"protocol": "tcp", "address": "127.0.0.1", "port": 443},
	}), nil)
	must(t, err, "create host config")
	n.hostCfg = hc.Payload.Data.ID
	svc, err := m.Service.CreateService(service.NewCreateServiceParams().WithService(&rest_model.ServiceCreate{
		Name: &n.serviceName, EncryptionRequired: ptr(true), RoleAttributes: []string{tag}, Configs: []string{n.interceptCfg, n.hostCfg},
	}), nil)
	must(t, err, "create service")
	n.serviceID = svc.Payload.Data.ID
	er, err := m.EdgeRouter.CreateEdgeRouter(edge_router.NewCreateEdgeRouterParams().WithEdgeRouter(&rest_model.EdgeRouterCreate{
		Name: ptr(tag + "-er"), RoleAttributes: &rest_model.Attributes{tag},
	}), nil)
	must(t, err, "create edge router")
	n.edgeRouterID = er.Payload.Data.ID
	role := rest_model.Roles{"#" + tag}
	erp, err := m.EdgeRouterPolicy.CreateEdgeRouterPolicy(edge_router_policy.NewCreateEdgeRouterPolicyParams().WithPolicy(&rest_model.EdgeRouterPolicyCreate{
		Name: ptr(tag + "-erp"), Semantic: ptr(rest_model.SemanticAnyOf), IdentityRoles: role, EdgeRouterRoles: role,
	}), nil)
	must(t, err, "create edge router policy")
	serp, err := m.ServiceEdgeRouterPolicy.CreateServiceEdgeRouterPolicy(service_edge_router_policy.NewCreateServiceEdgeRouterPolicyParams().WithPolicy(&rest_model.ServiceEdgeRouterPolicyCreate{
		Name: ptr(tag + "-serp"), Semantic: ptr(rest_model.SemanticAnyOf), ServiceRoles: role, EdgeRouterRoles: role,
	}), nil)
	must(t, err, "create service edge router policy")
	n.dialPolicyID = n.createServicePolicy(t, rest_model.DialBindDial, role)
	n.bindPolicyID = n.createServicePolicy(t, rest_model.DialBindBind, role)
	t.Cleanup(func() {
		m.ServicePolicy.DeleteServicePolicy(service_policy.NewDeleteServicePolicyParams().WithID(n.dialPolicyID), nil)
		m.ServicePolicy.DeleteServicePolicy(service_policy.NewDeleteServicePolicyParams().WithID(n.bindPolicyID), nil)
		m.EdgeRouterPolicy.DeleteEdgeRouterPolicy(edge_router_policy.NewDeleteEdgeRouterPolicyParams().WithID(erp.Payload.Data.ID), nil)
		m.ServiceEdgeRouterPolicy.DeleteServiceEdgeRouterPolicy(service_edge_router_policy.NewDeleteServiceEdgeRouterPolicyParams().WithID(serp.Payload.Data.ID), nil)
		m.EdgeRouter.DeleteEdgeRouter(edge_router.NewDeleteEdgeRouterParams().WithID(n.edgeRouterID), nil)
		m.Service.DeleteService(service.NewDeleteServiceParams().WithID(n.serviceID), nil)
		m.Config.DeleteConfig(config.NewDeleteConfigParams().WithID(n.interceptCfg), nil)
		m.Config.DeleteConfig(config.NewDeleteConfigParams().WithID(n.hostCfg), nil)
	})
	return n
}

func (n *network) createServicePolicy(t *testing.T, kind rest_model.DialBind, identityRoles rest_model.Roles) string {
	t.Helper()
	res, err := admin(t).ServicePolicy.CreateServicePolicy(service_policy.NewCreateServicePolicyParams().WithPolicy(&rest_model.ServicePolicyCreate{
		Name: ptr(unique(n.tag + "-" + string(kind))), Type: ptr(kind), Semantic: ptr(rest_model.SemanticAnyOf),
		IdentityRoles: identityRoles, ServiceRoles: rest_model.Roles{"@" + n.serviceID}, PostureCheckRoles: rest_model.Roles{},
	}), nil)
	must(t, err, "create service policy")
	return res.Payload.Data.ID
}

// newIdentity creates an identity carrying the attribute tag; enrollment may be nil. It is deleted at the end.
func newIdentity(t *testing.T, name, tag string, enrollment *rest_model.IdentityCreateEnrollment) string {
	t.Helper()
	m := admin(t)
	attrs := rest_model.Attributes{}
	if tag != "" {
		attrs = append(attrs, tag)
	}
	res, err := m.Identity.CreateIdentity(identity.NewCreateIdentityParams().WithIdentity(&rest_model.IdentityCreate{
		Name: &name, Type: ptr(rest_model.IdentityTypeDefault), IsAdmin: ptr(false), RoleAttributes: &attrs, Enrollment: enrollment,
	}), nil)
	must(t, err, "create identity "+name)
	id := res.Payload.Data.ID
	t.Cleanup(func() { m.Identity.DeleteIdentity(identity.NewDeleteIdentityParams().WithID(id), nil) })
	return id
}

// identityDetail reads an identity through the management API.
func identityDetail(t *testing.T, id string) *rest_model.IdentityDetail {
	t.Helper()
	res, err := admin(t).Identity.DetailIdentity(identity.NewDetailIdentityParams().WithID(id), nil)
	must(t, err, "detail identity")
	return res.Payload.Data
}
