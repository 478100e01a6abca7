"""
Schemathesis hooks of the fuzz suite, loaded by each `st run` the harness starts (SCHEMATHESIS_HOOKS=hooks). The
harness passes what a run needs in PORTCULLIS_FUZZ_CONTEXT (JSON):

- `protected`: ids that write operations must not name in their path (the suite's own identities,
  authenticators, API sessions and auth policy). A generated case that does is sent with a made-up id instead,
  which the controller answers 404: the case is still checked, it just cannot end the suite's own session.
- `pins`: per operation (`METHOD /path`), path parameters fixed to given values. The last phase uses them to aim
  session-ending operations at the records of the identity that is fuzzing.
- `api`: `client`, `management` or `fabric`, for the accepted deviations of deviations.py.

`application/jwt` bodies (GET /cas/{id}/jwt) are read as the string the spec declares, once they are checked to be
a compact JWS. Schemathesis 4.32.5 counts application/jwt among the JSON media types and would parse the token as
JSON (RFC 7519 defines that type as the compact serialisation, not JSON), so the reader below is moved ahead of its
JSON reader in its registry (a private dict; the version is pinned in requirements.txt).

`filter_failure` drops the failures that deviations.py accepts, each for a documented reason, and records every
one it drops in accepted-deviations.jsonl in the run's folder (the harness counts them).
"""
from __future__ import annotations

import json
import os
import re

import schemathesis

import deviations

_CONTEXT = json.loads(os.environ.get("PORTCULLIS_FUZZ_CONTEXT", "{}"))
_PROTECTED = frozenset(_CONTEXT.get("protected", []))
_PINS: dict[str, dict[str, str]] = _CONTEXT.get("pins", {})
_API: str = _CONTEXT.get("api", "")
_READ_METHODS = {"GET", "HEAD", "OPTIONS"}
_COMPACT_JWS = re.compile(r"^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*$")


def _operation_label(case) -> str:
    return f"{case.operation.method.upper()} {case.operation.path}"


@schemathesis.hook
def before_call(context, case, kwargs):
    pins = _PINS.get(_operation_label(case))
    if pins:
        case.path_parameters = {**(case.path_parameters or {}), **pins}
        return
    if case.method.upper() in _READ_METHODS or not case.path_parameters:
        return
    if any(isinstance(v, str) and v in _PROTECTED for v in case.path_parameters.values()):
        case.path_parameters = {k: ("fuzz-protected-id" if v in _PROTECTED else v) for k, v in case.path_parameters.items()}


@schemathesis.deserializer("application/jwt")
def deserialize_jwt(ctx, response):
    # Schemathesis offers this reader every JSON-family body too (it files application/jwt under JSON).
    content_type = (response.headers.get("content-type") or [""])[0].split(";")[0].strip().lower()
    if content_type != "application/jwt":
        return response.json()
    text = response.content.decode("ascii")
    if not _COMPACT_JWS.match(text):
        raise ValueError(f"not a compact JWS: {text[:80]!r}")
    return text


def _prefer_own_readers() -> None:
    from schemathesis.core import deserialization

    registry = deserialization._DESERIALIZERS
    own = registry.pop("application/jwt")
    rest = dict(registry)
    registry.clear()
    registry["application/jwt"] = own
    registry.update(rest)


_prefer_own_readers()


@schemathesis.hook
def filter_failure(context, failure, case, response):
    reason = deviations.accepted(_API, failure, case, response)
    if reason is None:
        return True
    with open("accepted-deviations.jsonl", "a") as out:
        out.write(json.dumps({"operation": _operation_label(case), "status": response.status_code, "code": failure.code, "reason": reason}) + "\n")
    return False
