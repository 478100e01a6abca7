"""
Property-based fuzzing of the OpenID provider under /oidc (Hypothesis; the provider has no OpenAPI document for
Schemathesis to read). Requests are made of random parameters mixed with the values the protocol cares about
(client ids, grant types, token types, redirect URIs) and with forged tokens: tampered, `alg: none` and HS256
copies of a real one. None of them holds a valid code, auth request id or refresh token, so:

- no answer is a server error (5xx);
- the token endpoint never answers 200, and its errors are OAuth error bodies (`error`, `error_description`);
- authorize never redirects anywhere but to a login page or to a registered redirect URI;
- a login step never completes (no 302 to the callback, no TOTP enrollment made), the callback never gives a code;
- a forged token is never taken as a JWT API session by the Edge APIs (401).

test/interop/run.mjs runs it in the fuzz suite, against the controller it starts. PORTCULLIS_FUZZ_OIDC_EXAMPLES
sets the examples per property (default 400); runs are derandomized, so a failure repeats.
"""
from __future__ import annotations

import base64
import json
import os
import re
from urllib.parse import urlparse

import pytest
import requests
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import harness

ENV = harness.env_from_os()
EXAMPLES = int(os.environ.get("PORTCULLIS_FUZZ_OIDC_EXAMPLES", "400"))
SETTINGS = settings(max_examples=EXAMPLES, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck), database=None)
COUNT = {"requests": 0}

GRANTS = ["authorization_code", "refresh_token", "urn:ietf:params:oauth:grant-type:token-exchange", "password", "client_credentials", ""]
TOKEN_TYPES = ["urn:ietf:params:oauth:token-type:access_token", "urn:ietf:params:oauth:token-type:refresh_token",
               "urn:ietf:params:oauth:token-type:id_token", "urn:ietf:params:oauth:token-type:jwt", ""]
REDIRECTS = ["http://localhost:8080/auth/callback", "http://127.0.0.1:20314/auth/callback", "openziti://auth/callback",
             "https://evil.example/auth/callback", "http://localhost:8080/other", "javascript:alert(1)", "//evil.example/cb", ""]
ALLOWED_REDIRECT = re.compile(r"^(openziti://auth/callback|https?://(localhost|127\.0\.0\.1|\[::1\])(:\d+)?/auth/callback)(\?|$)")
PARAM_NAMES = ["client_id", "redirect_uri", "response_type", "scope", "state", "nonce", "code_challenge", "code_challenge_method",
               "method", "configTypes", "prompt", "grant_type", "code", "code_verifier", "refresh_token", "subject_token",
               "subject_token_type", "requested_token_type", "audience", "actor_token", "token", "token_type_hint",
               "id_token_hint", "post_logout_redirect_uri", "id", "authRequestID", "username", "password", "sdkAppID"]


def _session() -> requests.Session:
    s = requests.Session()
    s.verify = ENV.ca_file
    return s


HTTP = _session()


def _request(method: str, path: str, **kwargs) -> requests.Response:
    COUNT["requests"] += 1
    # `verify` on each request: a session's own is overridden by REQUESTS_CA_BUNDLE when that is set.
    r = HTTP.request(method, ENV.url + path, allow_redirects=False, timeout=30, verify=ENV.ca_file, **kwargs)
    assert r.status_code < 500, f"{method} {path} answered {r.status_code}: {r.text[:500]}"
    return r


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _forgeries(token: str) -> list[str]:
    header, payload, signature = token.split(".")
    claims = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    other = dict(claims, sub="someone-else", z_ia=True)
    out = [
        f"{header}.{_b64(json.dumps(other).encode())}.{signature}",
        f"{header}.{payload}.{signature[:-4]}AAAA",
        f"{_b64(json.dumps({'alg': 'none', 'typ': 'JWT'}).encode())}.{payload}.",
        f"{_b64(json.dumps({'alg': 'HS256', 'typ': 'JWT'}).encode())}.{payload}.{_b64(b'x' * 32)}",
        f"{header}.{_b64(json.dumps(dict(claims, z_t='a')).encode())}.{signature}",
        token[: len(token) // 2],
    ]
    return out


def _login_tokens() -> dict[str, str]:
    """The Go SDK's flow, as admin: authorize, password login, callback, code for tokens."""
    import hashlib
    import secrets

    verifier = secrets.token_urlsafe(32)
    challenge = _b64(hashlib.sha256(verifier.encode()).digest())
    r = _request("GET", "/oidc/authorize", params={
        "client_id": "native", "response_type": "code", "scope": "openid offline_access", "state": "s1",
        "code_challenge": challenge, "code_challenge_method": "S256", "redirect_uri": REDIRECTS[0], "method": "password"})
    assert r.status_code == 302, r.text
    request_id = re.search(r"authRequestID=([^&]+)", r.headers["location"]).group(1)
    r = _request("POST", "/oidc/login/password", data={"id": request_id, "username": ENV.admin_user, "password": ENV.admin_password})
    assert r.status_code == 302, r.text
    r = _request("GET", f"/oidc/authorize/callback?id={request_id}")
    code = re.search(r"code=([^&]+)", r.headers["location"]).group(1)
    r = _request("POST", "/oidc/oauth/token", data={"grant_type": "authorization_code", "client_id": "native", "code": code,
                                                     "code_verifier": verifier, "redirect_uri": REDIRECTS[0]})
    assert r.status_code == 200, r.text
    return r.json()


@pytest.fixture(scope="module")
def forged() -> list[str]:
    tokens = _login_tokens()
    out = [f for t in (tokens["access_token"], tokens["refresh_token"], tokens["id_token"]) for f in _forgeries(t)]
    # The real tokens end with their session: copies of them are dead tokens, which must fail the same way.
    r = _request("POST", "/oidc/revoke", data={"token": tokens["refresh_token"], "client_id": "native"})
    assert r.status_code == 200
    return out + [tokens["access_token"], tokens["refresh_token"]]


def _values(forged_tokens: list[str]):
    text = st.text(alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"), max_size=120)
    return st.one_of(
        text,
        st.sampled_from(["native", "openziti", "nobody", "code", "token", "S256", "plain", "openid", "openid offline_access",
                         "password", "cert", "ext-jwt", "none", "123456"] + GRANTS + TOKEN_TYPES + REDIRECTS),
        st.sampled_from(forged_tokens),
    )


def _params(forged_tokens: list[str]):
    return st.dictionaries(st.sampled_from(PARAM_NAMES), _values(forged_tokens), max_size=12)


def _basic():
    return st.one_of(st.none(), st.sampled_from(["native:", "openziti:", "native:secret", "nobody:", ":", "native"]).map(
        lambda v: "Basic " + base64.b64encode(v.encode()).decode()),
        # Printable ASCII: a header with control characters is malformed HTTP, refused before any route sees it.
        st.text(alphabet=st.characters(min_codepoint=0x21, max_codepoint=0x7e), max_size=40).map(lambda v: "Basic " + v),
        st.binary(max_size=30).map(lambda b: "Basic " + base64.b64encode(b).decode()))


def test_token_endpoint_never_gives_a_token(forged):
    @SETTINGS
    @given(params=_params(forged), grant=st.sampled_from(GRANTS), basic=_basic(), as_json=st.booleans())
    def run(params, grant, basic, as_json):
        params = {**params, "grant_type": params.get("grant_type", grant)}
        headers = {"authorization": basic} if basic else {}
        r = _request("POST", "/oidc/oauth/token", headers=headers, **({"json": params} if as_json else {"data": params}))
        assert r.status_code != 200, f"a token for {params}: {r.text[:300]}"
        body = r.json()
        assert isinstance(body.get("error"), str) and isinstance(body.get("error_description"), str), r.text[:300]
        assert "access_token" not in body

    run()


def test_authorize_redirects_only_where_it_may(forged):
    @SETTINGS
    @given(params=_params(forged), method=st.sampled_from(["GET", "POST"]))
    def run(params, method):
        r = _request(method, "/oidc/authorize", params=params) if method == "GET" else _request(method, "/oidc/authorize", params=params, data=params)
        if r.status_code == 302:
            location = r.headers["location"]
            assert location.startswith("/oidc/login/") or ALLOWED_REDIRECT.match(location), f"redirected to {location}"
            assert "code=" not in location

    run()


def test_login_steps_never_complete(forged):
    paths = ["password", "username", "cert", "ext-jwt", "totp", "totp/enroll", "totp/enroll/verify"]

    @SETTINGS
    @given(params=_params(forged), path=st.sampled_from(paths), as_json=st.booleans(), bearer=st.one_of(st.none(), st.sampled_from(forged)))
    def run(params, path, as_json, bearer):
        headers = {"authorization": f"Bearer {bearer}"} if bearer else {}
        r = _request("POST", f"/oidc/login/{path}", headers=headers, params={"authRequestID": params.get("authRequestID", "")},
                     **({"json": params} if as_json else {"data": params}))
        assert r.status_code not in (200, 201, 302), f"{path} answered {r.status_code}: {r.text[:300]}"
        r = _request("GET", "/oidc/authorize/callback", params={"id": params.get("id", "")})
        assert "code=" not in r.headers.get("location", ""), r.headers.get("location")

    run()


def test_revoke_end_session_and_userinfo_hold(forged):
    @SETTINGS
    @given(params=_params(forged), which=st.sampled_from(["revoke", "end_session", "userinfo"]), basic=_basic())
    def run(params, which, basic):
        headers = {"authorization": basic} if basic else {}
        if which == "userinfo":
            token = params.get("token", "")
            # Printable ASCII only: anything else makes a malformed header, refused before any route sees it.
            token = token if all(0x20 < ord(c) < 0x7F for c in token) else "not-a-token"
            r = _request("GET", "/oidc/userinfo", headers={"authorization": f"Bearer {token}"})
            assert r.status_code == 401, r.text[:300]
        elif which == "revoke":
            _request("POST", "/oidc/revoke", headers=headers, data=params)
        else:
            r = _request("GET", "/oidc/end_session", params=params)
            if r.status_code == 302:
                location = r.headers["location"]
                assert location == "/oidc/logged-out" or urlparse(location).hostname in ("localhost", "127.0.0.1", "[::1]", None), location

    run()


def test_forged_tokens_are_no_api_session(forged):
    for token in forged:
        for path in ("/edge/client/v1/current-api-session", "/edge/management/v1/identities"):
            r = _request("GET", path, headers={"authorization": f"Bearer {token}"})
            assert r.status_code == 401, f"{path} with a forged token answered {r.status_code}"
    print(f"\n=== fuzz: /oidc: {COUNT['requests']} requests, {EXAMPLES} examples per property ===", flush=True)
