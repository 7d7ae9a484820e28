"""Vectors for realtime sessions, signed-in users and GET /v1/me (README.md beside this file, the last four sections).

Imported by generate.py, which writes and checks every file; the request building of an upgrade reuses its reference
implementation (`build`), so an upgrade is addressed and digested exactly as any proxied GET without a body.
Only the Python standard library is used.
"""
from __future__ import annotations

import base64
import json
import re

FORMAT_VERSION = 1
APP_TOKEN = "at_0123456789abcdefghijABCDEFGHIJkl"
DEVICE_TOKEN = "eyJhbGciOiJFZERTQSIsInR5cCI6IkpXVCJ9.eyJhcHAiOiJhcHBfMSIsImRldiI6ImQxIn0.c2lnbmF0dXJl"
TIME = 1764000000000


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode("ascii").rstrip("=")


def _jwt(claims: dict) -> str:
    header = _b64url(json.dumps({"alg": "RS256", "kid": "k1", "typ": "JWT"}, separators=(",", ":")).encode())
    return header + "." + _b64url(json.dumps(claims, separators=(",", ":")).encode()) + "." + _b64url(b"signature")


# --------------------------------------------------------------------------------------------------------------------
# realtime-close-codes.json: a close of a realtime session -> SDK error, reason, action
# --------------------------------------------------------------------------------------------------------------------

# The gateway's close codes (protocol.md, "Realtime sessions"): code -> (gateway type, SDK kind).
GATEWAY_CLOSES = {
    4400: ("invalidRequest", "invalidRequest"),
    4401: ("unauthorized", "unauthorized"),
    4403: ("attestationFailed", "attestationFailed"),
    4429: ("rateLimited", "rateLimited"),
    4502: ("upstreamUnavailable", "networkError"),
    4503: ("serviceUnavailable", "networkError"),
    4504: ("upstreamTimeout", "networkError"),
}
REASON = re.compile(r"^[a-z][a-z0-9_]*$")


def close_expected(code: int, reason: str) -> dict | None:
    """The reference rule: what an SDK reports when the session's socket closes with `code` and `reason`."""
    trimmed = reason.strip()
    snake = trimmed if REASON.match(trimmed) else None
    if code == 1000:
        return None  # a normal close (by the app, the provider or the gateway): the message stream just ends
    if code in GATEWAY_CLOSES:
        error_type, kind = GATEWAY_CLOSES[code]
    elif 4400 <= code <= 4499:
        error_type, kind = None, "invalidRequest"
    elif 4500 <= code <= 4599:
        error_type, kind = None, "networkError"
    elif code in (1001, 1006, 1011, 1012, 1013, 1014):
        error_type, kind = None, "networkError"  # going away, no close frame, server error, restart, try later, bad gateway
    else:
        # Any other code is the provider's own close, passed through by the gateway with its code (1002, 1003, 1007,
        # 1008, 1009, 1010, 3000-4399, 4600-4999): like an HTTP provider error, never mapped to a gateway kind.
        return {"kind": "providerError", "errorType": None, "closeCode": code, "reason": None, "message": trimmed,
                "action": "none", "mayReconnect": False, "newKey": False}
    action = "none"
    if code == 4503:
        action = "reconnect"  # draining: the node is shutting down, another one takes the session at once
    elif code == 4403 and snake == "device_revoked":
        action = "stop"  # like reason-action device_revoked: no new key, no refresh until the app restarts
    return {"kind": kind, "errorType": error_type, "closeCode": code, "reason": snake, "message": trimmed,
            "action": action, "mayReconnect": action == "reconnect", "newKey": False}


def realtime_close_codes() -> dict:
    v = []

    def close(name, description, code, reason):
        v.append({"name": name, "description": description, "input": {"code": code, "reason": reason},
                  "expected": close_expected(code, reason)})

    close("normal-1000", "1000 is a normal end: the message stream finishes without an error.", 1000, "")
    close("normal-1000-with-text", "1000 with a text: still no error.", 1000, "bye")
    close("invalid-request-model", "4400: a client frame broke the app's policy; invalidRequest with the reason.", 4400, "model_not_allowed")
    close("invalid-request-frame-too-large", "4400: a client frame was larger than the frame cap.", 4400, "frame_too_large")
    close("unauthorized-app-revoked", "4401: the app token stopped being valid during the session.", 4401, "app_token_revoked")
    close("device-revoked-no-rekey", "4403 device_revoked: attestationFailed, action stop; the SDK never attests a new key for it.", 4403, "device_revoked")
    close("user-blocked-no-rekey", "4403 user_blocked: attestationFailed; the device key is fine, nothing is re-keyed or refreshed.", 4403, "user_blocked")
    close("attestation-failed-no-reason", "4403 without a reason: attestationFailed, still no new key (a close is not a refusal to refresh).", 4403, "")
    close("rate-limited-token-budget", "4429 token_budget: rateLimited with the reason (no Retry-After on a close).", 4429, "token_budget")
    close("rate-limited-session-seconds", "4429 session_seconds_budget: rateLimited.", 4429, "session_seconds_budget")
    close("rate-limited-session-too-long", "4429 session_too_long: the session reached the app's maximum length.", 4429, "session_too_long")
    close("upstream-unavailable", "4502: the provider's socket failed after the upgrade; networkError.", 4502, "upstream_unavailable")
    close("draining-may-reconnect", "4503 draining: networkError with action reconnect; the app may open a new session at once.", 4503, "draining")
    close("draining-without-reason", "4503 without a reason: still reconnect (the code decides).", 4503, "")
    close("idle-timeout", "4504 session_idle: no frame either way for the app's idle time; networkError.", 4504, "session_idle")
    close("unknown-44xx", "An unlisted 44xx from a newer gateway: invalidRequest (the class decides), reason kept.", 4404, "route_not_realtime")
    close("unknown-45xx", "An unlisted 45xx: networkError, reason kept.", 4599, "some_new_reason")
    close("reason-not-snake-case", "A close reason that is not snake_case is the message only; reason null.", 4429, "Budget spent, try later")
    close("reason-trimmed", "The close reason is trimmed before it is read.", 4429, " token_budget ")
    close("going-away-1001", "1001 going away: networkError (no gateway type).", 1001, "")
    close("abnormal-1006", "1006 (no close frame: the connection dropped): networkError.", 1006, "")
    close("server-error-1011", "1011 internal error: networkError.", 1011, "internal error")
    close("provider-policy-1008", "1008 from the provider (passed through with its code): providerError with the close code and text.", 1008, "invalid_api_key")
    close("provider-4000", "A provider's own 4000-range code below 4400: providerError, never a gateway kind.", 4000, "session expired")
    return {"version": FORMAT_VERSION, "kind": "realtime-close-codes", "vectors": v}


# --------------------------------------------------------------------------------------------------------------------
# subprotocols.json: the upgrade request (headers form, subprotocol form)
# --------------------------------------------------------------------------------------------------------------------

TOKEN_CHARS = re.compile(r"^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$")


def subprotocols(build, refused_error) -> dict:
    v = []

    def upgrade(name, description, mode, provider_protocols=(), user_token=None, **overrides):
        inp = {"baseUrl": "https://gateway.example.com", "endpoint": "openai/v1/realtime?model=gpt-realtime", "mode": mode,
               "appToken": APP_TOKEN, "deviceToken": DEVICE_TOKEN, "requestTimeMs": TIME, "sdk": "ios/1.2.0",
               "providerProtocols": list(provider_protocols)}
        if user_token is not None:
            inp["userToken"] = user_token
        inp.update(overrides)
        v.append({"name": name, "description": description, "input": inp, "expected": upgrade_expected(inp, build, refused_error)})

    upgrade("headers-form", "Native SDKs send the tokens as headers on the upgrade, like any proxied GET without a body; "
            "the URL's scheme becomes wss.", "headers")
    upgrade("headers-form-with-user", "A signed-in user's ID token rides along as Tollgate-User-Token.", "headers",
            user_token="eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJ1MSJ9.c2ln")
    upgrade("headers-form-provider-protocols", "The provider's own subprotocols go in Sec-WebSocket-Protocol unchanged, in order.",
            "headers", ["realtime", "openai-beta.realtime-v1"])
    upgrade("headers-form-http", "An http gateway gives a ws URL; a base path prefix stays in the URL, not in the digest.",
            "headers", baseUrl="http://10.0.2.2:8080/tollgate/")
    upgrade("subprotocol-form", "Clients that cannot set headers: tollgate.v1, tollgate-app.<app token>, tollgate-device.<device token>; "
            "no Tollgate-* header.", "subprotocols")
    upgrade("subprotocol-form-provider-protocols", "The provider's subprotocols follow the three tollgate entries, in order.",
            "subprotocols", ["realtime", "openai-insecure-api-key.never-sent-by-an-sdk"])
    upgrade("refused-tollgate-protocol", "A caller's subprotocol starting with tollgate (any case) is refused before anything is sent.",
            "headers", ["Tollgate-App.x"])
    upgrade("refused-protocol-not-token", "A subprotocol must be an RFC 9110 token (RFC 6455 section 4.1): a space is refused.",
            "subprotocols", ["bad protocol"])
    upgrade("refused-empty-protocol", "An empty subprotocol is refused.", "headers", [""])
    upgrade("refused-endpoint", "The endpoint is checked as for any request: a dot segment is refused.", "headers",
            endpoint="openai/v1/../admin")
    return {"version": FORMAT_VERSION, "kind": "subprotocols", "vectors": v}


def upgrade_expected(inp: dict, build, refused_error) -> dict:
    for protocol in inp["providerProtocols"]:
        if not TOKEN_CHARS.match(protocol) or protocol.lower().startswith("tollgate"):
            return {"error": "invalidRequest"}
    try:
        built = build({"baseUrl": inp["baseUrl"], "endpoint": inp["endpoint"], "method": "GET", "appToken": inp["appToken"],
                       "deviceToken": inp["deviceToken"], "requestTimeMs": inp["requestTimeMs"], "sdk": inp["sdk"]})
    except refused_error:
        return {"error": "invalidRequest"}
    url = re.sub(r"^http", "ws", built["url"], flags=re.IGNORECASE)
    if inp["mode"] == "headers":
        headers = dict(built["headers"])
        if "userToken" in inp:
            headers["Tollgate-User-Token"] = inp["userToken"]
        protocols = list(inp["providerProtocols"])
    else:
        headers = {}
        protocols = ["tollgate.v1", "tollgate-app." + inp["appToken"], "tollgate-device." + inp["deviceToken"]] + inp["providerProtocols"]
    expected = {"url": url, "pathWithQuery": built["pathWithQuery"],
                "headers": dict(sorted(headers.items(), key=lambda item: item[0].lower())),
                "protocols": protocols, "secWebSocketProtocol": ", ".join(protocols) if protocols else None}
    if inp["mode"] == "headers":
        expected["canonicalRequest"] = built["canonicalRequest"]
        expected["digest"] = built["digest"]
    return expected


# --------------------------------------------------------------------------------------------------------------------
# user-token.json: when the user-token callback is called, and the one retry on user_token_expired
# --------------------------------------------------------------------------------------------------------------------

USER_MARGIN_MS = 60_000


def user_token() -> dict:
    v = []
    t0 = TIME
    fresh = _jwt({"iss": "https://securetoken.google.com/demo", "aud": "demo", "sub": "u1", "exp": (t0 + 3_600_000) // 1000})
    renewed = _jwt({"iss": "https://securetoken.google.com/demo", "aud": "demo", "sub": "u1", "exp": (t0 + 7_200_000) // 1000})
    nearly = _jwt({"sub": "u1", "exp": (t0 + 30_000) // 1000})
    no_exp = _jwt({"sub": "u1"})
    ok = {"status": 200}

    def expired():
        return {"status": 401, "errorType": "unauthorized", "reason": "user_token_expired"}

    def case(name, description, callback, answers, expected, cached=None, requests=1):
        inp = {"nowMs": t0, "callbackResults": callback, "answers": answers, "requests": requests}
        if cached is not None:
            inp["cached"] = cached
        v.append({"name": name, "description": description, "input": inp, "expected": expected})

    case("first-call-asks-callback", "No token cached: the callback is called once and its token sent as Tollgate-User-Token.",
         [fresh], [ok], {"callbackCalls": 1, "callbackForced": [False], "sentUserTokens": [fresh], "outcome": None})
    case("cached-fresh-token-reused", "A cached token whose JWT exp is more than 60 s away is reused: the callback is not called.",
         [renewed], [ok], {"callbackCalls": 0, "callbackForced": [], "sentUserTokens": [fresh], "outcome": None}, cached=fresh)
    case("cached-token-near-expiry", "A cached token with less than 60 s left is not sent: the callback is asked for a fresh one.",
         [renewed], [ok], {"callbackCalls": 1, "callbackForced": [False], "sentUserTokens": [renewed], "outcome": None}, cached=nearly)
    case("token-without-exp-not-cached", "A token whose exp cannot be read is used for one request only: asked again on the next.",
         [no_exp, no_exp], [ok, ok], {"callbackCalls": 2, "callbackForced": [False, False], "sentUserTokens": [no_exp, no_exp], "outcome": None},
         requests=2)
    case("two-requests-one-call", "Two requests in a row with a fresh token: one callback call.",
         [fresh], [ok, ok], {"callbackCalls": 1, "callbackForced": [False], "sentUserTokens": [fresh, fresh], "outcome": None}, requests=2)
    case("expired-retried-once", "401 user_token_expired: the callback is called again (forced), the request resent once, and succeeds.",
         [fresh, renewed], [expired(), ok],
         {"callbackCalls": 2, "callbackForced": [False, True], "sentUserTokens": [fresh, renewed], "outcome": None})
    case("expired-twice-surfaces", "user_token_expired again after the one retry: unauthorized surfaces; the callback is not called a third time.",
         [fresh, renewed, renewed], [expired(), expired()],
         {"callbackCalls": 2, "callbackForced": [False, True], "sentUserTokens": [fresh, renewed],
          "outcome": {"kind": "unauthorized", "reason": "user_token_expired"}})
    case("cached-expired-retried-once", "A cached token the gateway calls expired (clock skew): forced callback, one resend.",
         [renewed], [expired(), ok],
         {"callbackCalls": 1, "callbackForced": [True], "sentUserTokens": [fresh, renewed], "outcome": None}, cached=fresh)
    case("invalid-not-retried", "401 user_token_invalid is surfaced at once: no second callback call, no resend.",
         [fresh], [{"status": 401, "errorType": "unauthorized", "reason": "user_token_invalid"}],
         {"callbackCalls": 1, "callbackForced": [False], "sentUserTokens": [fresh], "outcome": {"kind": "unauthorized", "reason": "user_token_invalid"}})
    case("signed-out-sends-none", "The callback returns null (signed out): no Tollgate-User-Token header.",
         [None], [ok], {"callbackCalls": 1, "callbackForced": [False], "sentUserTokens": [None], "outcome": None})
    case("required-while-signed-out", "Signed out and the app requires users: user_token_required surfaces; no retry.",
         [None], [{"status": 401, "errorType": "unauthorized", "reason": "user_token_required"}],
         {"callbackCalls": 1, "callbackForced": [False], "sentUserTokens": [None], "outcome": {"kind": "unauthorized", "reason": "user_token_required"}})
    case("blocked-user-not-retried", "403 user_blocked: attestationFailed, no callback call again and no device-token refresh.",
         [fresh], [{"status": 403, "errorType": "attestationFailed", "reason": "user_blocked"}],
         {"callbackCalls": 1, "callbackForced": [False], "sentUserTokens": [fresh], "outcome": {"kind": "attestationFailed", "reason": "user_blocked"}})
    case("callback-fails", "The callback throws: nothing is sent; unauthorized with the SDK reason user_token_unavailable.",
         [{"throws": "sign-in provider offline"}], [],
         {"callbackCalls": 1, "callbackForced": [False], "sentUserTokens": [], "outcome": {"kind": "unauthorized", "reason": "user_token_unavailable"}})
    case("no-callback-sends-none", "No callback registered (callbackResults null): no header, nothing called.",
         None, [ok], {"callbackCalls": 0, "callbackForced": [], "sentUserTokens": [None], "outcome": None})
    return {"version": FORMAT_VERSION, "kind": "user-token", "constants": {"userTokenMarginMs": USER_MARGIN_MS}, "vectors": v}


# --------------------------------------------------------------------------------------------------------------------
# me.json: GET /v1/me -> the SDK's typed result
# --------------------------------------------------------------------------------------------------------------------

def _iso_ms(text):
    import datetime
    try:
        return int(datetime.datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp() * 1000)
    except (TypeError, ValueError, AttributeError):
        return None


def _number(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def me_expected(status: int, body: str) -> dict:
    if status != 200:
        raise AssertionError("non-200 vectors give their expected error themselves")
    try:
        doc = json.loads(body)
    except ValueError:
        return {"error": "networkError"}
    if not isinstance(doc, dict) or not isinstance(doc.get("limits"), list) or not isinstance(doc.get("device"), dict):
        return {"error": "networkError"}
    limits = []
    for entry in doc["limits"]:
        # Forward compatible: an entry the SDK cannot read is skipped, never a failure of the whole answer.
        if not isinstance(entry, dict) or not isinstance(entry.get("name"), str) or not _number(entry.get("limit")) or not _number(entry.get("remaining")):
            continue
        limits.append({"name": entry["name"], "scope": entry.get("scope") if isinstance(entry.get("scope"), str) else None,
                       "unit": entry.get("unit") if isinstance(entry.get("unit"), str) else None,
                       "limit": entry["limit"], "remaining": entry["remaining"],
                       "window": entry.get("window") if isinstance(entry.get("window"), str) else None,
                       "resetsAtMs": _iso_ms(entry.get("resetsAt")) if isinstance(entry.get("resetsAt"), str) else None})
    device = doc["device"]
    user = doc.get("user") if isinstance(doc.get("user"), dict) else None
    return {"deviceId": device.get("id") if isinstance(device.get("id"), str) else None,
            "userId": user.get("id") if user and isinstance(user.get("id"), str) else None,
            "signedIn": user is not None, "limits": limits}


def me() -> dict:
    v = []

    def case(name, description, document, status=200, raw=None, error=None):
        body = raw if raw is not None else json.dumps(document, separators=(",", ":"))
        expected = error if error is not None else me_expected(status, body)
        v.append({"name": name, "description": description, "input": {"status": status, "body": body}, "expected": expected})

    device = {"id": "dev_01HZX3", "method": "apple-app-attest"}
    rpm = {"name": "requests_per_minute", "scope": "device", "unit": "requests", "limit": 20, "remaining": 19, "window": "1m", "resetsAt": "2025-11-24T16:01:00.000Z"}
    rpd = {"name": "requests_per_day", "scope": "device", "unit": "requests", "limit": 100, "remaining": 12, "window": "1d", "resetsAt": "2025-11-25T00:00:00Z"}
    tpd = {"name": "tokens_per_day", "scope": "user", "unit": "tokens", "limit": 200000, "remaining": 15320, "window": "1d", "resetsAt": "2025-11-25T00:00:00.000Z"}
    sec = {"name": "session_seconds_per_day", "scope": "user", "unit": "seconds", "limit": 1800, "remaining": 0, "window": "1d", "resetsAt": "2025-11-25T00:00:00.000Z"}
    case("device-only", "A device without a signed-in user: user null, request limits per device.", {"device": device, "user": None, "limits": [rpm, rpd]})
    case("signed-in-user", "A signed-in user: per-user token and session-second budgets beside the device's limits.",
         {"device": device, "user": {"id": "usr_7f3a", "issuer": "https://securetoken.google.com/demo", "profile": "pro"}, "limits": [rpd, tpd, sec]})
    case("no-limits", "An app without limits: an empty list.", {"device": device, "user": None, "limits": []})
    case("unknown-fields-ignored", "Fields the SDK does not know (on the document and on a limit) are ignored.",
         {"device": {**device, "extra": 1}, "user": None, "limits": [{**rpd, "burst": 5}], "plan": "free"})
    case("unreadable-entry-skipped", "A limit without a name or numeric limit/remaining is skipped; the others are kept.",
         {"device": device, "user": None, "limits": [{"name": "x", "limit": "many"}, 7, rpd]})
    case("no-reset-time", "A limit without resetsAt (or window): null.",
         {"device": device, "user": None, "limits": [{"name": "concurrent_streams", "scope": "device", "unit": "streams", "limit": 4, "remaining": 3}]})
    case("not-json", "A 200 that is not JSON: networkError.", None, raw="<html>")
    case("no-limits-array", "A 200 without a limits array: networkError.", {"device": device, "user": None})
    case("error-status", "A non-200 is mapped as any response (error-mapping.json), here unauthorized.", None, status=401,
         raw='{"error":{"type":"unauthorized","reason":"app_token_unknown","message":"Unknown app token.","requestId":"req_1"}}',
         error={"error": "unauthorized", "reason": "app_token_unknown"})
    return {"version": FORMAT_VERSION, "kind": "me", "vectors": v}


def protocol_files(build, refused_error, render) -> dict:
    return {
        "realtime-close-codes.json": render(realtime_close_codes()),
        "subprotocols.json": render(subprotocols(build, refused_error)),
        "user-token.json": render(user_token()),
        "me.json": render(me()),
    }
