"""
What the fuzz suite needs around Schemathesis: a small REST client for setup (identities, sessions, the database
integrity check), the spec documents Schemathesis reads (the reference specs, normalised and with the deviations
of deviations.py applied; the fabric document Portcullis serves), and one Schemathesis CLI run with its results
read back from the run's NDJSON event stream. Nothing here starts a controller: test/interop/run.mjs does.
"""
from __future__ import annotations

import json
import os
import shutil
import ssl
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

import yaml

import deviations

HERE = Path(__file__).resolve().parent
REFERENCE_DIR = HERE.parents[2].parent / "shared" / "reference" / "edge-api-v0.27.0"
PYTHON_BIN = Path(sys.executable).parent

# The checks the suite enforces (the brief's three): no 5xx, every response body matches the schema the spec
# declares for its status, and the Content-Type is one the operation declares.
CHECKS = ["not_a_server_error", "response_schema_conformance", "content_type_conformance"]

# Write operations whose path names one of these ids are steered away from them in the main phase (hooks.py):
# the fuzzer must not delete, disable, re-enroll or edit the identities, authenticators, API sessions and auth
# policy that the suite itself logs in with. Those operations run again in the last phase against identities
# made for the purpose.


@dataclass
class Env:
    url: str
    admin_user: str
    admin_password: str
    ca_file: str


def env_from_os() -> Env:
    return Env(
        url=os.environ["PORTCULLIS_URL"].rstrip("/"),
        admin_user=os.environ.get("PORTCULLIS_ADMIN_USER", "admin"),
        admin_password=os.environ["PORTCULLIS_ADMIN_PASSWORD"],
        ca_file=os.environ["PORTCULLIS_CA_FILE"],
    )


class ApiError(Exception):
    def __init__(self, method: str, path: str, status: int, body):
        super().__init__(f"{method} {path} -> {status}: {body}")
        self.status = status
        self.body = body


class Rest:
    """JSON over HTTPS to the controller under test, trusting only its CA."""

    def __init__(self, env: Env, token: str | None = None):
        self.env = env
        self.token = token
        self._tls = ssl.create_default_context(cafile=env.ca_file)

    def request(self, method: str, path: str, body=None, expect=(200, 201), accept: str = "application/json"):
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.env.url + path, data=data, method=method)
        req.add_header("Accept", accept)
        if data is not None:
            req.add_header("Content-Type", "application/json")
        if self.token:
            req.add_header("zt-session", self.token)
        try:
            with urllib.request.urlopen(req, context=self._tls, timeout=60) as resp:
                status, raw = resp.status, resp.read()
        except urllib.error.HTTPError as err:
            status, raw = err.code, err.read()
        payload = json.loads(raw) if raw else None
        if status not in ((expect,) if isinstance(expect, int) else expect):
            raise ApiError(method, path, status, payload)
        return payload


MGMT = "/edge/management/v1"
CLIENT = "/edge/client/v1"


@dataclass
class Login:
    """An API session of one identity, with the ids of what it authenticates with."""

    identity_id: str
    authenticator_id: str
    api_session_id: str
    token: str
    username: str
    password: str
    auth_policy_id: str | None = None


def login(env: Env, username: str, password: str, api: str = MGMT) -> Login:
    rest = Rest(env)
    session = rest.request("POST", f"{api}/authenticate?method=password", {"username": username, "password": password}, expect=200)
    token = session["data"]["token"]
    authed = Rest(env, token)
    current = authed.request("GET", f"{api}/current-api-session", expect=200)["data"]
    authenticators = authed.request("GET", f"{api}/current-identity/authenticators", expect=200)["data"]
    updb = next(a for a in authenticators if a["method"] == "updb")
    return Login(
        identity_id=current["identityId"],
        authenticator_id=updb["id"],
        api_session_id=current["id"],
        token=token,
        username=username,
        password=password,
    )


def create_user(admin: Rest, name: str, *, is_admin: bool, auth_policy_id: str | None = None) -> tuple[str, str]:
    """Creates an identity with a password authenticator; returns its user name and password."""
    body = {"name": name, "type": "User", "isAdmin": is_admin}
    if auth_policy_id:
        body["authPolicyId"] = auth_policy_id
    identity_id = admin.request("POST", f"{MGMT}/identities", body, expect=201)["data"]["id"]
    password = f"Fz-{os.urandom(6).hex()}-Pw1!"
    admin.request("POST", f"{MGMT}/authenticators", {"method": "updb", "identityId": identity_id, "username": name, "password": password}, expect=201)
    return name, password


def create_auth_policy(admin: Rest, name: str) -> str:
    """An auth policy that allows password login, as `default` does, for one identity of the last phase."""
    body = {
        "name": name,
        "primary": {
            "cert": {"allowed": True, "allowExpiredCerts": True},
            "extJwt": {"allowed": True, "allowedSigners": []},
            "updb": {"allowed": True, "lockoutDurationMinutes": 0, "maxAttempts": 0, "minPasswordLength": 5,
                     "requireMixedCase": False, "requireNumberChar": False, "requireSpecialChar": False},
        },
        "secondary": {"requireTotp": False},
    }
    return admin.request("POST", f"{MGMT}/auth-policies", body, expect=201)["data"]["id"]


def session_alive(env: Env, token: str) -> bool:
    try:
        Rest(env, token).request("GET", f"{MGMT}/current-api-session", expect=200)
        return True
    except ApiError:
        return False


def check_data_integrity(admin: Rest, timeout_s: float = 120) -> dict:
    """Runs the database integrity check (no fixing) and returns its finished results."""
    admin.request("POST", f"{MGMT}/database/check-data-integrity", expect=(200, 202))
    deadline = time.monotonic() + timeout_s
    while True:
        data = admin.request("GET", f"{MGMT}/database/data-integrity-results", expect=200)["data"]
        if not data.get("inProgress") and data.get("endTime"):
            return data
        if time.monotonic() > deadline:
            raise AssertionError(f"data integrity check did not finish within {timeout_s} s: {data}")
        time.sleep(0.2)


# --- spec documents -------------------------------------------------------------------------------------------

# Swagger keywords that JSON Schema requires to be non-negative integers. The reference YAML writes some as
# `!!float 255`, which Schemathesis rightly refuses as a schema error; 255.0 and 255 mean the same bound.
_INTEGER_KEYWORDS = {"maxLength", "minLength", "maxItems", "minItems", "maxProperties", "minProperties"}


def _normalise(node):
    if isinstance(node, dict):
        return {k: int(v) if k in _INTEGER_KEYWORDS and isinstance(v, float) and v.is_integer() else _normalise(v) for k, v in node.items()}
    if isinstance(node, list):
        return [_normalise(v) for v in node]
    return node


def prepare_reference_spec(api: str, out_dir: Path) -> Path:
    """The reference spec of `api` ('client' or 'management') as JSON, normalised, with deviations applied."""
    document = _normalise(yaml.safe_load((REFERENCE_DIR / f"{api}.yml").read_text()))
    deviations.apply_spec_patches(api, document)
    out = out_dir / f"{api}.json"
    out.write_text(json.dumps(document))
    return out


def prepare_fabric_spec(env: Env, out_dir: Path) -> Path | None:
    """
    The fabric API's document as Portcullis serves it (upstream's fabric spec is not in the reference set). None
    when the controller serves none there (upstream's controller, when the suite is pointed at it to compare).
    """
    try:
        document = Rest(env).request("GET", f"{MGMT}/specs/fabric/spec", expect=200)
    except ApiError as err:
        if err.status == 404:
            return None
        raise
    out = out_dir / "fabric.json"
    out.write_text(json.dumps(document))
    return out


# --- one Schemathesis run -------------------------------------------------------------------------------------


@dataclass
class Failure:
    operation: str
    check: str
    code: str
    status: int | None
    title: str
    detail: str
    case_id: str

    def line(self) -> str:
        return f"{self.operation} [{self.status}] {self.code} {self.title}: {self.detail} (case {self.case_id})"


@dataclass
class RunResult:
    label: str
    exit_code: int
    cases: int = 0
    seconds: float = 0.0
    failures: list[Failure] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    filtered: int = 0


@dataclass
class Budget:
    max_examples: int
    seed: int
    workers: int = 1


def budget_from_os() -> Budget:
    return Budget(
        max_examples=int(os.environ.get("PORTCULLIS_FUZZ_MAX_EXAMPLES", "5")),
        seed=int(os.environ.get("PORTCULLIS_FUZZ_SEED", "20261126")),
    )


def run_schemathesis(
    label: str,
    env: Env,
    spec: Path,
    base_path: str,
    token: str,
    budget: Budget,
    work_dir: Path,
    *,
    include: list[str] | None = None,
    exclude: list[str] | None = None,
    pins: dict[str, dict[str, str]] | None = None,
    protected: list[str] | None = None,
) -> RunResult:
    """
    Runs `st run` against one API with one session. `include`/`exclude` name operations as `METHOD /path`;
    `pins` fixes path parameters per operation (`{"DELETE /identities/{id}": {"id": "..."}}`); `protected` ids
    are kept out of write operations' paths (hooks.py).
    """
    run_dir = work_dir / label.replace(" ", "-").replace("/", "_")
    shutil.rmtree(run_dir, ignore_errors=True)
    run_dir.mkdir(parents=True)
    ndjson = run_dir / "events.ndjson"
    args = [
        str(PYTHON_BIN / "st"), "--no-color", "run", str(spec),
        "--url", env.url + base_path,
        "--tls-verify", env.ca_file,
        "--header", f"zt-session: {token}",
        "--checks", ",".join(CHECKS),
        "--max-examples", str(budget.max_examples),
        "--seed", str(budget.seed),
        "--workers", str(budget.workers),
        "--request-timeout", "30",
        "--generation-database", "none",
        "--report", "ndjson", "--report-ndjson-path", str(ndjson),
        "--output-truncate", "true",
    ]
    for name in include or []:
        args += ["--include-name", name]
    for name in exclude or []:
        args += ["--exclude-name", name]
    context = {"protected": protected or [], "pins": pins or {}, "api": deviations.api_of(base_path)}
    child_env = {
        **os.environ,
        "SCHEMATHESIS_HOOKS": "hooks",
        "PYTHONPATH": os.pathsep.join([str(HERE), os.environ.get("PYTHONPATH", "")]),
        "PORTCULLIS_FUZZ_CONTEXT": json.dumps(context),
        "COLUMNS": "120",
    }
    print(f"\n=== fuzz: {label} ({spec.name}, {base_path}) ===", flush=True)
    started = time.monotonic()
    # Schemathesis' own closing line ("== 28 passed in 0.3s ==") would read as a pytest summary to the interop
    # runner, which counts those: its output is passed on with a prefix.
    proc = subprocess.Popen(args, cwd=run_dir, env=child_env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    assert proc.stdout is not None
    for line in proc.stdout:
        print(f"st| {line}", end="", flush=True)
    result = RunResult(label=label, exit_code=proc.wait(), seconds=time.monotonic() - started)
    _read_events(ndjson, result)
    if os.environ.get("PORTCULLIS_FUZZ_KEEP_REPORTS") != "1":
        ndjson.unlink(missing_ok=True)
    print(f"=== fuzz: {label}: {result.cases} cases, {len(result.failures)} failures, {result.filtered} accepted deviations, "
          f"{result.seconds:.1f} s ===", flush=True)
    return result


def _read_events(path: Path, result: RunResult) -> None:
    """Counts the requests made and collects every failed check from Schemathesis' NDJSON events."""
    if not path.exists():
        result.errors.append("no NDJSON report was written")
        return
    seen: set[tuple[str, str, str]] = set()
    with path.open() as events:
        for line in events:
            event = json.loads(line)
            if "ScenarioFinished" in event:
                recorder = event["ScenarioFinished"]["recorder"]
                interactions = recorder.get("interactions", {})
                result.cases += len(interactions)
                for case_id, checks in recorder.get("checks", {}).items():
                    for check in checks:
                        if check.get("status") != "failure":
                            continue
                        info = check["failure_info"]["failure"]
                        response = (interactions.get(case_id) or {}).get("response") or {}
                        detail = _summarise(info.get("message", ""))
                        key = (info.get("operation", recorder["label"]), check["name"], detail)
                        if key in seen:
                            continue
                        seen.add(key)
                        result.failures.append(Failure(
                            operation=info.get("operation", recorder["label"]),
                            check=check["name"],
                            code=info.get("code", ""),
                            status=response.get("status_code"),
                            title=info.get("title", ""),
                            detail=detail,
                            case_id=case_id,
                        ))
            elif "NonFatalError" in event:
                err = event["NonFatalError"]
                result.errors.append(f"{err.get('label', '')}: {err.get('info', {}).get('message', err)}"[:500])
            elif "FatalError" in event:
                result.errors.append(f"fatal: {json.dumps(event['FatalError'])[:500]}")
    result.filtered = _count_filtered(path.parent)


def _summarise(message: str) -> str:
    """The first line of a failure message, with the schema location it names (`Schema at /definitions/...`)."""
    lines = [line.strip() for line in message.strip().split("\n")]
    where = next((line.removesuffix(":") for line in lines if line.startswith("Schema at ")), "")
    return f"{lines[0]} ({where})" if where else lines[0]


def _count_filtered(run_dir: Path) -> int:
    marker = run_dir / "accepted-deviations.jsonl"
    if not marker.exists():
        return 0
    return sum(1 for _ in marker.open())
