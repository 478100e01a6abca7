"""
Shared fixtures of the Python interop suite. Nothing here starts a controller: test/interop/run.mjs starts one and
passes PORTCULLIS_URL, PORTCULLIS_ADMIN_USER, PORTCULLIS_ADMIN_PASSWORD and PORTCULLIS_CA_FILE. Setup goes through
the management REST API with the standard library only (urllib over TLS that trusts just the CA file).
"""
from __future__ import annotations

import base64
import json
import os
import ssl
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass

import pytest


@dataclass
class Env:
    url: str
    user: str
    password: str
    ca_file: str


class ApiError(Exception):
    def __init__(self, method: str, path: str, status: int, body):
        super().__init__(f"{method} {path} -> {status}: {body}")
        self.status = status
        self.body = body


class Api:
    """Minimal JSON client for one Edge API (management or client) of the controller under test."""

    def __init__(self, env: Env, api: str = "management", token: str | None = None):
        self.env = env
        self.base = f"{env.url}/edge/{api}/v1"
        self.token = token
        self._tls = ssl.create_default_context(cafile=env.ca_file)

    def request(self, method: str, path: str, body=None, expect: int | tuple[int, ...] = (200, 201)):
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.base + path, data=data, method=method)
        req.add_header("Accept", "application/json")
        if data is not None:
            req.add_header("Content-Type", "application/json")
        if self.token:
            req.add_header("zt-session", self.token)
        try:
            with urllib.request.urlopen(req, context=self._tls, timeout=30) as resp:
                status, raw = resp.status, resp.read()
        except urllib.error.HTTPError as err:
            status, raw = err.code, err.read()
        payload = json.loads(raw) if raw else None
        expected = (expect,) if isinstance(expect, int) else expect
        if status not in expected:
            raise ApiError(method, path, status, payload)
        return payload

    def get(self, path: str, **kw):
        return self.request("GET", path, **kw)

    def post(self, path: str, body, **kw):
        return self.request("POST", path, body, **kw)

    def patch(self, path: str, body, **kw):
        return self.request("PATCH", path, body, **kw)

    def delete(self, path: str, **kw):
        return self.request("DELETE", path, **kw)

    def create(self, path: str, body) -> str:
        """POSTs a new record and returns its id."""
        return self.post(path, body, expect=201)["data"]["id"]

    def list_all(self, path: str, filter_: str | None = None) -> list[dict]:
        query = {"limit": "500"}
        if filter_:
            query["filter"] = filter_
        return self.get(f"{path}?{urllib.parse.urlencode(query)}")["data"]


@pytest.fixture(scope="session")
def env() -> Env:
    url = os.environ.get("PORTCULLIS_URL")
    if not url:
        pytest.skip("PORTCULLIS_URL is not set: run this suite through `npm run test:interop`")
    return Env(url=url.rstrip("/"), user=os.environ.get("PORTCULLIS_ADMIN_USER", "admin"),
               password=os.environ["PORTCULLIS_ADMIN_PASSWORD"], ca_file=os.environ["PORTCULLIS_CA_FILE"])


@pytest.fixture(scope="session")
def mgmt(env: Env) -> Api:
    """The management API, logged in as the default admin."""
    api = Api(env)
    session = api.post("/authenticate?method=password", {"username": env.user, "password": env.password}, expect=200)
    api.token = session["data"]["token"]
    return api


@pytest.fixture(scope="session")
def tag() -> str:
    """A prefix unique to this run, for names and role attributes."""
    return f"py{os.getpid()}t{int(time.time())}"


def jwt_header(jwt: str) -> dict:
    part = jwt.split(".")[0]
    return json.loads(base64.urlsafe_b64decode(part + "=" * (-len(part) % 4)))


def jwt_claims(jwt: str) -> dict:
    part = jwt.split(".")[1]
    return json.loads(base64.urlsafe_b64decode(part + "=" * (-len(part) % 4)))
