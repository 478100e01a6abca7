"""
Property-based fuzzing of Portcullis' HTTP APIs with Schemathesis, driven by the OpenAPI documents: the Edge
client and management APIs against the upstream reference specs (edge-api v0.27.0), the fabric API against the
document Portcullis serves. Every response must be free of server errors, match the schema the spec declares for
its status and carry a declared Content-Type (see README.md). test/interop/run.mjs starts the controller.

Tests run in file order:
1. the main phase: each API as an admin, then as a plain identity, with the operations that would end the
   fuzzer's own session left out (SELF_ENDING) and the suite's own records kept out of write operations' paths;
2. the last phase: each left-out operation, and each write on an identity's own records, aimed at the records of
   an identity made just for that run and logged in just before it;
and after every run the database integrity check must find nothing.
"""
from __future__ import annotations

import json
import os
import shutil
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

import harness
from harness import CLIENT, MGMT, Budget, Env, Login, Rest, RunResult

# Operations that end or change the session of whoever calls them: run only in the last phase, each with a
# session of its own.
SELF_ENDING = {
    "DELETE /current-api-session": "logs the caller out",
    "PUT /current-identity/authenticators/{id}": "changes the caller's own password",
    "PATCH /current-identity/authenticators/{id}": "changes the caller's own password",
    "POST /current-identity/authenticators/{id}/extend": "replaces the caller's own certificate authenticator",
    "POST /current-identity/authenticators/{id}/extend-verify": "replaces the caller's own certificate authenticator",
}

# Management writes that end a session or change a login when aimed at the caller's own identity (disable,
# delete, re-enroll, password change, auth policy). In the main phase they run with the suite's own ids kept
# out of their paths; in the last phase each runs again against the fuzzing identity's own records.
OWN_RECORD_WRITES = {
    "DELETE /identities/{id}": "identity",
    "PUT /identities/{id}": "identity",
    "PATCH /identities/{id}": "identity",
    "POST /identities/{id}/disable": "identity",
    "DELETE /authenticators/{id}": "authenticator",
    "PUT /authenticators/{id}": "authenticator",
    "PATCH /authenticators/{id}": "authenticator",
    "POST /authenticators/{id}/re-enroll": "authenticator",
    "DELETE /api-sessions/{id}": "api_session",
    "DELETE /auth-policies/{id}": "auth_policy",
    "PUT /auth-policies/{id}": "auth_policy",
    "PATCH /auth-policies/{id}": "auth_policy",
}

APIS = {"client": CLIENT, "management": MGMT, "fabric": "/fabric/v1"}


@dataclass
class Suite:
    env: Env
    budget: Budget
    work_dir: Path
    specs: dict[str, Path | None]
    harness_login: Login
    admin: Rest
    fuzz_admin: Login
    fuzz_user: Login
    protected: list[str]
    tag: str
    results: list[RunResult]
    counter: int = 0

    def fresh_name(self, kind: str) -> str:
        self.counter += 1
        return f"{self.tag}-{kind}-{self.counter}"


def _seed(admin: Rest, tag: str) -> None:
    """A few records of each kind, so that lists answer with data and generated ids can meet real ones."""
    def create(path: str, body: dict) -> str:
        return admin.request("POST", f"{MGMT}{path}", body, expect=201)["data"]["id"]

    config_type = create("/config-types", {"name": f"{tag}-ct", "schema": {"type": "object"}})
    config = create("/configs", {"name": f"{tag}-cfg", "configTypeId": config_type, "data": {"a": 1}})
    create("/services", {"name": f"{tag}-svc", "encryptionRequired": True, "configs": [config], "roleAttributes": ["fuzz"]})
    create("/edge-routers", {"name": f"{tag}-er", "roleAttributes": ["fuzz"]})
    create("/identities", {"name": f"{tag}-device", "type": "Device", "isAdmin": False, "roleAttributes": ["fuzz"],
                           "enrollment": {"ott": True}})
    create("/posture-checks", {"name": f"{tag}-pc", "typeId": "DOMAIN", "domains": ["example.com"], "roleAttributes": ["fuzz"]})
    create("/service-policies", {"name": f"{tag}-dial", "type": "Dial", "semantic": "AnyOf", "serviceRoles": ["#fuzz"],
                                 "identityRoles": ["#all"], "postureCheckRoles": []})
    create("/edge-router-policies", {"name": f"{tag}-erp", "semantic": "AnyOf", "edgeRouterRoles": ["#all"], "identityRoles": ["#all"]})
    create("/service-edge-router-policies", {"name": f"{tag}-serp", "semantic": "AnyOf", "edgeRouterRoles": ["#all"],
                                             "serviceRoles": ["#all"]})


@pytest.fixture(scope="module")
def suite():
    if not os.environ.get("PORTCULLIS_URL"):
        pytest.skip("PORTCULLIS_URL is not set: run this suite through `node test/interop/run.mjs --only fuzz`")
    env = harness.env_from_os()
    budget = harness.budget_from_os()
    keep = os.environ.get("PORTCULLIS_FUZZ_REPORT_DIR")
    work_dir = Path(keep) if keep else Path(tempfile.mkdtemp(prefix="portcullis-fuzz-"))
    work_dir.mkdir(parents=True, exist_ok=True)
    tag = f"fz{os.getpid()}"

    harness_login = harness.login(env, env.admin_user, env.admin_password)
    admin = Rest(env, harness_login.token)
    specs = {
        "client": harness.prepare_reference_spec("client", work_dir),
        "management": harness.prepare_reference_spec("management", work_dir),
        "fabric": harness.prepare_fabric_spec(env, work_dir),
    }
    _seed(admin, tag)
    fuzz_admin = harness.login(env, *harness.create_user(admin, f"{tag}-admin", is_admin=True))
    fuzz_user = harness.login(env, *harness.create_user(admin, f"{tag}-user", is_admin=False))
    protected = ["default"]
    for who in (harness_login, fuzz_admin, fuzz_user):
        protected += [who.identity_id, who.authenticator_id, who.api_session_id]

    state = Suite(env=env, budget=budget, work_dir=work_dir, specs=specs, harness_login=harness_login, admin=admin,
                  fuzz_admin=fuzz_admin, fuzz_user=fuzz_user, protected=protected, tag=tag, results=[])
    started = time.monotonic()
    yield state
    _report(state, time.monotonic() - started)
    if not keep:
        shutil.rmtree(work_dir, ignore_errors=True)


def _report(state: Suite, seconds: float) -> None:
    cases = sum(r.cases for r in state.results)
    failures = sum(len(r.failures) for r in state.results)
    accepted = sum(r.filtered for r in state.results)
    print(f"\nfuzz summary: {len(state.results)} runs, {cases} cases, {failures} failures, {accepted} accepted deviations, "
          f"max-examples {state.budget.max_examples}, seed {state.budget.seed}, {seconds:.0f} s")
    out = os.environ.get("PORTCULLIS_FUZZ_SUMMARY")
    if out:
        Path(out).write_text(json.dumps({
            "runs": [{"label": r.label, "cases": r.cases, "seconds": round(r.seconds, 1), "failures": [f.line() for f in r.failures],
                      "accepted": r.filtered, "errors": r.errors} for r in state.results],
            "cases": cases, "failures": failures, "accepted": accepted, "seconds": round(seconds),
            "maxExamples": state.budget.max_examples, "seed": state.budget.seed,
        }, indent=2))


def _assert_clean(state: Suite, result: RunResult) -> None:
    state.results.append(result)
    integrity = harness.check_data_integrity(state.admin)
    problems = [f.line() for f in result.failures] + [f"error: {e}" for e in result.errors]
    if integrity.get("error") or integrity.get("results"):
        problems.append(f"data integrity after {result.label}: error={integrity.get('error')!r} results={json.dumps(integrity.get('results'))[:2000]}")
    if result.exit_code != 0 and not problems:
        problems.append(f"schemathesis exited {result.exit_code} without a recorded failure (see its output above)")
    assert not problems, f"{result.label}: {len(problems)} problems\n" + "\n".join(problems)


@pytest.mark.parametrize("role,api", [
    ("admin", "client"), ("admin", "management"), ("admin", "fabric"),
    ("user", "client"), ("user", "management"), ("user", "fabric"),
])
def test_main_phase(suite: Suite, role: str, api: str):
    if suite.specs[api] is None:
        pytest.skip(f"the controller serves no {api} document")
    who = suite.fuzz_admin if role == "admin" else suite.fuzz_user
    result = harness.run_schemathesis(
        f"main {role} {api}", suite.env, suite.specs[api], APIS[api], who.token, suite.budget, suite.work_dir,
        exclude=sorted(SELF_ENDING) if api != "fabric" else [],
        protected=suite.protected,
    )
    if not harness.session_alive(suite.env, who.token):
        result.errors.append(f"the {role} session used for fuzzing ended during the run")
    _assert_clean(suite, result)


def _sacrificial(suite: Suite, role: str) -> Login:
    """A new identity (admin or not) with an auth policy of its own, logged in."""
    policy = harness.create_auth_policy(suite.admin, suite.fresh_name("policy"))
    name, password = harness.create_user(suite.admin, suite.fresh_name(role), is_admin=role == "admin", auth_policy_id=policy)
    login = harness.login(suite.env, name, password)
    login.auth_policy_id = policy
    return login


def _own_record(login: Login, kind: str) -> str:
    return {"identity": login.identity_id, "authenticator": login.authenticator_id, "api_session": login.api_session_id,
            "auth_policy": login.auth_policy_id or ""}[kind]


# Each entry is one run: (role, API, operations). The caller's own authenticator operations run together (none
# ends the session unless it guesses the password); logging out runs alone, as does each own-record write.
_OWN_AUTHENTICATOR_OPS = tuple(op for op in SELF_ENDING if op != "DELETE /current-api-session")
LAST_PHASE = (
    [(role, api, ops) for role in ("admin", "user") for api in ("client", "management")
     for ops in (_OWN_AUTHENTICATOR_OPS, ("DELETE /current-api-session",))]
    + [("admin", "management", (op,)) for op in OWN_RECORD_WRITES]
)


@pytest.mark.parametrize("role,api,ops", LAST_PHASE, ids=[f"{r}-{a}-{o[0]}" for r, a, o in LAST_PHASE])
def test_last_phase(suite: Suite, role: str, api: str, ops: tuple[str, ...]):
    who = _sacrificial(suite, role)
    pins = {}
    for op in ops:
        if op in OWN_RECORD_WRITES:
            pins[op] = {"id": _own_record(who, OWN_RECORD_WRITES[op])}
        elif "{id}" in op:
            pins[op] = {"id": who.authenticator_id}
    result = harness.run_schemathesis(
        f"last {role} {api} {ops[0]}", suite.env, suite.specs[api], APIS[api], who.token, suite.budget, suite.work_dir,
        include=list(ops), pins=pins,
    )
    _assert_clean(suite, result)
