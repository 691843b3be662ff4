"""CRD schema validation and pruning."""

from __future__ import annotations

from typing import Any

from wlmvk_dev.apiserver.handlers.jsonpath import find
from wlmvk_dev.apiserver.rules.schema import prune, validate

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "spec": {
            "type": "object",
            "required": ["batch"],
            "properties": {
                "batch": {"type": "string", "minLength": 1, "maxLength": 10},
                "nodes": {"type": "integer", "minimum": 1, "maximum": 4},
                "ratio": {"type": "number", "exclusiveMinimum": True, "minimum": 0},
                "mode": {"type": "string", "enum": ["a", "b"]},
                "name": {"type": "string", "pattern": "^[a-z]+$"},
                "flag": {"type": "boolean"},
                "port": {"x-kubernetes-int-or-string": True},
                "tags": {"type": "array", "minItems": 1, "items": {"type": "string"}},
                "env": {"type": "object", "additionalProperties": {"type": "string"}},
                "mount": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
                "maybe": {"type": "string", "nullable": True},
                "results": {
                    "type": "object",
                    "required": ["from"],
                    "properties": {"from": {"type": "string"}},
                },
            },
        },
        "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
    },
}


def problems(spec: dict[str, Any]) -> dict[str, str]:
    return {
        c.field: c.message
        for c in validate(SCHEMA, {"apiVersion": "x/v1", "kind": "X", "metadata": {}, "spec": spec})
    }


def test_valid_object_has_no_causes() -> None:
    spec = {
        "batch": "x",
        "nodes": 2,
        "ratio": 0.5,
        "mode": "a",
        "name": "abc",
        "flag": True,
        "port": "http",
        "tags": ["t"],
        "env": {"A": "1"},
        "mount": {"anything": [1]},
        "maybe": None,
        "results": {"from": "r"},
    }
    assert problems(spec) == {}
    assert problems({"batch": "x", "port": 8080}) == {}


def test_each_keyword_reports_its_field() -> None:
    found = problems(
        {
            "nodes": 0,
            "ratio": 0,
            "mode": "c",
            "name": "A1",
            "flag": "yes",
            "port": 1.5,
            "tags": [],
            "env": {"A": 1},
            "results": {},
        }
    )
    assert found["spec.batch"] == "Required value"
    assert found["spec.nodes"] == "Invalid value: 0: spec.nodes in body should be greater than or equal to 1"
    assert found["spec.ratio"] == "Invalid value: 0: spec.ratio in body should be greater than 0"
    assert found["spec.mode"] == 'Unsupported value: "c": supported values: "a", "b"'
    assert found["spec.name"] == "Invalid value: \"A1\": spec.name in body should match '^[a-z]+$'"
    assert (
        found["spec.flag"] == 'Invalid value: "string": spec.flag in body must be of type boolean: "string"'
    )
    assert "integer-or-string" in found["spec.port"]
    assert found["spec.tags"] == "Invalid value: 0: spec.tags in body should have at least 1 items"
    assert "must be of type string" in found["spec.env.A"]
    assert found["spec.results.from"] == "Required value"


def test_limits_above() -> None:
    found = problems({"batch": "x" * 11, "nodes": 5, "tags": [1]})
    assert found["spec.batch"].startswith("Too long")
    assert found["spec.nodes"].endswith("should be less than or equal to 4")
    assert "spec.tags[0]" in found


def test_prune_drops_undeclared_fields_but_keeps_preserved_ones() -> None:
    obj = {
        "metadata": {"x": 1},
        "spec": {
            "batch": "x",
            "colour": "red",
            "mount": {"free": {"a": 1}},
            "env": {"ANY": "1"},
            "results": {"from": "a", "to": "b"},
        },
        "status": {"anything": 1},
        "extra": True,
    }
    dropped = prune(SCHEMA, obj)
    assert sorted(dropped) == ["extra", "spec.colour", "spec.results.to"]
    assert obj == {
        "metadata": {"x": 1},
        "spec": {"batch": "x", "mount": {"free": {"a": 1}}, "env": {"ANY": "1"}, "results": {"from": "a"}},
        "status": {"anything": 1},
    }


def test_jsonpath() -> None:
    obj = {"a": {"b": [{"k": "x", "v": 1}, {"k": "y", "v": 2}], "c.d": "e", "t": True}}
    assert find(obj, ".a.b[1].v") == [2]
    assert find(obj, ".a.b[-1].k") == ["y"]
    assert find(obj, '.a.b[?(@.k=="x")].v') == [1]
    assert find(obj, ".a.b[?(@.k!='x')].v") == [2]
    assert find(obj, ".a.b[*].k") == ["x", "y"]
    assert find(obj, "{.a['c.d']}") == ["e"]
    assert find(obj, "$.a.t") == [True]
    assert find(obj, ".a.missing") == []
    assert find(obj, ".a.b[9]") == []
    assert find(obj, "no-dot") == []
