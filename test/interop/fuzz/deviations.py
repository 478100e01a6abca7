"""
Where the fuzz suite knowingly departs from the reference specs. Each entry is as narrow as the fact behind it
and says why; nothing else is excluded. Every one was checked against the upstream controller (v2.0.0-pre3,
`ziti edge quickstart`), which sends the same (README.md says how to point the suite at it).

- SPEC_PATCHES change the copy of a reference spec that Schemathesis reads (never the file itself): a JSON
  pointer into the swagger document, the keys set there (None removes a key) and required names dropped.
- ACCEPTED lists failures of a check that are accepted where they happen, matched by API, operation, status and
  failure kind; hooks.py counts each one it drops.
"""
from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Callable


@dataclass(frozen=True)
class SpecPatch:
    apis: tuple[str, ...]
    pointer: str
    set: dict
    reason: str
    drop_required: tuple[str, ...] = field(default=())


BOTH = ("client", "management")
CLIENT = ("client",)
MGMT = ("management",)

# Fields upstream renders as JSON null when they were never set (Go nil slices, maps and pointers), which the
# reference declares non-nullable. A record made the same way reads null from upstream too; the test suite
# tolerates the same nulls (`allowNullAt` in test/api). Each patch marks exactly that property `x-nullable` in the
# response definition: (APIs, definition and path to its properties, property, when it is null).
_NIL_WHEN_UNSET = [
    (BOTH, "identityDetail/allOf/1", "interfaces", "an identity that never reported its network interfaces"),
    (MGMT, "edgeRouterDetail/allOf/2", "interfaces", "an edge router that never reported its network interfaces"),
    (MGMT, "routerDetail/allOf/1", "interfaces", "a router that never reported its network interfaces"),
    (MGMT, "routerDetail/allOf/1", "fingerprint", "a transit router that is not enrolled"),
    (BOTH, "serviceDetail/allOf/1", "configs", "a service created without configs"),
    (BOTH, "serviceDetail/allOf/1", "config", "a service created without configs"),
    (MGMT, "serviceDetail/allOf/1", "permissions", "services listed below an identity or a policy"),
    (MGMT, "servicePolicyDetail/allOf/1", "identityRoles", "a service policy created without them"),
    (MGMT, "servicePolicyDetail/allOf/1", "serviceRoles", "a service policy created without them"),
    (MGMT, "servicePolicyDetail/allOf/1", "postureCheckRoles", "a service policy created without them"),
    (MGMT, "serviceEdgeRouterPolicyDetail/allOf/1", "edgeRouterRoles", "a service edge router policy created without them"),
    (MGMT, "serviceEdgeRouterPolicyDetail/allOf/1", "serviceRoles", "a service edge router policy created without them"),
    (MGMT, "edgeRouterPolicyDetail/allOf/1", "edgeRouterRoles", "an edge router policy created without them"),
    (MGMT, "edgeRouterPolicyDetail/allOf/1", "identityRoles", "an edge router policy created without them"),
    (MGMT, "configTypeDetail/allOf/1", "schema", "a config type created without a schema"),
    (MGMT, "postureCheckTypeDetail/allOf/1", "version", "the built-in posture check types"),
    (MGMT, "postureDataBase", "lastUpdatedAt", "posture data not submitted yet"),
    (MGMT, "postureDataEndpointState", "unlockedAt", "an API session whose endpoint never unlocked"),
    (MGMT, "postureDataEndpointState", "wokenAt", "an API session whose endpoint never woke"),
    (MGMT, "postureDataMfa", "passedAt", "an API session that never passed MFA"),
    (MGMT, "externalJwtSignerDetail/allOf/1", "clientId", "an external JWT signer created without it"),
    (MGMT, "externalJwtSignerDetail/allOf/1", "externalAuthUrl", "an external JWT signer created without it"),
    (MGMT, "externalJwtSignerDetail/allOf/1", "kid", "an external JWT signer created without it"),
    (MGMT, "externalJwtSignerDetail/allOf/1", "fingerprint", "an external JWT signer with a JWKS endpoint"),
    (CLIENT, "clientExternalJwtSignerDetail/allOf/1", "externalAuthUrl", "an external JWT signer created without it"),
    (MGMT, "dataIntegrityCheckDetails", "error", "an integrity check that ended without error"),
    (BOTH, "currentIdentityDetailEnvelope", "meta", "GET /current-identity"),
    (MGMT, "listSummaryCountsEnvelope", "meta", "GET /summary"),
    (MGMT, "traceDetailEnvelope", "meta", "PUT /identities/{id}/trace"),
    (MGMT, "caDetail/allOf/1", "identityRoles", "a CA without identity roles"),
    (MGMT, "externalJwtSignerDetail/allOf/1", "scopes", "an external JWT signer without scopes"),
    (CLIENT, "clientExternalJwtSignerDetail/allOf/1", "scopes", "an external JWT signer without scopes"),
    (MGMT, "dataIntegrityCheckDetails", "results", "an integrity check that found nothing, or none run yet"),
    (BOTH, "detailMfa/allOf/1", "recoveryCodes", "a verified MFA enrollment (its codes are shown once)"),
    (BOTH, "postureQuery/allOf/1", "processes", "every posture query but a PROCESS_MULTI one"),
    (MGMT, "postureDataMfa", "passedOnWake", "an API session whose endpoint never woke after MFA"),
    (MGMT, "postureDataMfa", "passedOnUnlock", "an API session whose endpoint never unlocked after MFA"),
    (MGMT, "postureDataOs/allOf/1", "build", "an identity that never reported its OS"),
    (MGMT, "postureDataOs/allOf/1", "type", "an identity that never reported its OS"),
    (MGMT, "postureDataOs/allOf/1", "version", "an identity that never reported its OS"),
    (MGMT, "postureDataDomain/allOf/1", "domain", "an identity that never reported its domain"),
    (MGMT, "postureDataMac/allOf/1", "addresses", "an identity that never reported its MAC addresses"),
]

_ANY_SCALAR = {"type": ["string", "number", "boolean", "null"]}

# An operating system entry as responses carry it: the shared operatingSystem definition with `versions` nullable
# (upstream sends null for an entry without versions); the shared definition itself stays strict for requests.
_OS_ENTRY_RESPONSE = {"$ref": None, "type": "object", "required": ["type", "versions"], "properties": {
    "type": {"$ref": "#/definitions/osType"},
    "versions": {"type": "array", "items": {"type": "string"}, "x-nullable": True}}}

SPEC_PATCHES: list[SpecPatch] = [
    SpecPatch(BOTH, "/definitions/link/properties/href", {"format": "uri-reference"},
              "every `_links` href is relative (`./identities/x`), upstream's as well; the spec says `format: uri`, "
              "which requires a scheme. A URI reference is what both controllers send."),
    SpecPatch(MGMT, "/definitions/edgeRouterDetail/allOf/2", {},
              "edgeRouterDetail requires os, version, arch, buildDate and revision, which its properties never "
              "declare (they are fields of versionInfo); upstream never sends them at the top level.",
              drop_required=("os", "version", "arch", "buildDate", "revision")),
    SpecPatch(BOTH, "/paths/~1specs~1{id}~1spec/get/responses/200",
              {"schema": {"type": "object", "required": ["swagger", "info", "paths"]}},
              "GET /specs/{id}/spec answers the swagger document itself, without the {data, meta} envelope the "
              "spec declares (detailSpecBodyEnvelope), as upstream does (../shared/docs/upstream/conventions.md, "
              "section 6). The body is still checked to be a swagger document."),
    SpecPatch(BOTH, "/definitions/subTags", {"additionalProperties": {"type": ["string", "boolean", "null"]}},
              "`tags` values are declared `type: object`, which go-swagger reads as any value (Go interface{}); the "
              "definition's own description limits them to null, string and boolean, the contract Portcullis "
              "enforces on input (README), so responses are held to it too."),
    SpecPatch(BOTH, "/definitions/identityDetail/allOf/1/properties/appData",
              {"$ref": None, "type": "object", "additionalProperties": True, "x-nullable": True},
              "an identity's appData is typed `tags` (null, string or boolean values), but upstream stores and "
              "returns any JSON value there (numbers, nested objects and lists), and so does Portcullis: clients "
              "keep structured data in it."),
    SpecPatch(BOTH, "/definitions/commonEdgeRouterProperties/properties/appData",
              {"$ref": None, "type": "object", "additionalProperties": _ANY_SCALAR, "x-nullable": True},
              "an edge router's appData is typed `tags`, but upstream stores and returns numbers there as well "
              "(nested values are refused), and so does Portcullis."),
    SpecPatch(MGMT, "/definitions/postureCheckTypeDetail/allOf/1/properties/operatingSystems/items",
              _OS_ENTRY_RESPONSE,
              "built-in posture check types list operating systems without versions (null), as upstream does; the "
              "shared operatingSystem definition stays strict for request bodies, this copy is for the response."),
    SpecPatch(BOTH, "/definitions/apiSessionDetail/allOf/1", {},
              "upstream never sends `cachedUpdatedAt`, which apiSessionDetail declares required; neither does "
              "Portcullis (the API tests drop the same requirement).", drop_required=("cachedUpdatedAt",)),
    SpecPatch(MGMT, "/definitions/enrollmentDetail/allOf/1", {},
              "upstream never sends an enrollment's `details`, which enrollmentDetail declares required; neither "
              "does Portcullis.", drop_required=("details",)),
    SpecPatch(MGMT, "/definitions/postureCheckProcessDetail/allOf/1/properties/process",
              {"$ref": None, "type": "object", "required": ["osType", "path"], "properties": {
                  "hashes": {"type": "array", "items": {"type": "string"}, "x-nullable": True},
                  "osType": {"$ref": "#/definitions/osType"}, "path": {"type": "string"},
                  "signerFingerprint": {"type": "string"}}},
              "a PROCESS posture check without hashes reads `hashes: null`, as upstream; the shared process "
              "definition stays strict for request bodies, this copy is for the response."),
    SpecPatch(MGMT, "/definitions/postureCheckOperatingSystemDetail/allOf/1/properties/operatingSystems/items",
              _OS_ENTRY_RESPONSE,
              "an OS posture check entry without versions reads `versions: null`, as upstream; the shared "
              "operatingSystem definition stays strict for request bodies, this copy is for the response."),
] + [
    SpecPatch(apis, f"/definitions/{where}/properties/{prop}", {"x-nullable": True}, f"upstream renders null for {when}")
    for apis, where, prop, when in _NIL_WHEN_UNSET
]


def _resolve(document: dict, pointer: str) -> dict:
    node = document
    for part in pointer.lstrip("/").split("/"):
        part = part.replace("~1", "/").replace("~0", "~")
        if isinstance(node, list):
            node = node[int(part)]
        elif part in node:
            node = node[part]
        else:
            raise KeyError(f"spec patch pointer {pointer} does not resolve (no {part!r})")
    if not isinstance(node, dict):
        raise KeyError(f"spec patch pointer {pointer} does not name an object")
    return node


def apply_spec_patches(api: str, document: dict) -> None:
    """Applies every patch for `api`; a pointer or required name that is not there is an error, not a no-op."""
    for patch in SPEC_PATCHES:
        if api not in patch.apis:
            continue
        node = _resolve(document, patch.pointer)
        for key, value in patch.set.items():
            if value is None:
                node.pop(key, None)
            else:
                node[key] = copy.deepcopy(value)  # patches may share a value; each place gets its own
        if patch.drop_required:
            missing = [name for name in patch.drop_required if name not in node.get("required", [])]
            if missing:
                raise KeyError(f"spec patch {patch.pointer}: {missing} are not required there")
            node["required"] = [name for name in node["required"] if name not in patch.drop_required]


@dataclass(frozen=True)
class Accepted:
    apis: tuple[str, ...]
    matches: Callable[[str, object, object, object], bool]
    reason: str


def _json_error_of_jwt_operation(label: str, failure, case, response) -> bool:
    return (
        label == "GET /cas/{id}/jwt"
        and failure.code == "ST105"
        and response.status_code >= 400
        and str(getattr(failure, "content_type", "")).startswith("application/json")
    )


ACCEPTED: list[Accepted] = [
    Accepted(MGMT, _json_error_of_jwt_operation,
             "GET /cas/{id}/jwt declares only application/jwt, but its errors (401, 404) are the JSON error "
             "envelope with Content-Type application/json, as upstream answers them."),
]


def api_of(base_path: str) -> str:
    if base_path.startswith("/edge/client"):
        return "client"
    if base_path.startswith("/edge/management"):
        return "management"
    return "fabric"


def accepted(api: str, failure, case, response) -> str | None:
    """The reason a failure is accepted, or None when it counts."""
    label = f"{case.operation.method.upper()} {case.operation.path}"
    for entry in ACCEPTED:
        if api in entry.apis and entry.matches(label, failure, case, response):
            return entry.reason
    return None
