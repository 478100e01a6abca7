"""
The OpenZiti Python SDK (`openziti`, which carries the C SDK) against Portcullis: enrollment from a Portcullis JWT,
loading the identity, the C SDK's service list (paged by 25), its `service-updates` poll seeing services added,
changed and removed by policy changes, and a dial attempt up to the point where an edge router would be needed.

Setup is done over the management REST API. Without a running edge router no data can flow, so dialing is only
checked until the C SDK has obtained a network session and gives up for lack of a reachable router.
"""
from __future__ import annotations

import json
import socket
import ssl
import subprocess
import sys
import time
from pathlib import Path

import openziti
import pytest
from openziti import zitilib

import ziti_c
from conftest import Api, ApiError, jwt_claims, jwt_header

SERVICE_COUNT = 30  # more than the C SDK's page size (25), so its service listing needs two pages
UPDATE_TIMEOUT = 60  # seconds; the contexts poll every second


def enroll(jwt: str) -> str:
    """openziti.enroll(), refusing up front a JWT this C SDK release cannot verify (it would wait forever)."""
    alg = jwt_header(jwt).get("alg")
    if alg != "RS256":
        pytest.fail(f"enrollment JWT is {alg}: the C SDK of the pinned openziti wheel verifies only RS256 enrollment "
                    "JWTs, so Portcullis must run with --server-key-type rsa (test/interop/run.mjs does)")
    return openziti.enroll(jwt)


@pytest.fixture(scope="module")
def network(mgmt: Api, tag: str) -> dict:
    """An identity with an ott enrollment, SERVICE_COUNT services it may dial, and an (unenrolled) edge router."""
    identity_id = mgmt.create("/identities", {"name": f"{tag}-client", "type": "User", "isAdmin": False,
                                             "roleAttributes": [f"{tag}-clients"], "enrollment": {"ott": True}})
    services = {}
    for i in range(SERVICE_COUNT):
        name = f"{tag}-svc-{i:02d}"
        services[name] = mgmt.create("/services", {"name": name, "roleAttributes": [f"{tag}-services"],
                                                   "encryptionRequired": True})
    mgmt.create("/service-policies", {"name": f"{tag}-dial", "type": "Dial", "semantic": "AnyOf",
                                      "identityRoles": [f"#{tag}-clients"], "serviceRoles": [f"#{tag}-services"]})
    router_id = mgmt.create("/edge-routers", {"name": f"{tag}-router", "roleAttributes": [f"{tag}-routers"]})
    mgmt.create("/edge-router-policies", {"name": f"{tag}-erp", "semantic": "AnyOf",
                                          "identityRoles": [f"#{tag}-clients"], "edgeRouterRoles": [f"#{tag}-routers"]})
    mgmt.create("/service-edge-router-policies", {"name": f"{tag}-serp", "semantic": "AnyOf",
                                                  "serviceRoles": [f"#{tag}-services"],
                                                  "edgeRouterRoles": [f"#{tag}-routers"]})
    enrollment = mgmt.get(f"/identities/{identity_id}")["data"]["enrollment"]["ott"]
    return {"identity_id": identity_id, "jwt": enrollment["jwt"], "token": enrollment["token"],
            "services": services, "router_id": router_id}


@pytest.fixture(scope="module")
def identity_file(network: dict, tmp_path_factory) -> Path:
    """Enrolls the identity with the C SDK and stores the identity JSON it returns."""
    identity_json = enroll(network["jwt"])
    path = tmp_path_factory.mktemp("identities") / "client.json"
    path.write_text(identity_json)
    return path


@pytest.fixture(scope="module")
def ztx(identity_file: Path):
    """A C SDK context for the enrolled identity that refreshes its services every second."""
    context = ziti_c.ZitiContext(str(identity_file), refresh_interval=1)
    yield context
    context.close()


def openssl_verify(chain_pem: str, ca_file: str, tmp: Path) -> None:
    blocks = [b + "-----END CERTIFICATE-----\n" for b in chain_pem.split("-----END CERTIFICATE-----") if "BEGIN" in b]
    (tmp / "leaf.pem").write_text(blocks[0].lstrip())
    args = ["openssl", "verify", "-purpose", "sslclient", "-CAfile", ca_file]
    if len(blocks) > 1:
        (tmp / "untrusted.pem").write_text("".join(b.lstrip() for b in blocks[1:]))
        args += ["-untrusted", str(tmp / "untrusted.pem")]
    subprocess.run(args + [str(tmp / "leaf.pem")], check=True, capture_output=True)


# --- enrollment -------------------------------------------------------------------------------------------------

def test_the_c_sdk_is_the_pinned_release():
    version, _revision = openziti.version().version.decode(), openziti.version().revision.decode()
    assert version.startswith("0.29."), version


def test_enrollment_jwt_is_signed_with_an_algorithm_the_c_sdk_verifies(network: dict, env):
    header = jwt_header(network["jwt"])
    assert header["alg"] == "RS256", (
        "this C SDK release verifies only RSA enrollment JWT signatures: start Portcullis with --server-key-type rsa")
    claims = jwt_claims(network["jwt"])
    assert claims["iss"] == env.url
    assert claims["em"] == "ott"
    assert claims["sub"] == network["identity_id"]


def test_enroll_returns_an_identity_for_this_controller(identity_file: Path, network: dict, env, mgmt: Api, tmp_path):
    identity = json.loads(identity_file.read_text())
    assert identity["ztAPI"] == env.url
    assert identity["id"]["key"].startswith("pem:-----BEGIN") or "PRIVATE KEY" in identity["id"]["key"]
    cert = identity["id"]["cert"].removeprefix("pem:")
    ca = identity["id"]["ca"].removeprefix("pem:")
    # the issued certificate chains to the controller's CA bundle, and the CA the SDK stored is that bundle
    openssl_verify(cert, env.ca_file, tmp_path)
    with open(env.ca_file) as f:
        bundle = f.read()
    for block in [b for b in ca.split("-----END CERTIFICATE-----") if "BEGIN" in b]:
        assert block.strip().split("-----BEGIN CERTIFICATE-----")[1].strip() in bundle
    # the enrollment is consumed and the identity now has a certificate authenticator
    assert mgmt.get(f"/identities/{network['identity_id']}")["data"]["enrollment"] == {}
    authenticators = mgmt.get(f"/identities/{network['identity_id']}/authenticators")["data"]
    assert [a["method"] for a in authenticators] == ["cert"]


def test_enroll_with_a_used_jwt_fails(identity_file: Path, network: dict):
    with pytest.raises(RuntimeError):
        enroll(network["jwt"])


def test_enroll_with_a_jwt_of_a_deleted_enrollment_fails(mgmt: Api, tag: str):
    identity_id = mgmt.create("/identities", {"name": f"{tag}-revoked", "type": "User", "isAdmin": False,
                                             "enrollment": {"ott": True}})
    enrollment = mgmt.get(f"/identities/{identity_id}")["data"]["enrollment"]["ott"]
    mgmt.delete(f"/enrollments/{enrollment['id']}")
    with pytest.raises(RuntimeError):
        enroll(enrollment["jwt"])


def test_enroll_with_a_tampered_jwt_fails(mgmt: Api, tag: str):
    identity_id = mgmt.create("/identities", {"name": f"{tag}-tampered", "type": "User", "isAdmin": False,
                                             "enrollment": {"ott": True}})
    jwt = mgmt.get(f"/identities/{identity_id}")["data"]["enrollment"]["ott"]["jwt"]
    head, body, sig = jwt.split(".")
    tampered = ".".join([head, body, sig[:10] + ("A" if sig[10] != "A" else "B") + sig[11:]])
    # This C SDK release never returns from an enrollment whose JWT signature does not verify (it aborts the TLS
    # connection and leaves the caller waiting), so the attempt runs in a child process with a time limit.
    script = "import sys, openziti\ntry:\n    print(openziti.enroll(sys.argv[1]))\nexcept RuntimeError:\n    sys.exit(3)\n"
    try:
        done = subprocess.run([sys.executable, "-c", script, tampered], capture_output=True, text=True, timeout=10)
        assert done.returncode != 0 and "ztAPI" not in done.stdout, done.stdout
    except subprocess.TimeoutExpired as timed_out:
        out = timed_out.stdout or b""
        assert "ztAPI" not in (out.decode() if isinstance(out, bytes) else out)
    # the untouched token still enrolls afterwards: nothing was consumed by the rejected attempt
    assert json.loads(enroll(jwt))["ztAPI"]


# --- the C SDK context: services, paging, updates -------------------------------------------------------------

def test_openziti_load_logs_in_with_the_certificate(identity_file: Path, network: dict, mgmt: Api):
    context = openziti.load(str(identity_file))
    assert isinstance(context, openziti.context.ZitiContext)
    sessions = mgmt.list_all("/api-sessions", f'identity = "{network["identity_id"]}"')
    assert sessions, "the C SDK created an API session for the identity"
    assert all(s["authenticatorId"] for s in sessions)


def test_lists_every_service_across_pages(ztx: ziti_c.ZitiContext, network: dict):
    expected = set(network["services"])
    assert ztx.wait_for(lambda c: expected <= set(c.services), UPDATE_TIMEOUT), (
        f"C SDK saw {len(ztx.services)} services: {sorted(ztx.services)}")
    assert set(ztx.services) == expected
    assert ztx.context_events and ztx.context_events[0][0] == 0, ztx.context_events
    for name, service_id in network["services"].items():
        service = ztx.services[name]
        assert service["id"] == service_id
        assert service["permissions"] == ["Dial"]
        assert service["encryptionRequired"] is True


def test_sees_a_service_added_by_a_new_policy(ztx: ziti_c.ZitiContext, network: dict, mgmt: Api, tag: str):
    ztx.wait_for(lambda c: set(network["services"]) <= set(c.services), UPDATE_TIMEOUT)
    name = f"{tag}-late"
    service_id = mgmt.create("/services", {"name": name, "encryptionRequired": True})
    mgmt.create("/service-policies", {"name": f"{tag}-late-dial", "type": "Dial", "semantic": "AnyOf",
                                      "identityRoles": [f"@{network['identity_id']}"], "serviceRoles": [f"@{service_id}"]})
    network["late"] = (name, service_id)
    assert ztx.wait_for(lambda c: name in c.services, UPDATE_TIMEOUT), "the new service did not reach the C SDK"
    added = [e for e in ztx.service_events if any(s["name"] == name for s in e["added"])]
    assert added, ztx.service_events[-1:]
    assert ztx.services[name]["id"] == service_id
    assert ztx.services[name]["permissions"] == ["Dial"]
    assert len(ztx.services) == SERVICE_COUNT + 1


def test_sees_a_permission_change(ztx: ziti_c.ZitiContext, network: dict, mgmt: Api, tag: str):
    name, service_id = network["late"]
    mgmt.create("/service-policies", {"name": f"{tag}-late-bind", "type": "Bind", "semantic": "AnyOf",
                                      "identityRoles": [f"@{network['identity_id']}"], "serviceRoles": [f"@{service_id}"]})
    assert ztx.wait_for(lambda c: sorted(c.services.get(name, {}).get("permissions", [])) == ["Bind", "Dial"],
                        UPDATE_TIMEOUT), ztx.services.get(name)
    assert any(any(s["name"] == name for s in e["changed"]) for e in ztx.service_events)


def test_sees_a_service_removed_with_its_policies(ztx: ziti_c.ZitiContext, network: dict, mgmt: Api, tag: str):
    name, _service_id = network["late"]
    for policy in mgmt.list_all("/service-policies", f'name contains "{tag}-late-"'):
        mgmt.delete(f"/service-policies/{policy['id']}")
    assert ztx.wait_for(lambda c: name not in c.services, UPDATE_TIMEOUT), "the service is still listed"
    assert any(any(s["name"] == name for s in e["removed"]) for e in ztx.service_events)
    assert set(ztx.services) == set(network["services"])


# --- dialing (needs an edge router that moves data: checked up to that point) ----------------------------------

def _raw_connect(context, service: str) -> int:
    # ZitiContext.connect() of this openziti release encodes a missing terminator as bytes(None) and raises
    # TypeError before reaching the C SDK, so the zitilib call is made directly with no terminator.
    fd = zitilib.ziti_socket(socket.SOCK_STREAM)
    rc = zitilib._ziti_connect(fd, context._ctx, service.encode(), None)
    if rc == 0:
        socket.close(fd)
        return 0
    return zitilib._ziti_lasterr()  # zitilib has already released the socket of a failed connect


def test_dialing_an_unknown_service_is_refused(identity_file: Path, tag: str):
    context = openziti.load(str(identity_file))
    err = _raw_connect(context, f"{tag}-no-such-service")
    assert err != 0
    assert "not available" in zitilib.errorstr(err).lower(), zitilib.errorstr(err)


def test_dialing_a_service_gets_a_session_then_needs_a_router(identity_file: Path, network: dict, mgmt: Api):
    context = openziti.load(str(identity_file))
    name = sorted(network["services"])[0]
    err = _raw_connect(context, name)
    # no edge router is running, so the C SDK times out looking for one after it got a Dial session
    assert err != 0
    sessions = [s for s in mgmt.list_all("/sessions", f'identity = "{network["identity_id"]}"')
                if s["serviceId"] == network["services"][name]]
    assert sessions, "the C SDK created a Dial session for the service"
    assert sessions[0]["type"] == "Dial"
    assert [r["name"] for r in sessions[0]["edgeRouters"]] == [mgmt.get(f"/edge-routers/{network['router_id']}")["data"]["name"]]
