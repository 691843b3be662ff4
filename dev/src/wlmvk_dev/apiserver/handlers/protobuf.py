"""Decoding of the protobuf request bodies kubectl's imperative commands send.

``kubectl create namespace|configmap|secret|serviceaccount`` (and ``kubectl auth can-i``) post
``application/vnd.kubernetes.protobuf``: the ``k8s\\x00`` magic, then a ``runtime.Unknown``
envelope (type meta, raw object bytes). This module knows the field numbers of those few
kinds (from Kubernetes' ``generated.proto``) and turns them into the JSON the store keeps;
any other kind is a 415 naming the kind. Responses are always JSON, which client-go accepts.
"""

from __future__ import annotations

import base64
from datetime import UTC, datetime
from typing import Any

from wlmvk.kube.times import rfc3339
from wlmvk_dev.apiserver.objects.errors import ApiError, bad_request

MAGIC = b"k8s\x00"

# field number -> (json name, kind[, sub-schema]); kinds: s(tring), b(ytes), i(nt), ?(bool),
# t(ime), m(essage), ms (map string->string), mb (map string->bytes), rs (repeated string),
# rm (repeated message).
Schema = dict[int, tuple[Any, ...]]

OWNER_REFERENCE: Schema = {
    1: ("kind", "s"),
    3: ("name", "s"),
    4: ("uid", "s"),
    5: ("apiVersion", "s"),
    6: ("controller", "?"),
    7: ("blockOwnerDeletion", "?"),
}
OBJECT_META: Schema = {
    1: ("name", "s"),
    2: ("generateName", "s"),
    3: ("namespace", "s"),
    5: ("uid", "s"),
    6: ("resourceVersion", "s"),
    7: ("generation", "i"),
    8: ("creationTimestamp", "t"),
    11: ("labels", "ms"),
    12: ("annotations", "ms"),
    13: ("ownerReferences", "rm", OWNER_REFERENCE),
    14: ("finalizers", "rs"),
}
OBJECT_REFERENCE: Schema = {
    1: ("kind", "s"),
    2: ("namespace", "s"),
    3: ("name", "s"),
    4: ("uid", "s"),
    5: ("apiVersion", "s"),
}
KINDS: dict[tuple[str, str], Schema] = {
    ("v1", "Namespace"): {1: ("metadata", "m", OBJECT_META), 2: ("spec", "m", {1: ("finalizers", "rs")})},
    ("v1", "ConfigMap"): {
        1: ("metadata", "m", OBJECT_META),
        2: ("data", "ms"),
        3: ("binaryData", "mb"),
        4: ("immutable", "?"),
    },
    ("v1", "Secret"): {
        1: ("metadata", "m", OBJECT_META),
        2: ("data", "mb"),
        3: ("type", "s"),
        4: ("stringData", "ms"),
        5: ("immutable", "?"),
    },
    ("authorization.k8s.io/v1", "SelfSubjectAccessReview"): {1: ("metadata", "m", OBJECT_META)},
    ("v1", "ServiceAccount"): {
        1: ("metadata", "m", OBJECT_META),
        2: ("secrets", "rm", OBJECT_REFERENCE),
        3: ("imagePullSecrets", "rm", {1: ("name", "s")}),
        4: ("automountServiceAccountToken", "?"),
    },
}


def decode(body: bytes) -> dict[str, Any]:
    """The JSON form of a protobuf-encoded object of a supported kind."""
    if not body.startswith(MAGIC):
        raise bad_request("protobuf body without the k8s magic prefix")
    try:
        envelope = dict(_fields(body[len(MAGIC) :]))
        type_meta = dict(_fields(envelope.get(1, b"")))
        api_version = type_meta.get(1, b"").decode()
        kind = type_meta.get(2, b"").decode()
        schema = KINDS.get((api_version, kind))
        if schema is None:
            raise ApiError(
                415,
                "UnsupportedMediaType",
                f"this in-memory API server decodes protobuf only for {', '.join(k for _, k in KINDS)}, "
                f"not {kind}: send JSON (kubectl apply -f / create -f)",
            )
        obj = _message(envelope.get(2, b""), schema)
    except (IndexError, UnicodeDecodeError, ValueError) as e:
        raise bad_request(f"malformed protobuf body: {e}") from e
    return {"apiVersion": api_version, "kind": kind, **obj}


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    shift = result = 0
    while True:
        byte = data[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result, pos
        shift += 7
        if shift > 63:
            raise ValueError("varint too long")


def _fields(data: bytes) -> list[tuple[int, Any]]:
    """(field number, int or bytes) for each field on the wire, in order."""
    out: list[tuple[int, Any]] = []
    pos = 0
    while pos < len(data):
        tag, pos = _varint(data, pos)
        number, wire = tag >> 3, tag & 7
        if wire == 0:
            value, pos = _varint(data, pos)
            out.append((number, value))
        elif wire == 2:
            length, pos = _varint(data, pos)
            out.append((number, data[pos : pos + length]))
            pos += length
        elif wire == 1:
            out.append((number, int.from_bytes(data[pos : pos + 8], "little")))
            pos += 8
        elif wire == 5:
            out.append((number, int.from_bytes(data[pos : pos + 4], "little")))
            pos += 4
        else:
            raise ValueError(f"unsupported wire type {wire}")
    return out


def _message(data: bytes, schema: Schema) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for number, raw in _fields(data):
        spec = schema.get(number)
        if spec is None:
            continue
        name, kind = spec[0], spec[1]
        if kind == "s":
            if raw:
                out[name] = raw.decode()
        elif kind == "b":
            out[name] = base64.b64encode(raw).decode()
        elif kind == "i":
            if raw:
                out[name] = raw
        elif kind == "?":
            out[name] = bool(raw)
        elif kind == "t":
            seconds = dict(_fields(raw)).get(1, 0)
            if seconds:
                out[name] = rfc3339(datetime.fromtimestamp(seconds, UTC))
        elif kind == "m":
            sub = _message(raw, spec[2])
            if sub or name != "metadata":
                out[name] = sub
            else:
                out[name] = {}
        elif kind in ("ms", "mb"):
            entry = dict(_fields(raw))
            key = entry.get(1, b"").decode()
            value = entry.get(2, b"")
            out.setdefault(name, {})[key] = (
                value.decode() if kind == "ms" else base64.b64encode(value).decode()
            )
        elif kind == "rs":
            out.setdefault(name, []).append(raw.decode())
        elif kind == "rm":
            out.setdefault(name, []).append(_message(raw, spec[2]))
    return out
