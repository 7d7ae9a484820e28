#!/usr/bin/env python3
"""Writes the conformance vectors shared by the four Tollgate SDKs (see README.md beside this file).

    python3 sdk/conformance/generate.py          # rewrite the four JSON files
    python3 sdk/conformance/generate.py --check  # exit 1 when a file differs from what this script writes

Request-building expectations (URL, path-with-query, headers, body hash, canonical request, digest) are computed here
by a small reference implementation of the rules in README.md. Error-mapping and stream-parsing expectations are written
by hand: they are the specification, and each SDK's own implementation checks them.

Only the Python standard library is used.
"""
from __future__ import annotations

import base64
import hashlib
import json
import re
import sys
import urllib.parse
from pathlib import Path

HERE = Path(__file__).resolve().parent
FORMAT_VERSION = 1

APP_TOKEN = "at_0123456789abcdefghijABCDEFGHIJkl"
DEVICE_TOKEN = "eyJhbGciOiJFZERTQSIsInR5cCI6IkpXVCJ9.eyJhcHAiOiJhcHBfMSIsImRldiI6ImQxIn0.c2lnbmF0dXJl"
TIME = 1764000000000


# --------------------------------------------------------------------------------------------------------------------
# Reference implementation of request building (README.md, "request-building.json")
# --------------------------------------------------------------------------------------------------------------------

class Refused(Exception):
    pass


SLUG = re.compile(r"^[a-z0-9][a-z0-9-]{0,39}$")
VERSION = re.compile(r"^v[0-9][a-z0-9.-]{0,15}$")
PATH_CHARS = re.compile(r"^[A-Za-z0-9\-._~!$&'()*+,;=:@%/]*$")
QUERY_CHARS = re.compile(r"^[A-Za-z0-9\-._~!$&'()*+,;=:@%/?]*$")
PERCENT = re.compile(r"%(?![0-9A-Fa-f]{2})")
CONTROL = re.compile(r"[\u0000-\u001f\u007f-\u009f]")
SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.\-]*:")
UNRESERVED = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~"


def check_decoded(path: str) -> None:
    if CONTROL.search(path):
        raise Refused("control character")
    if "\\" in path:
        raise Refused("backslash")
    if "@" in path:
        raise Refused("@")
    if "//" in path:
        raise Refused("//")
    if path.startswith("/"):
        raise Refused("absolute")
    if SCHEME.match(path) or "://" in path:
        raise Refused("scheme")
    if any(segment in (".", "..") for segment in path.split("/")):
        raise Refused("dot segment")


def check_provider_path(path: str) -> None:
    current = path
    check_decoded(current)
    for _ in range(3):
        if PERCENT.search(current):
            raise Refused("malformed percent-encoding")  # as JavaScript's decodeURIComponent on the gateway
        try:
            decoded = urllib.parse.unquote(current, errors="strict")
        except UnicodeDecodeError:
            raise Refused("malformed percent-encoding")
        if decoded == current:
            return
        check_decoded(decoded)
        current = decoded
    raise Refused("nested percent-encoding")


def encode_component(value: str) -> str:
    return "".join(ch if ch in UNRESERVED else "".join(f"%{b:02X}" for b in ch.encode("utf-8")) for ch in value)


def check_header_value(value: str) -> None:
    if any(ch in value for ch in "\r\n\0"):
        raise Refused("header value with CR, LF or NUL")


def build(inp: dict) -> dict:
    base = inp["baseUrl"]
    match = re.match(r"^(https?)://([^/?#@\s]+)(/[^?#\s]*)?$", base, re.IGNORECASE)
    if not match:
        raise Refused("base URL")
    base = base.rstrip("/")

    method = inp["method"]
    if not re.match(r"^[A-Za-z]+$", method):
        raise Refused("method")
    method = method.upper()

    endpoint = inp["endpoint"]
    if endpoint.startswith("/"):
        endpoint = endpoint[1:]
    if "#" in endpoint:
        raise Refused("fragment")
    path, _, raw_query = endpoint.partition("?")
    if "?" in endpoint and not QUERY_CHARS.match(raw_query):
        raise Refused("query characters")
    if not PATH_CHARS.match(path) or PERCENT.search(path) or PERCENT.search(raw_query):
        raise Refused("path characters")
    if "//" in path or path.startswith("/"):
        raise Refused("//")
    parts = path.split("/", 2)
    if len(parts) < 2 or not SLUG.match(parts[0]) or not VERSION.match(parts[1]):
        raise Refused("shape")
    if len(parts) == 3:
        check_provider_path(parts[2])

    query_parts = [raw_query] if raw_query else []
    query_parts += [f"{encode_component(k)}={encode_component(v)}" for k, v in inp.get("query", [])]
    query = "&".join(query_parts)
    path_with_query = f"/v1/proxy/{path}" + (f"?{query}" if query else "")

    body = b""
    if "body" in inp:
        body = inp["body"]["text"].encode("utf-8") if "text" in inp["body"] else base64.b64decode(inp["body"]["base64"])

    headers = {}
    for name, value in inp.get("headers", {}).items():
        if not re.match(r"^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$", name):
            raise Refused("header name")
        if name.lower().startswith("tollgate-"):
            raise Refused("caller Tollgate-* header")
        check_header_value(value)
        headers[name] = value
    for value in (inp["appToken"], inp["deviceToken"], inp["sdk"]):
        check_header_value(value)
    headers["Tollgate-App-Token"] = inp["appToken"]
    headers["Tollgate-Device-Token"] = inp["deviceToken"]
    headers["Tollgate-Request-Time"] = str(inp["requestTimeMs"])
    headers["Tollgate-SDK"] = inp["sdk"]
    if body and not any(name.lower() == "content-type" for name in headers):
        headers["Content-Type"] = "application/json" if "text" in inp["body"] else "application/octet-stream"

    body_hash = hashlib.sha256(body).hexdigest()
    canonical = f"{method}\n{path_with_query}\n{inp['requestTimeMs']}\n{body_hash}"
    return {
        "method": method,
        "url": base + path_with_query,
        "pathWithQuery": path_with_query,
        "headers": dict(sorted(headers.items(), key=lambda item: item[0].lower())),
        "bodySha256": body_hash,
        "canonicalRequest": canonical,
        "digest": hashlib.sha256(canonical.encode("utf-8")).hexdigest(),
    }


def request_vector(name: str, description: str, **overrides) -> dict:
    inp = {
        "baseUrl": "https://gateway.example.com",
        "endpoint": "openai/v1/chat/completions",
        "method": "POST",
        "appToken": APP_TOKEN,
        "deviceToken": DEVICE_TOKEN,
        "requestTimeMs": TIME,
        "sdk": "android/1.2.0",
    }
    inp.update(overrides)
    try:
        expected = build(inp)
    except Refused:
        expected = {"error": "invalidRequest"}
    return {"name": name, "description": description, "input": inp, "expected": expected}


def refused(name: str, description: str, **overrides) -> dict:
    vector = request_vector(name, description, **overrides)
    assert vector["expected"] == {"error": "invalidRequest"}, f"{name} was expected to be refused"
    return vector


def request_building() -> dict:
    chat = '{"model":"gpt-4o-mini","messages":[{"role":"user","content":"Hello"}],"stream":true}'
    vectors = [
        request_vector("post-json-chat", "The common case: a JSON body; Content-Type defaults to application/json.",
                       body={"text": chat}),
        request_vector("get-with-query", "GET with query pairs, encoded in order; no body, so no Content-Type and the empty-body hash.",
                       method="GET", endpoint="brave/v1/web/search", sdk="flutter/1.2.0",
                       query=[["q", "tollgate gateway"], ["count", "5"], ["safesearch", "strict"]]),
        request_vector("query-encoding", "Every byte outside A-Z a-z 0-9 - . _ ~ is percent-encoded (UTF-8, uppercase hex); empty values keep '='.",
                       method="GET", endpoint="serpapi/v1/search.json",
                       query=[["q", "caf\u00e9 & cr\u00e8me=1+2/3?"], ["empty", ""], ["emoji", "\U0001F600"], ["tilde~dot.dash-under_", "a b"]]),
        request_vector("raw-query-in-endpoint", "A query written in the endpoint is kept verbatim; query pairs follow it after '&'.",
                       endpoint="gemini/v1beta/models/gemini-1.5-flash:streamGenerateContent?alt=sse",
                       query=[["x", "1"]], body={"text": '{"contents":[{"parts":[{"text":"Hi"}]}]}'}),
        request_vector("empty-body-post", "POST with a zero-length body: treated as no body (no Content-Type), hash of empty bytes.",
                       endpoint="openai/v1/models", body={"text": ""}),
        request_vector("unicode-body", "A UTF-8 body: the hash is over the UTF-8 bytes, not UTF-16 code units.",
                       endpoint="anthropic/v1/messages", sdk="ios/1.2.0",
                       headers={"anthropic-version": "2023-06-01"},
                       body={"text": '{"messages":[{"role":"user","content":"H\u00e9llo w\u00f6rld \u65e5\u672c\u8a9e \U0001F389 \u00a0"}]}'}),
        request_vector("binary-body", "Bytes given as base64 (not valid UTF-8); Content-Type defaults to application/octet-stream.",
                       endpoint="deepgram/v1/listen", sdk="react-native/1.2.0",
                       query=[["model", "nova-2"]],
                       body={"base64": base64.b64encode(bytes([0x52, 0x49, 0x46, 0x46, 0x00, 0xFF, 0xFE, 0x80, 0x0A, 0x0D, 0xC3, 0x28])).decode()}),
        request_vector("caller-content-type", "A Content-Type given by the caller is kept as given and no default is added.",
                       endpoint="openai/v1/audio/transcriptions",
                       headers={"content-type": "multipart/form-data; boundary=XyZ"},
                       body={"text": "--XyZ\r\nContent-Disposition: form-data; name=\"model\"\r\n\r\nwhisper-1\r\n--XyZ--\r\n"}),
        request_vector("leading-slash-normalized", "One leading '/' on the endpoint is removed.",
                       endpoint="/openai/v1/chat/completions", body={"text": chat}),
        request_vector("base-url-trailing-slash", "Trailing '/' of the base URL is removed before joining.",
                       baseUrl="https://gateway.example.com/", endpoint="mistral/v1/chat/completions", body={"text": "{}"}),
        request_vector("base-url-with-path-prefix", "A base URL with a path prefix: the URL keeps the prefix, the digest's path starts at /v1/proxy.",
                       baseUrl="http://10.0.2.2:8080/tollgate", endpoint="groq/v1/chat/completions", body={"text": "{}"}),
        request_vector("lowercase-method", "The method is upper-cased.", method="delete", endpoint="openai/v1/files/file-abc123"),
        request_vector("no-provider-path", "slug/version alone is a valid endpoint.", method="GET", endpoint="perplexity/v1"),
        request_vector("percent-encoded-path", "A percent-encoded path is kept as written (the SDK never re-encodes it); the digest uses it as sent.",
                       method="GET", endpoint="elevenlabs/v1/voices/voice%20one%2Bx"),
        request_vector("colon-and-dots-in-path", "':' and dots inside a segment are fine ('..' only as a whole segment is refused).",
                       endpoint="gemini/v1beta/models/gemini-2.0-flash:generateContent", body={"text": "{}"}),
        request_vector("zero-time", "Request time 0 is written as \"0\".", requestTimeMs=0, method="GET", endpoint="openai/v1/models"),
        # Refusals: the SDK throws invalidRequest before any network traffic.
        refused("refuse-dot-dot", "'..' segment.", endpoint="openai/v1/../admin/apps"),
        refused("refuse-dot-segment", "'.' segment.", endpoint="openai/v1/./chat/completions"),
        refused("refuse-encoded-dot-dot", "'%2e%2e' decodes to '..'.", endpoint="openai/v1/%2e%2e/admin"),
        refused("refuse-double-encoded-dot-dot", "'%252e%252e' decodes (twice) to '..'.", endpoint="openai/v1/%252e%252e/admin"),
        refused("refuse-double-slash", "Empty segment '//'.", endpoint="openai/v1/chat//completions"),
        refused("refuse-leading-double-slash", "'//' at the start (only one leading '/' is removed).", endpoint="//openai/v1/chat/completions"),
        refused("refuse-encoded-slash-slash", "'%2F%2F' decodes to '//'.", endpoint="openai/v1/chat%2F%2Fevil.com"),
        refused("refuse-backslash", "Backslash.", endpoint="openai/v1/chat\\completions"),
        refused("refuse-encoded-backslash", "'%5C' decodes to a backslash.", endpoint="openai/v1/chat%5Ccompletions"),
        refused("refuse-scheme-endpoint", "An absolute URL instead of an endpoint.", endpoint="https://evil.com/x"),
        refused("refuse-scheme-in-provider-path", "A scheme at the start of the provider path.", endpoint="openai/v1/http:evil.com"),
        refused("refuse-url-in-provider-path", "'://' inside the provider path.", endpoint="openai/v1/https://evil.com/x"),
        refused("refuse-at", "'@' (userinfo trick).", endpoint="openai/v1/user@evil.com/x"),
        refused("refuse-encoded-at", "'%40' decodes to '@'.", endpoint="openai/v1/user%40evil.com"),
        refused("refuse-control-char", "A control character (tab).", endpoint="openai/v1/chat\tcompletions"),
        refused("refuse-newline", "A line feed.", endpoint="openai/v1/chat\ncompletions"),
        refused("refuse-encoded-control", "'%0A' decodes to a line feed.", endpoint="openai/v1/chat%0Acompletions"),
        refused("refuse-del-char", "DEL (U+007F).", endpoint="openai/v1/chat\u007f"),
        refused("refuse-space", "A space: the path must be percent-encoded by the caller.", endpoint="openai/v1/chat completions"),
        refused("refuse-non-ascii", "Non-ASCII in the path must be percent-encoded by the caller.", endpoint="elevenlabs/v1/voices/\u00e9t\u00e9"),
        refused("refuse-bad-percent", "'%' not followed by two hex digits.", endpoint="openai/v1/chat%zz"),
        refused("refuse-decoded-bad-percent", "'%25zz' decodes to '%zz', which is not valid percent-encoding (the gateway refuses it).",
                endpoint="openai/v1/chat%25zz"),
        refused("refuse-invalid-utf8-percent", "Percent-encoding that is not UTF-8.", endpoint="openai/v1/caf%E9"),
        refused("refuse-fragment", "A fragment.", endpoint="openai/v1/chat/completions#x"),
        refused("refuse-no-version", "Unknown shape: slug without version.", endpoint="openai"),
        refused("refuse-uppercase-slug", "Unknown shape: the slug must match ^[a-z0-9][a-z0-9-]{0,39}$.", endpoint="OpenAI/v1/chat/completions"),
        refused("refuse-bad-version", "Unknown shape: the version must match ^v[0-9][a-z0-9.-]{0,15}$.", endpoint="openai/latest/chat/completions"),
        refused("refuse-empty-endpoint", "Empty endpoint.", endpoint=""),
        refused("refuse-proxy-prefix", "The endpoint is relative to /v1/proxy; 'v1/proxy/...' has an invalid shape.", endpoint="v1/proxy/openai/v1/models"),
        refused("refuse-base-url-scheme", "The base URL must be http or https.", baseUrl="ftp://gateway.example.com"),
        refused("refuse-base-url-query", "The base URL must not carry a query.", baseUrl="https://gateway.example.com/?x=1"),
        refused("refuse-caller-tollgate-header", "Callers cannot set Tollgate-* headers.", headers={"Tollgate-Device-Token": "forged"}, body={"text": "{}"}),
        refused("refuse-header-crlf", "Header values with CR or LF are refused (header injection).", headers={"x-title": "a\r\nTollgate-App-Token: x"}),
        refused("refuse-method", "The method must be letters only.", method="GET /x"),
    ]
    return {"version": FORMAT_VERSION, "kind": "request-building", "vectors": vectors}


# --------------------------------------------------------------------------------------------------------------------
# Error mapping (hand-written expectations)
# --------------------------------------------------------------------------------------------------------------------

NOW = 1764000000000  # 2025-11-24T16:00:00Z


REASON_OF = {
    "unauthorized": "app_token_unknown", "attestationFailed": "device_token_expired", "rateLimited": "rate_limited_device",
    "secretNotFound": "secret_not_found", "providerNotFound": "unknown_provider", "invalidRequest": "route_not_allowed",
    "upstreamUnavailable": "upstream_econnrefused", "upstreamTimeout": "first_byte_timeout",
    "serviceUnavailable": "rate_limit_store_unavailable", "internalError": "internal",
}


def gateway_body(kind: str, message: str, request_id: str = "req_01", reason: str | None = None) -> str:
    """A gateway error body as protocol.md ("Errors") fixes it: type, reason, message, requestId."""
    return json.dumps({"error": {"type": kind, "reason": reason or REASON_OF.get(kind, "something_new"), "message": message,
                                 "requestId": request_id}}, separators=(",", ":"))


def error_vector(name, description, status, headers, body, expected, now_ms=NOW, transport_error=None):
    inp = {"status": status, "headers": headers, "body": body, "nowMs": now_ms}
    if transport_error is not None:
        inp["transportError"] = transport_error
    return {"name": name, "description": description, "input": inp, "expected": expected}


def error_mapping() -> dict:
    json_ct = ["Content-Type", "application/json; charset=utf-8"]
    v = [
        error_vector("ok-200", "A 2xx is not an error.", 200, [["Content-Type", "application/json"]], '{"id":"chatcmpl-1"}', None),
        error_vector("ok-204", "A 2xx with an empty body is not an error.", 204, [], "", None),
        error_vector("ok-200-with-tollgate-error-header", "The status decides first: a 2xx is never an error.", 200,
                     [["Tollgate-Error", "rateLimited"]], "{}", None),
        error_vector("unauthorized", "401 unauthorized.", 401,
                     [["Tollgate-Error", "unauthorized"], json_ct, ["Tollgate-Request-Id", "req_01"]],
                     gateway_body("unauthorized", "The app token is unknown."),
                     {"kind": "unauthorized", "errorType": "unauthorized", "reason": "app_token_unknown", "message": "The app token is unknown.", "requestId": "req_01"}),
        error_vector("attestation-failed", "403 attestationFailed.", 403, [["Tollgate-Error", "attestationFailed"], json_ct],
                     gateway_body("attestationFailed", "The device token has expired.", "req_02"),
                     {"kind": "attestationFailed", "errorType": "attestationFailed", "reason": "device_token_expired", "message": "The device token has expired.", "requestId": "req_02"}),
        error_vector("attestation-failed-device-revoked", "403 attestationFailed with reason device_revoked: the reason is read from the body.", 403,
                     [["Tollgate-Error", "attestationFailed"], json_ct],
                     gateway_body("attestationFailed", "This device has been revoked.", "req_03", reason="device_revoked"),
                     {"kind": "attestationFailed", "errorType": "attestationFailed", "reason": "device_revoked", "requestId": "req_03"}),
        error_vector("attestation-failed-no-reason", "An older gateway's body without a reason: reason is null.", 403,
                     [["Tollgate-Error", "attestationFailed"], json_ct],
                     '{"error":{"type":"attestationFailed","message":"Expired.","requestId":"req_04"}}',
                     {"kind": "attestationFailed", "reason": None}),
        error_vector("reason-not-snake-case-ignored", "A reason that is not snake_case (or not a string) is read as null.", 403,
                     [["Tollgate-Error", "attestationFailed"], json_ct],
                     '{"error":{"type":"attestationFailed","reason":42,"message":"x","requestId":"req_05"}}',
                     {"kind": "attestationFailed", "reason": None}),
        error_vector("service-unavailable-503", "503 serviceUnavailable (the gateway's store is down, Retry-After set): networkError.", 503,
                     [["Tollgate-Error", "serviceUnavailable"], ["Retry-After", "1"], json_ct],
                     gateway_body("serviceUnavailable", "Rate limits cannot be checked right now."),
                     {"kind": "networkError", "errorType": "serviceUnavailable", "reason": "rate_limit_store_unavailable"}),
        error_vector("rate-limited-seconds", "429 with Retry-After in seconds.", 429,
                     [["Tollgate-Error", "rateLimited"], ["Retry-After", "30"], json_ct],
                     gateway_body("rateLimited", "Too many requests; retry after 30 s."),
                     {"kind": "rateLimited", "errorType": "rateLimited", "retryAfterSeconds": 30}),
        error_vector("rate-limited-zero", "Retry-After: 0.", 429, [["Tollgate-Error", "rateLimited"], ["Retry-After", "0"]],
                     gateway_body("rateLimited", "Too many requests."), {"kind": "rateLimited", "retryAfterSeconds": 0}),
        error_vector("rate-limited-http-date", "Retry-After as an HTTP-date 90 s after nowMs.", 429,
                     [["Tollgate-Error", "rateLimited"], ["Retry-After", "Mon, 24 Nov 2025 16:01:30 GMT"]],
                     gateway_body("rateLimited", "Too many requests."), {"kind": "rateLimited", "retryAfterSeconds": 90}),
        error_vector("rate-limited-http-date-rounds-up", "A fractional wait rounds up: the date is 89.5 s after nowMs.", 429,
                     [["Tollgate-Error", "rateLimited"], ["Retry-After", "Mon, 24 Nov 2025 16:01:30 GMT"]],
                     gateway_body("rateLimited", "Too many requests."), {"kind": "rateLimited", "retryAfterSeconds": 90},
                     now_ms=NOW + 500),
        error_vector("rate-limited-http-date-past", "An HTTP-date in the past gives 0.", 429,
                     [["Tollgate-Error", "rateLimited"], ["Retry-After", "Mon, 24 Nov 2025 15:59:00 GMT"]],
                     gateway_body("rateLimited", "Too many requests."), {"kind": "rateLimited", "retryAfterSeconds": 0}),
        error_vector("rate-limited-no-retry-after", "No Retry-After: retryAfterSeconds is null.", 429, [["Tollgate-Error", "rateLimited"]],
                     gateway_body("rateLimited", "Too many requests."), {"kind": "rateLimited", "retryAfterSeconds": None}),
        error_vector("rate-limited-garbage-retry-after", "An unparseable Retry-After gives null.", 429,
                     [["Tollgate-Error", "rateLimited"], ["Retry-After", "soon"]],
                     gateway_body("rateLimited", "Too many requests."), {"kind": "rateLimited", "retryAfterSeconds": None}),
        error_vector("rate-limited-retry-after-whitespace", "Surrounding whitespace of Retry-After is ignored.", 429,
                     [["Tollgate-Error", "rateLimited"], ["Retry-After", " 7 "]],
                     gateway_body("rateLimited", "Too many requests."), {"kind": "rateLimited", "retryAfterSeconds": 7}),
        error_vector("secret-not-found", "424 secretNotFound.", 424, [["Tollgate-Error", "secretNotFound"], json_ct],
                     gateway_body("secretNotFound", "No secret for provider \"openai\" on this app."),
                     {"kind": "secretNotFound", "errorType": "secretNotFound", "message": "No secret for provider \"openai\" on this app."}),
        error_vector("provider-not-found", "404 providerNotFound maps to invalidRequest.", 404, [["Tollgate-Error", "providerNotFound"], json_ct],
                     gateway_body("providerNotFound", "No provider is registered as \"nope\"."),
                     {"kind": "invalidRequest", "errorType": "providerNotFound", "message": "No provider is registered as \"nope\"."}),
        error_vector("invalid-request-400", "400 invalidRequest.", 400, [["Tollgate-Error", "invalidRequest"], json_ct],
                     gateway_body("invalidRequest", "The provider path is not allowed: dot segment."),
                     {"kind": "invalidRequest", "errorType": "invalidRequest", "message": "The provider path is not allowed: dot segment."}),
        error_vector("invalid-request-413", "413 body too large.", 413, [["Tollgate-Error", "invalidRequest"]],
                     gateway_body("invalidRequest", "The request body is too large."), {"kind": "invalidRequest", "errorType": "invalidRequest"}),
        error_vector("invalid-request-405", "405 method not allowed.", 405, [["Tollgate-Error", "invalidRequest"]],
                     gateway_body("invalidRequest", "Method not allowed."), {"kind": "invalidRequest"}),
        error_vector("upstream-unavailable", "502 upstreamUnavailable maps to networkError.", 502, [["Tollgate-Error", "upstreamUnavailable"]],
                     gateway_body("upstreamUnavailable", "The provider could not be reached."),
                     {"kind": "networkError", "errorType": "upstreamUnavailable"}),
        error_vector("upstream-timeout", "504 upstreamTimeout maps to networkError.", 504, [["Tollgate-Error", "upstreamTimeout"]],
                     gateway_body("upstreamTimeout", "The provider did not answer in time."),
                     {"kind": "networkError", "errorType": "upstreamTimeout"}),
        error_vector("no-response", "No response at all (offline, DNS, TLS, reset): networkError.", None, [], None,
                     {"kind": "networkError"}, transport_error="connection reset"),
        error_vector("internal-error-500", "internalError (500) is not an SDK kind: by the fallback rule a 5xx is networkError.", 500,
                     [["Tollgate-Error", "internalError"]], gateway_body("internalError", "The gateway failed to handle this request."),
                     {"kind": "networkError", "errorType": "internalError"}),
        error_vector("internal-error-503", "503 internalError (rate-limit store down, Retry-After: 1): networkError.", 503,
                     [["Tollgate-Error", "internalError"], ["Retry-After", "1"]], gateway_body("internalError", "Try again."),
                     {"kind": "networkError", "errorType": "internalError"}),
        error_vector("unknown-type-fallback-403", "An unknown Tollgate-Error type maps by status (403 -> attestationFailed).", 403,
                     [["Tollgate-Error", "deviceQuarantined"]], gateway_body("deviceQuarantined", "New kind."),
                     {"kind": "attestationFailed", "errorType": "deviceQuarantined"}),
        error_vector("unknown-type-fallback-4xx", "An unknown Tollgate-Error type with another 4xx maps to invalidRequest.", 409,
                     [["Tollgate-Error", "somethingNew"]], "{}", {"kind": "invalidRequest", "errorType": "somethingNew"}),
        error_vector("provider-error-400", "A provider's own 400 (no Tollgate-Error): providerError with the body passed through.", 400,
                     [["Content-Type", "application/json"], ["Tollgate-Request-Id", "req_09"]],
                     '{"error":{"message":"Invalid model","type":"invalid_request_error","code":"model_not_found"}}',
                     {"kind": "providerError", "status": 400, "reason": None,
                      "body": '{"error":{"message":"Invalid model","type":"invalid_request_error","code":"model_not_found"}}'}),
        error_vector("provider-error-429", "A provider's own 429 is providerError, not rateLimited.", 429,
                     [["Retry-After", "20"], ["Content-Type", "application/json"]],
                     '{"type":"error","error":{"type":"rate_limit_error","message":"Slow down"}}',
                     {"kind": "providerError", "status": 429, "body": '{"type":"error","error":{"type":"rate_limit_error","message":"Slow down"}}'}),
        error_vector("provider-error-401", "A provider's own 401 (bad key in the gateway) is providerError, not unauthorized.", 401,
                     [["Content-Type", "application/json"]], '{"error":{"message":"Incorrect API key provided"}}',
                     {"kind": "providerError", "status": 401, "body": '{"error":{"message":"Incorrect API key provided"}}'}),
        error_vector("provider-error-500-text", "A provider's 500 with a plain-text body.", 500, [["Content-Type", "text/plain"]],
                     "upstream exploded", {"kind": "providerError", "status": 500, "body": "upstream exploded"}),
        error_vector("provider-error-empty-body", "A provider's 503 with an empty body.", 503, [], "",
                     {"kind": "providerError", "status": 503, "body": ""}),
        error_vector("provider-error-unicode-body", "The provider body is passed through as UTF-8 text.", 400, [],
                     '{"error":"mod\u00e8le inconnu \u65e5\u672c"}', {"kind": "providerError", "status": 400, "body": '{"error":"mod\u00e8le inconnu \u65e5\u672c"}'}),
        error_vector("header-lowercase", "Header names are case-insensitive.", 424, [["tollgate-error", "secretNotFound"]],
                     gateway_body("secretNotFound", "No secret."), {"kind": "secretNotFound"}),
        error_vector("header-uppercase", "Header names are case-insensitive (Retry-After too).", 429,
                     [["TOLLGATE-ERROR", "rateLimited"], ["RETRY-AFTER", "12"]], gateway_body("rateLimited", "Slow."),
                     {"kind": "rateLimited", "retryAfterSeconds": 12}),
        error_vector("header-value-whitespace", "The Tollgate-Error value is trimmed.", 401, [["Tollgate-Error", " unauthorized "]],
                     gateway_body("unauthorized", "No."), {"kind": "unauthorized", "errorType": "unauthorized"}),
        error_vector("unparseable-body-maps-by-header", "A Tollgate-Error header with a body that is not JSON still maps by the header.", 401,
                     [["Tollgate-Error", "unauthorized"], ["Content-Type", "text/html"]], "<html>Bad Gateway</html>",
                     {"kind": "unauthorized", "errorType": "unauthorized"}),
        error_vector("empty-body-maps-by-header", "A Tollgate-Error header with an empty body maps by the header.", 429,
                     [["Tollgate-Error", "rateLimited"], ["Retry-After", "5"]], "", {"kind": "rateLimited", "retryAfterSeconds": 5}),
        error_vector("header-wins-over-body", "The header decides the kind, even when the body names another type.", 424,
                     [["Tollgate-Error", "secretNotFound"]], gateway_body("unauthorized", "Mismatch."),
                     {"kind": "secretNotFound", "errorType": "secretNotFound"}),
        error_vector("request-id-from-header", "requestId falls back to the Tollgate-Request-Id header when the body has none.", 403,
                     [["Tollgate-Error", "attestationFailed"], ["Tollgate-Request-Id", "req_hdr"]], "not json",
                     {"kind": "attestationFailed", "requestId": "req_hdr"}),
        error_vector("redirect-is-provider-error", "A 3xx without Tollgate-Error is providerError (the SDK does not follow redirects).", 302,
                     [["Location", "https://elsewhere.example.com/"]], "", {"kind": "providerError", "status": 302, "body": ""}),
    ]
    return {"version": FORMAT_VERSION, "kind": "error-mapping", "vectors": v}


# --------------------------------------------------------------------------------------------------------------------
# Stream parsing (hand-written expectations)
# --------------------------------------------------------------------------------------------------------------------

def chunk_json(chunk: bytes) -> dict:
    try:
        return {"text": chunk.decode("utf-8", errors="strict")}
    except UnicodeDecodeError:
        return {"base64": base64.b64encode(chunk).decode()}


def split_at(data: bytes, cuts: list[int]) -> list[bytes]:
    points = [0] + cuts + [len(data)]
    return [data[a:b] for a, b in zip(points, points[1:])]


def stream_vector(name, description, fmt, data, cuts, end, events=None, error=None, expected_bytes=None):
    if isinstance(data, str):
        data = data.encode("utf-8")
    chunks = split_at(data, cuts)
    assert b"".join(chunks) == data
    vector = {"name": name, "description": description, "format": fmt, "input": {}}
    vector["input"]["chunks"] = [chunk_json(c) for c in chunks]
    try:
        vector["input"]["text"] = data.decode("utf-8", errors="strict")
    except UnicodeDecodeError:
        pass
    vector["input"]["base64"] = base64.b64encode(data).decode()
    vector["input"]["end"] = end
    expected = {}
    if fmt == "raw":
        expected["bytes"] = base64.b64encode(expected_bytes).decode()
    else:
        expected["events"] = events
    expected["error"] = error
    vector["expected"] = expected
    return vector


def sse(data, event="message", id=None, retry=None):
    out = {"event": event, "data": data}
    if id is not None:
        out["id"] = id
    if retry is not None:
        out["retry"] = retry
    return out


def js(value):
    return {"json": value}


def stream_parsing() -> dict:
    v = []
    # ---- SSE ----
    openai = 'data: {"choices":[{"delta":{"content":"Hel"}}]}\n\ndata: {"choices":[{"delta":{"content":"lo"}}]}\n\ndata: [DONE]\n\n'
    v.append(stream_vector("sse-openai", "OpenAI-style chat stream, chunks split mid-line and mid-field; [DONE] is an ordinary data event.",
                           "sse", openai, [3, 20, 49, 50, 51, 90], "clean",
                           [sse('{"choices":[{"delta":{"content":"Hel"}}]}'), sse('{"choices":[{"delta":{"content":"lo"}}]}'), sse("[DONE]")]))
    anthropic = ('event: message_start\ndata: {"type":"message_start"}\n\n'
                 'event: ping\ndata: {"type": "ping"}\n\n'
                 'event: content_block_delta\ndata: {"type":"content_block_delta","delta":{"text":"Hi"}}\n\n'
                 'event: message_stop\ndata: {"type":"message_stop"}\n\n')
    v.append(stream_vector("sse-named-events", "Anthropic-style named events.", "sse", anthropic, [6, 21, 60, 61, 62, 150], "clean",
                           [sse('{"type":"message_start"}', "message_start"), sse('{"type": "ping"}', "ping"),
                            sse('{"type":"content_block_delta","delta":{"text":"Hi"}}', "content_block_delta"),
                            sse('{"type":"message_stop"}', "message_stop")]))
    v.append(stream_vector("sse-multiline-data", "Several data lines of one event are joined with \\n.", "sse",
                           "data: line one\ndata: line two\ndata:\ndata: line four\n\n", [20], "clean",
                           [sse("line one\nline two\n\nline four")]))
    v.append(stream_vector("sse-comments", "Comment lines (starting with ':') are ignored, including ones that make a block of their own.", "sse",
                           ": keep-alive\n\n: OPENROUTER PROCESSING\n\ndata: x\n: ping in the middle\ndata: y\n\n:\n\n", [5, 30], "clean",
                           [sse("x\ny")]))
    v.append(stream_vector("sse-crlf", "CRLF framing (Perplexity, Vertex); one chunk ends between CR and LF.", "sse",
                           "data: a\r\n\r\nevent: e\r\ndata: b\r\n\r\n", [8, 10, 11], "clean", [sse("a"), sse("b", "e")]))
    v.append(stream_vector("sse-cr-only", "CR-only framing.", "sse", "data: a\r\rdata: b\rdata: c\r\r", [8], "clean",
                           [sse("a"), sse("b\nc")]))
    v.append(stream_vector("sse-mixed-line-endings", "LF, CRLF and CR may be mixed in one stream.", "sse",
                           "data: a\r\n\ndata: b\r\rdata: c\n\r\n", [7, 8], "clean", [sse("a"), sse("b"), sse("c")]))
    bom = b"\xef\xbb\xbf" + b"data: after bom\n\n"
    v.append(stream_vector("sse-bom", "A UTF-8 BOM at the very start is skipped; here it is split over two chunks.", "sse",
                           bom, [1, 2], "clean", [sse("after bom")]))
    v.append(stream_vector("sse-bom-only-at-start", "A BOM after the start is content, not skipped.", "sse",
                           "data: a\n\ndata: \ufeffb\n\n", [], "clean", [sse("a"), sse("\ufeffb")]))
    v.append(stream_vector("sse-no-space", "'data:' without a space; only one leading space is removed from a value.", "sse",
                           "data:x\n\ndata:  two spaces\n\nevent:named\ndata:y \n\n", [], "clean",
                           [sse("x"), sse(" two spaces"), sse("y ", "named")]))
    v.append(stream_vector("sse-id-and-retry",
                           "id persists to later events (the spec's last event ID) until an empty id: resets it; retry is reported on the event whose block carried it, when all digits.",
                           "sse", "id: 1\nevent: e\ndata: d\nretry: 3000\n\ndata: next\n\nid:\ndata: reset\n\nid: 7\nretry: soon\ndata: z\n\n",
                           [12], "clean",
                           [sse("d", "e", id="1", retry=3000), sse("next", id="1"), sse("reset"), sse("z", id="7")]))
    v.append(stream_vector("sse-id-with-nul-ignored", "An id containing NUL is ignored.", "sse",
                           "id: 5\ndata: a\n\nid: x\u0000y\ndata: b\n\n", [], "clean", [sse("a", id="5"), sse("b", id="5")]))
    v.append(stream_vector("sse-cut-mid-event", "The connection breaks inside an event: the partial event is not emitted, then networkError.",
                           "sse", "data: one\n\ndata: tw", [12], "cut", [sse("one")], "networkError"))
    v.append(stream_vector("sse-clean-end-partial-event",
                           "A clean end without the final blank line: the unterminated event is discarded (WHATWG: pending data at end of file is dropped), no error.",
                           "sse", "data: one\n\ndata: two\n", [], "clean", [sse("one")]))
    v.append(stream_vector("sse-cut-after-complete-event", "A cut right after a complete event: the event is emitted, then networkError.",
                           "sse", "data: one\n\n", [], "cut", [sse("one")], "networkError"))
    v.append(stream_vector("sse-no-data-no-event", "A block without any data field dispatches nothing; 'data' alone (no colon) is an empty data field.",
                           "sse", "event: ping\n\nretry: 10\n\ndata\n\nfoo: bar\ndata: kept\n\n", [], "clean",
                           [sse(""), sse("kept")]))
    v.append(stream_vector("sse-empty-event-name", "An empty event: field means the default type 'message'.", "sse",
                           "event:\ndata: x\n\n", [], "clean", [sse("x")]))
    v.append(stream_vector("sse-event-name-resets", "The event type applies to one event only.", "sse",
                           "event: a\ndata: 1\n\ndata: 2\n\n", [], "clean", [sse("1", "a"), sse("2")]))
    uni = "data: h\u00e9llo \u65e5\u672c \U0001F389\n\n".encode("utf-8")
    v.append(stream_vector("sse-utf8-split", "Multi-byte UTF-8 characters split across chunks are decoded whole.", "sse",
                           uni, [8, 14, 16, 19], "clean", [sse("h\u00e9llo \u65e5\u672c \U0001F389")]))
    v.append(stream_vector("sse-replicate", "Replicate-style output/done events.", "sse",
                           "event: output\ndata: Hello\n\nevent: output\ndata:  world\n\nevent: done\ndata: {}\n\n", [30], "clean",
                           [sse("Hello", "output"), sse(" world", "output"), sse("{}", "done")]))
    v.append(stream_vector("sse-gemini-alt-sse", "Gemini alt=sse: data lines, CRLF, no [DONE].", "sse",
                           'data: {"candidates":[{"content":{"parts":[{"text":"A"}]}}]}\r\n\r\ndata: {"candidates":[]}\r\n\r\n', [40, 64], "clean",
                           [sse('{"candidates":[{"content":{"parts":[{"text":"A"}]}}]}'), sse('{"candidates":[]}')]))
    v.append(stream_vector("sse-empty", "An empty stream has no events.", "sse", "", [], "clean", []))
    v.append(stream_vector("sse-error-event-in-band", "A mid-stream error sent as data (OpenRouter) is an ordinary event.", "sse",
                           'data: {"error":{"message":"overloaded"}}\n\n', [], "clean", [sse('{"error":{"message":"overloaded"}}')]))

    # ---- NDJSON ----
    v.append(stream_vector("ndjson-basic", "One JSON value per line; chunks split mid-value.", "ndjson",
                           '{"text":"a","is_finished":false}\n{"text":"b","is_finished":true}\n', [5, 33, 34], "clean",
                           [js({"text": "a", "is_finished": False}), js({"text": "b", "is_finished": True})]))
    v.append(stream_vector("ndjson-blank-lines", "Empty and whitespace-only lines are skipped.", "ndjson",
                           '\n{"a":1}\n\n   \n\t\n{"b":2}\n\n', [], "clean", [js({"a": 1}), js({"b": 2})]))
    v.append(stream_vector("ndjson-crlf", "CRLF line ends; a chunk ends between CR and LF.", "ndjson",
                           '{"a":1}\r\n{"b":2}\r\n', [8], "clean", [js({"a": 1}), js({"b": 2})]))
    v.append(stream_vector("ndjson-last-line-no-newline", "A final line without a newline at a clean end IS emitted.", "ndjson",
                           '{"a":1}\n{"b":2}', [9], "clean", [js({"a": 1}), js({"b": 2})]))
    v.append(stream_vector("ndjson-cut-mid-line", "A cut inside a line: the partial line is NOT emitted, then networkError.", "ndjson",
                           '{"a":1}\n{"b":', [], "cut", [js({"a": 1})], "networkError"))
    v.append(stream_vector("ndjson-cut-complete-last-line", "A cut even after a complete-looking last line without newline: not emitted, networkError.", "ndjson",
                           '{"a":1}\n{"b":2}', [], "cut", [js({"a": 1})], "networkError"))
    v.append(stream_vector("ndjson-cut-after-newline", "A cut after a complete line: events, then networkError.", "ndjson",
                           '{"a":1}\n', [], "cut", [js({"a": 1})], "networkError"))
    v.append(stream_vector("ndjson-invalid-line", "A line that is not JSON ends the stream with networkError after the events before it.", "ndjson",
                           '{"a":1}\nnot json\n{"b":2}\n', [], "clean", [js({"a": 1})], "networkError"))
    v.append(stream_vector("ndjson-truncated-last-line", "A clean end whose last line (no newline) is not valid JSON: networkError.", "ndjson",
                           '{"a":1}\n{"b":2', [], "clean", [js({"a": 1})], "networkError"))
    v.append(stream_vector("ndjson-values", "Any JSON value is an event, not only objects; a line holding a string with a newline escape stays one line.", "ndjson",
                           '1\n"two\\nlines"\n[3,4]\nnull\ntrue\n{"n":0.5,"neg":-2}\n', [], "clean",
                           [js(1), js("two\nlines"), js([3, 4]), js(None), js(True), js({"n": 0.5, "neg": -2})]))
    v.append(stream_vector("ndjson-utf8-split", "Multi-byte characters split across chunks; a leading BOM is skipped.", "ndjson",
                           b"\xef\xbb\xbf" + '{"t":"\u00e9\u65e5\U0001F389"}\n'.encode("utf-8"), [2, 11, 13, 16], "clean",
                           [js({"t": "\u00e9\u65e5\U0001F389"})]))
    v.append(stream_vector("ndjson-empty", "An empty stream has no events.", "ndjson", "", [], "clean", []))

    # ---- JSON array ----
    gemini = '[{"candidates":[{"content":{"parts":[{"text":"Hel"}]}}]}\r\n,\r\n{"candidates":[{"content":{"parts":[{"text":"lo"}]}}]}\r\n]'
    v.append(stream_vector("json-array-gemini", "Gemini streamGenerateContent without alt=sse: elements separated by CRLF and commas.",
                           "json-array", gemini, [1, 10, 55, 57, 58, 100], "clean",
                           [js({"candidates": [{"content": {"parts": [{"text": "Hel"}]}}]}),
                            js({"candidates": [{"content": {"parts": [{"text": "lo"}]}}]})]))
    tricky = '[{"t":"a]b}c\\"d[{,"},{"u":"\\\\"},{"v":"\\\\\\"]"}]'
    v.append(stream_vector("json-array-tricky-strings", "Strings holding brackets, braces, commas, escaped quotes and escaped backslashes.",
                           "json-array", tricky, [5, 8, 9, 24, 25, 26, 35], "clean",
                           [js({"t": 'a]b}c"d[{,'}), js({"u": "\\"}), js({"v": '\\"]'})]))
    v.append(stream_vector("json-array-empty", "An empty array has no events.", "json-array", "[]", [1], "clean", []))
    v.append(stream_vector("json-array-whitespace", "Whitespace before '[', around elements and commas, and after ']'.", "json-array",
                           ' \n\t[ \n{"a":1} ,\n\t{"b":2}\n ]\n ', [3, 12], "clean", [js({"a": 1}), js({"b": 2})]))
    v.append(stream_vector("json-array-scalars", "Elements may be any JSON value; a chunk ends inside a number.", "json-array",
                           '[1,"two",[3,[4]],null,true,false,-12,0.5,{"k":{}}]', [2, 3, 9, 34, 35], "clean",
                           [js(1), js("two"), js([3, [4]]), js(None), js(True), js(False), js(-12), js(0.5), js({"k": {}})]))
    v.append(stream_vector("json-array-unicode", "Multi-byte UTF-8 split across chunks and \\u escapes.", "json-array",
                           '[{"t":"\u00e9\u65e5\U0001F389","e":"\\u00e9\\ud83c\\udf89"}]'.encode("utf-8"), [8, 10, 14], "clean",
                           [js({"t": "\u00e9\u65e5\U0001F389", "e": "\u00e9\U0001F389"})]))
    v.append(stream_vector("json-array-cut-mid-element", "A cut inside an element: earlier elements are emitted, then networkError.", "json-array",
                           '[{"a":1},{"b":', [], "cut", [js({"a": 1})], "networkError"))
    v.append(stream_vector("json-array-clean-end-unclosed", "A clean end before the closing ']': networkError after the complete elements.", "json-array",
                           '[{"a":1},{"b":2}', [], "clean", [js({"a": 1}), js({"b": 2})], "networkError"))
    v.append(stream_vector("json-array-cut-after-close", "A cut after the closing ']' still reports networkError (the transport failed).", "json-array",
                           '[{"a":1}]', [], "cut", [js({"a": 1})], "networkError"))
    v.append(stream_vector("json-array-not-array", "A top-level value that is not an array: networkError, no events.", "json-array",
                           '{"error":{"code":400}}', [], "clean", [], "networkError"))
    v.append(stream_vector("json-array-trailing-garbage", "Non-whitespace after the closing ']': networkError after the elements.", "json-array",
                           '[{"a":1}]x', [], "clean", [js({"a": 1})], "networkError"))
    v.append(stream_vector("json-array-bom", "A leading UTF-8 BOM is skipped.", "json-array", b"\xef\xbb\xbf" + b'[{"a":1}]', [1], "clean",
                           [js({"a": 1})]))
    v.append(stream_vector("json-array-empty-stream", "No bytes at all at a clean end: networkError (not an array).", "json-array",
                           "", [], "clean", [], "networkError"))

    # ---- raw ----
    audio = bytes([0x49, 0x44, 0x33, 0x04, 0x00, 0x00, 0xFF, 0xFB, 0x90, 0x64, 0x00, 0x0D, 0x0A, 0x00, 0xC3, 0x28, 0xFF])
    v.append(stream_vector("raw-audio", "Bytes pass through untouched (no BOM stripping, no line handling).", "raw",
                           audio, [1, 7, 12], "clean", expected_bytes=audio))
    v.append(stream_vector("raw-bom-kept", "A BOM in a raw stream is data.", "raw", b"\xef\xbb\xbfdata: x\r\n", [2], "clean",
                           expected_bytes=b"\xef\xbb\xbfdata: x\r\n"))
    v.append(stream_vector("raw-cut", "A cut: the bytes received so far, then networkError.", "raw", audio[:9], [4], "cut",
                           error="networkError", expected_bytes=audio[:9]))
    v.append(stream_vector("raw-empty", "An empty body.", "raw", b"", [], "clean", expected_bytes=b""))
    return {"version": FORMAT_VERSION, "kind": "stream-parsing", "vectors": v}


# --------------------------------------------------------------------------------------------------------------------
# Client behaviour (hand-written rules the SDKs used to disagree on)
# --------------------------------------------------------------------------------------------------------------------

REFRESH_MARGIN_MS = 60_000
RETRY_DEFAULTS = {"maxRetries": 3, "maxWaitSeconds": 30}


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode("ascii").rstrip("=")


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def jws(claims: dict) -> str:
    header = b64url(json.dumps({"alg": "EdDSA", "typ": "JWT"}, separators=(",", ":")).encode())
    return header + "." + b64url(json.dumps(claims, separators=(",", ":")).encode()) + "." + b64url(b"signature")


def iso(ms: int) -> str:
    import datetime
    return datetime.datetime.fromtimestamp(ms / 1000, datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.") + f"{ms % 1000:03d}Z"


def behaviour(rule: str, name: str, description: str, inp: dict, expected: dict) -> dict:
    return {"name": f"{rule}-{name}", "rule": rule, "description": description, "input": inp, "expected": expected}


def attestation_request(name, description, method, fields, body, extra=None):
    expected = {"method": "POST", "path": f"/v1/attest/{method}",
                "headers": [["Content-Type", "application/json"], ["Tollgate-App-Token", APP_TOKEN]], "body": body}
    expected.update(extra or {})
    return behaviour("attestation-request", name, description, {"method": method, "appToken": APP_TOKEN, "fields": fields}, expected)


def client_behaviour() -> dict:
    v = []
    # 1. Tollgate-Assertion: base64url without padding of the proof bytes (App Attest assertion CBOR, Android signature DER).
    for name, data in [("empty-is-refused", b""), ("one-byte", b"\xfb"), ("two-bytes", b"\xfb\xff"), ("three-bytes", b"\xfb\xff\xbf"),
                       ("url-alphabet", bytes(range(0xf8, 0x100)) + b"\x3e\x3f"), ("der-signature", bytes.fromhex(
                           "3045022100f0e1d2c3b4a5968778695a4b3c2d1e0f00112233445566778899aabbccddeeff0220" + "7f" * 32))]:
        expected = {"error": "invalidRequest"} if not data else {"header": b64url(data)}
        v.append(behaviour("assertion-encoding", name, "Tollgate-Assertion is base64url (RFC 4648 section 5) without padding of the proof bytes.",
                           {"bytesHex": data.hex()}, expected))

    # 2. Attestation exchange bodies (POST /v1/attest/{method}); the challenge comes from POST /v1/attest/challenge, one per exchange.
    challenge = "q1w2e3r4t5y6u7i8o9p0AaSsDdFfGgHhJjKkLlZzXx-_"
    v.append(behaviour("attestation-request", "challenge", "One challenge per exchange: POST /v1/attest/challenge with the app token and no body.",
                       {"method": "challenge", "appToken": APP_TOKEN, "fields": {}},
                       {"method": "POST", "path": "/v1/attest/challenge", "headers": [["Tollgate-App-Token", APP_TOKEN]], "body": None}))
    attestation = bytes.fromhex("a363666d74") + b"apple-appattest-object"
    v.append(attestation_request("apple-attest", "App Attest first attestation: attestKey over clientDataHash = SHA-256(UTF-8 challenge); bodies carry standard base64.",
                                 "apple-app-attest", {"keyId": "a2V5LWlkLTEyMzQ1Njc4OTBhYmNkZWY=", "challenge": challenge, "proofHex": attestation.hex()},
                                 {"keyId": "a2V5LWlkLTEyMzQ1Njc4OTBhYmNkZWY=", "challenge": challenge, "attestation": b64(attestation)},
                                 {"clientDataHashHex": hashlib.sha256(challenge.encode()).hexdigest()}))
    assertion = bytes.fromhex("a2697369676e6174757265") + b"assertion"
    v.append(attestation_request("apple-refresh", "App Attest refresh: an assertion by the attested key over the same clientDataHash; no new key.",
                                 "apple-app-attest", {"keyId": "a2V5LWlkLTEyMzQ1Njc4OTBhYmNkZWY=", "challenge": challenge, "proofHex": assertion.hex(), "refresh": True},
                                 {"keyId": "a2V5LWlkLTEyMzQ1Njc4OTBhYmNkZWY=", "challenge": challenge, "assertion": b64(assertion)},
                                 {"clientDataHashHex": hashlib.sha256(challenge.encode()).hexdigest()}))
    chain = [b"leaf-der", b"intermediate-der", b"root-der"]
    v.append(attestation_request("android-key-attest", "Android key attestation: setAttestationChallenge(base64url-decoded challenge); the chain leaf first, standard base64 DER.",
                                 "android-key-attestation", {"challenge": challenge, "chainHex": [c.hex() for c in chain]},
                                 {"challenge": challenge, "chain": [b64(c) for c in chain]},
                                 {"attestationChallengeHex": base64.urlsafe_b64decode(challenge + "=" * (-len(challenge) % 4)).hex()}))
    key_id = hashlib.sha256(b"subject-public-key-info").hexdigest()
    signature = bytes.fromhex("3044022011" + "22" * 31 + "022033" + "44" * 31)
    v.append(attestation_request("android-key-refresh", "Android refresh: SHA256withECDSA by the attested key over the UTF-8 challenge; keyId = hex SHA-256 of the key's SubjectPublicKeyInfo.",
                                 "android-key-attestation", {"challenge": challenge, "keyId": key_id, "proofHex": signature.hex(), "refresh": True},
                                 {"challenge": challenge, "keyId": key_id, "signature": b64(signature)},
                                 {"signedMessageHex": challenge.encode().hex()}))
    installation = "inst-6f1c2b9e-0d4a-4c55-9b1e-3f2a7c8d9e01"
    binding = b64url(hashlib.sha256(f"{challenge}\n{installation}".encode()).digest())
    v.append(attestation_request("play-integrity-standard", "Play Integrity standard request (the default): requestHash = base64url(SHA-256(UTF-8 challenge + LF + installation id)), no padding.",
                                 "android-play-integrity", {"challenge": challenge, "deviceId": installation, "integrityToken": "eyJhbGciOiJBMjU2S1cifQ.token", "type": "standard"},
                                 {"challenge": challenge, "integrityToken": "eyJhbGciOiJBMjU2S1cifQ.token", "deviceId": installation, "type": "standard"},
                                 {"requestHash": binding}))
    v.append(attestation_request("play-integrity-classic", "Play Integrity classic request (fallback only): the nonce is the same binding as the standard requestHash.",
                                 "android-play-integrity", {"challenge": challenge, "deviceId": installation, "integrityToken": "eyJhbGciOiJBMjU2S1cifQ.classic", "type": "classic"},
                                 {"challenge": challenge, "integrityToken": "eyJhbGciOiJBMjU2S1cifQ.classic", "deviceId": installation, "type": "classic"},
                                 {"nonce": binding}))
    v.append(attestation_request("development", "Development attestation (simulators, emulators, debug builds): no challenge.",
                                 "development", {"developmentToken": "dt_" + "D" * 32, "deviceId": "sim-0001"},
                                 {"developmentToken": "dt_" + "D" * 32, "deviceId": "sim-0001"}))

    # 3. Attestation responses: the SDK keeps deviceToken, deviceId and the expiry (rule 4).
    exp_s = 1764003600
    good = {"deviceToken": jws({"app": "app_1", "dev": "d1", "m": "development", "iat": exp_s - 3600, "exp": exp_s, "jti": "j1"}),
            "expiresAt": iso(exp_s * 1000), "expiresIn": 3600, "deviceId": "d1", "method": "development"}
    v.append(behaviour("attestation-response", "ok", "A 200 with deviceToken, expiresAt, deviceId: the SDK keeps the token and its expiry.",
                       {"status": 200, "body": json.dumps(good, separators=(",", ":")), "receivedAtMs": (exp_s - 3600) * 1000},
                       {"deviceToken": good["deviceToken"], "deviceId": "d1", "expiresAtMs": exp_s * 1000}))
    for name, body in [("no-token", {"expiresAt": good["expiresAt"], "deviceId": "d1"}), ("token-not-string", {**good, "deviceToken": 7})]:
        v.append(behaviour("attestation-response", name, "A 200 without a usable deviceToken breaks the protocol: networkError, nothing cached.",
                           {"status": 200, "body": json.dumps(body, separators=(",", ":")), "receivedAtMs": (exp_s - 3600) * 1000},
                           {"error": "networkError"}))
    v.append(behaviour("attestation-response", "not-json", "A 200 whose body is not JSON: networkError.",
                       {"status": 200, "body": "<html>", "receivedAtMs": 0}, {"error": "networkError"}))

    # 4. Which expiry wins: the earlier of expiresAt and the JWS exp; neither readable means do not cache (expiry = receipt).
    t0 = 1764000000000
    for name, expires_at, exp, want, description in [
        ("both-equal", iso(t0 + 3_600_000), (t0 + 3_600_000) // 1000, t0 + 3_600_000, "expiresAt and exp agree."),
        ("expires-at-earlier", iso(t0 + 1_800_000), (t0 + 3_600_000) // 1000, t0 + 1_800_000, "expiresAt is earlier than exp: expiresAt wins."),
        ("exp-earlier", iso(t0 + 3_600_000), (t0 + 600_000) // 1000, t0 + 600_000, "exp is earlier than expiresAt: exp wins."),
        ("only-exp", None, (t0 + 900_000) // 1000, t0 + 900_000, "No expiresAt: exp alone."),
        ("only-expires-at", iso(t0 + 1_200_000), None, t0 + 1_200_000, "A token without a readable exp: expiresAt alone."),
        ("neither", None, None, t0, "Neither: the token is used for this call only (expiry = the moment it was received)."),
        ("unparseable-expires-at", "tomorrow", (t0 + 900_000) // 1000, t0 + 900_000, "An unparseable expiresAt is ignored."),
    ]:
        claims = {"app": "app_1", "dev": "d1"}
        if exp is not None:
            claims["exp"] = exp
        v.append(behaviour("token-expiry", name, description,
                           {"deviceToken": jws(claims), "expiresAt": expires_at, "receivedAtMs": t0}, {"expiresAtMs": want}))

    # 5. One refresh margin for all: refresh when less than min(60 s, a fifth of the lifetime) remains.
    for name, lifetime, now_offset, refresh in [
        ("fresh", 3_600_000, 0, False), ("just-before-margin", 3_600_000, 3_540_000 - 1, False), ("at-margin", 3_600_000, 3_540_000, True),
        ("expired", 3_600_000, 3_600_001, True), ("short-lifetime-fifth", 100_000, 79_999, False), ("short-lifetime-at-fifth", 100_000, 80_000, True),
        ("zero-lifetime", 0, 0, True),
    ]:
        v.append(behaviour("refresh-due", name, "Refresh when nowMs >= expiresAtMs - min(60000, (expiresAtMs - receivedAtMs) / 5).",
                           {"receivedAtMs": t0, "expiresAtMs": t0 + lifetime, "nowMs": t0 + now_offset}, {"refresh": refresh}))

    # 6. Content-Type -> stream format (when the caller names none).
    for content_type, fmt in [("text/event-stream", "sse"), ("text/event-stream; charset=utf-8", "sse"), ("TEXT/EVENT-STREAM", "sse"),
                              ("application/x-ndjson", "ndjson"), ("application/ndjson", "ndjson"), ("application/jsonl", "ndjson"),
                              ("application/x-jsonlines", "ndjson"), ("application/json", "json-array"), ("application/json; charset=utf-8", "json-array"),
                              ("application/vnd.api+json", "json-array"), ("audio/mpeg", "raw"), ("application/octet-stream", "raw"),
                              ("application/vnd.amazon.eventstream", "raw"), ("", "raw"), (None, "raw")]:
        name = re.sub(r"[^a-z0-9]+", "-", content_type.lower()).strip("-") if content_type else ("missing" if content_type is None else "empty")
        name += "-upper" if content_type and content_type != content_type.lower() else ""
        v.append(behaviour("stream-format", name, "The stream format follows the response's Content-Type (media type compared case-insensitively, parameters ignored).",
                           {"contentType": content_type}, {"format": fmt}))

    # 7. Retry and back-off: only the gateway's rateLimited is retried, and only when retries are configured.
    def retry(name, description, error_kind, retry_after, attempt, waited, decision, delay=None, options=RETRY_DEFAULTS):
        inp = {"errorKind": error_kind, "retryAfterSeconds": retry_after, "retriesDone": attempt, "waitedSeconds": waited, "options": options}
        v.append(behaviour("retry", name, description, inp, {"retry": decision, "delaySeconds": delay}))
    retry("retry-after-honoured", "rateLimited with Retry-After: wait exactly that long.", "rateLimited", 3, 0, 0, True, 3)
    retry("backoff-first", "rateLimited without Retry-After: 1 s, then 2, 4, 8 … at most 30.", "rateLimited", None, 0, 0, True, 1)
    retry("backoff-third", "Third retry without Retry-After: 4 s.", "rateLimited", None, 2, 3, True, 4)
    retry("backoff-capped", "The back-off never exceeds 30 s.", "rateLimited", None, 6, 0, True, 30, {"maxRetries": 10, "maxWaitSeconds": 300})
    retry("budget-exceeded", "A wait that would pass maxWaitSeconds is not started: fail now with rateLimited.", "rateLimited", 20, 1, 15, False)
    retry("budget-exact", "A wait that reaches maxWaitSeconds exactly is allowed.", "rateLimited", 15, 1, 15, True, 15)
    retry("max-retries", "After maxRetries retries, fail.", "rateLimited", 1, 3, 3, False)
    retry("off-by-default", "Without retry options (the default) nothing is retried.", "rateLimited", 1, 0, 0, False, None, None)
    retry("provider-429-not-retried", "A provider's own 429 is providerError: never retried by the SDK.", "providerError", 1, 0, 0, False)
    retry("network-error-not-retried", "networkError is not retried (the request may have reached the provider).", "networkError", None, 0, 0, False)

    # 8. Before initialize, or without a gateway address: invalidRequest, nothing sent.
    for name, state, reason in [("request-before-initialize", "not-initialized", "not_initialized"),
                                ("stream-before-initialize", "not-initialized", "not_initialized"),
                                ("missing-gateway-url", "no-gateway-url", "gateway_url_missing")]:
        v.append(behaviour("not-initialized", name, "The SDK refuses the call before sending anything, with its invalidRequest error.",
                           {"state": state, "call": "stream" if name.startswith("stream") else "request"}, {"kind": "invalidRequest", "reason": reason}))

    # 9. Error reason -> SDK action on a proxied call (protocol.md, "Errors").
    for reason, action, description in [
        ("device_revoked", "stop", "Revoked: surface attestationFailed, attest no new key, refresh nothing until the app restarts."),
        ("device_token_expired", "refresh", "Refresh the device token with the existing key (assertion / key signature), then retry once."),
        ("device_token_invalid", "refresh", "Refresh with the existing key, then retry once."),
        ("device_token_missing", "refresh", "Obtain a token (refresh with the existing key, else attest), then retry once."),
        ("device_key_unknown", "attest", "The gateway no longer knows the key: attest a new key, then retry once."),
        ("assertion_required", "assert", "Send Tollgate-Assertion on every request from now on, then retry once."),
        ("request_time_skew", "none", "Any other reason: surface the error, change nothing."),
        ("signature_invalid", "none", "Any other reason: surface the error, change nothing."),
        (None, "refresh", "An older gateway sends no reason: refresh once, as before reasons existed."),
    ]:
        v.append(behaviour("reason-action", (reason or "no-reason").replace("_", "-"), description,
                           {"status": 403, "errorType": "attestationFailed", "reason": reason}, {"action": action, "retryOnce": action in ("refresh", "attest", "assert"),
                                                                                             "newKey": action == "attest"}))
    for status, kind, reason in [(401, "unauthorized", "app_token_unknown"), (429, "rateLimited", "rate_limited_device"),
                                 (400, "invalidRequest", "route_not_allowed")]:
        v.append(behaviour("reason-action", f"{kind.lower()}-{reason.replace('_', '-')}", "Errors other than attestationFailed never touch the device token.",
                           {"status": status, "errorType": kind, "reason": reason}, {"action": "none", "retryOnce": False, "newKey": False}))
    v.append(behaviour("reason-action", "revoked-during-refresh", "A refresh answered device_revoked: stop (no new key, no more refreshes).",
                       {"status": 403, "errorType": "attestationFailed", "reason": "device_revoked", "during": "refresh"}, {"action": "stop", "retryOnce": False, "newKey": False}))
    v.append(behaviour("reason-action", "key-unknown-during-refresh", "A refresh answered device_key_unknown: attest a new key.",
                       {"status": 403, "errorType": "attestationFailed", "reason": "device_key_unknown", "during": "refresh"}, {"action": "attest", "retryOnce": True, "newKey": True}))
    return {"version": FORMAT_VERSION, "kind": "client-behaviour", "constants": {"refreshMarginMs": REFRESH_MARGIN_MS, "retryDefaults": RETRY_DEFAULTS},
            "vectors": v}


def render(document: dict) -> str:
    names = [vector["name"] for vector in document["vectors"]]
    duplicates = {name for name in names if names.count(name) > 1}
    assert not duplicates, f"duplicate vector names: {duplicates}"
    return json.dumps(document, indent=2, ensure_ascii=True) + "\n"


def main() -> int:
    outputs = {
        "request-building.json": render(request_building()),
        "error-mapping.json": render(error_mapping()),
        "stream-parsing.json": render(stream_parsing()),
        "client-behaviour.json": render(client_behaviour()),
    }
    # Realtime sessions, signed-in users and /v1/me (generate_protocol.py); an upgrade is built by `build` above.
    sys.path.insert(0, str(HERE))
    from generate_protocol import protocol_files
    outputs.update(protocol_files(build, Refused, render))
    check = "--check" in sys.argv[1:]
    stale = []
    for name, text in outputs.items():
        path = HERE / name
        if check:
            if not path.exists() or path.read_text(encoding="utf-8") != text:
                stale.append(name)
        else:
            path.write_text(text, encoding="utf-8")
            print(f"wrote {name}: {len(json.loads(text)['vectors'])} vectors")
    if stale:
        print("out of date (run python3 sdk/conformance/generate.py): " + ", ".join(stale), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
