#!/usr/bin/env python3
"""Writes src/kinds/builtin-schemas.json: the OpenAPI schemas of the
Kubernetes built-in kinds, minor versions 1.30 to 1.37, for the resolver in
src/kinds/mod.rs (embedded into the binary).

    scripts/builtin-schemas.py            # regenerate, print the size
    scripts/builtin-schemas.py --check    # exit 1 if the committed file differs

The source is the PyPI package kubernetes-validate, which ships the upstream
OpenAPI definitions of every Kubernetes minor version converted to JSON
schema (`kubernetes-json-schema/v1.XX.0-local/_definitions.json`). It is
installed with pip like any other package, so regenerating needs no network
beyond a package registry, and the conversion keeps what the rules need of
the upstream OpenAPI: the list types, list map keys, map types and patch
merge keys, formats and required fields.

Only the definitions reachable from a kind are kept, each stored once per
distinct content with the range of minor versions that have it:

    {"source": "...", "minors": [30, ..., 37],
     "definitions": {name: [[first_minor, last_minor, schema], ...]},
     "kinds": {"group/version/Kind": [[first_minor, last_minor, name], ...]}}

(the core group is the empty string: "/v1/Pod"). References are kept as the
bare definition name (`{"$ref": "io.k8s.api.core.v1.PodSpec"}`); the resolver
inlines them for one minor version.

What the conversion changes, and why:

- `description`, `$schema`, `$id`, `example`, `externalDocs`,
  `x-kubernetes-patch-strategy`, `x-kubernetes-unions` and
  `x-kubernetes-group-version-kind` are dropped (the kinds table replaces
  the last one). `x-kubernetes-patch-merge-key` stays: the resolver turns
  such lists into map lists keyed by it, as server-side apply does.
- `type: [T, "null"]` becomes `type: T`: the converter adds the null, the
  OpenAPI has none.
- The `enum` of `apiVersion` and `kind` on each kind's definition is dropped:
  the converter adds it, the upstream OpenAPI declares plain strings.
- IntOrString (`oneOf` string or integer) becomes
  `{"x-kubernetes-int-or-string": true}`.
- Quantity (`oneOf` string or number) becomes `{"type": "string"}`: the API
  server always serializes a quantity as a string, so that is what objects
  in admission reviews carry.
- A schema with nothing in it (apiextensions' JSON, JSONSchemaPropsOrArray,
  ...: any JSON value) becomes `{"x-kubernetes-preserve-unknown-fields":
  true}`, and RawExtension and FieldsV1 (opaque objects) get
  `x-kubernetes-preserve-unknown-fields: true` beside `type: object`: the
  data under them is kept, not pruned, in built-in objects.
- Any other `oneOf`/`anyOf`/`allOf`/`not`, and any key this script does not
  know, is reported on stderr; a quantifier is replaced by
  `x-kubernetes-preserve-unknown-fields: true` (data of any shape), an
  unknown key is dropped.
- Kinds whose definition is an apimachinery meta type (DeleteOptions,
  WatchEvent, Status, APIGroup, ...: request and discovery bodies, never
  stored objects) and list kinds (`metadata` is ListMeta, or a `...List`
  kind with `items`) are left out of the kinds table.

The output is compact JSON with sorted keys; the same input gives the same
bytes.
"""

import argparse
import importlib.metadata
import importlib.util
import json
import os
import sys

MINORS = range(30, 38)
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUTPUT = os.path.join(ROOT, "src", "kinds", "builtin-schemas.json")
REF_PREFIX = "#/$defs/"

DROP = {
    "description",
    "$schema",
    "$id",
    "example",
    "externalDocs",
    "x-kubernetes-patch-strategy",
    "x-kubernetes-unions",
    "x-kubernetes-group-version-kind",
}
# Keys copied as they are (those of apiextensions/v1 JSONSchemaProps that can
# appear here, plus the patch merge key the resolver reads).
KEEP = {
    "type",
    "format",
    "enum",
    "required",
    "title",
    "default",
    "nullable",
    "pattern",
    "maximum",
    "minimum",
    "exclusiveMaximum",
    "exclusiveMinimum",
    "multipleOf",
    "maxLength",
    "minLength",
    "maxItems",
    "minItems",
    "uniqueItems",
    "maxProperties",
    "minProperties",
    "x-kubernetes-list-type",
    "x-kubernetes-list-map-keys",
    "x-kubernetes-map-type",
    "x-kubernetes-patch-merge-key",
    "x-kubernetes-preserve-unknown-fields",
    "x-kubernetes-embedded-resource",
    "x-kubernetes-int-or-string",
}
QUANTIFIERS = ("oneOf", "anyOf", "allOf", "not")
# Objects whose content is arbitrary JSON.
OPAQUE_OBJECTS = {
    "io.k8s.apimachinery.pkg.runtime.RawExtension",
    "io.k8s.apimachinery.pkg.apis.meta.v1.FieldsV1",
}
META_PREFIX = "io.k8s.apimachinery."
LIST_META = REF_PREFIX + "io.k8s.apimachinery.pkg.apis.meta.v1.ListMeta"


def schemas_dir():
    spec = importlib.util.find_spec("kubernetes_validate")
    if spec is None or not spec.submodule_search_locations:
        return None
    return os.path.join(list(spec.submodule_search_locations)[0], "kubernetes-json-schema")


def source_name():
    try:
        version = importlib.metadata.version("kubernetes-validate")
    except importlib.metadata.PackageNotFoundError:
        version = "unknown"
    return f"kubernetes-validate {version}, kubernetes-json-schema/v1.MINOR.0-local/_definitions.json"


def branch_types(branches):
    """The non-null types of a quantifier's branches, or None if a branch is
    more than a type."""
    out = []
    for b in branches:
        if not isinstance(b, dict) or set(b) - {"type", "description"}:
            return None
        t = b.get("type")
        t = [x for x in t if x != "null"] if isinstance(t, list) else [t]
        if len(t) != 1:
            return None
        out.append(t[0])
    return sorted(out)


class Converter:
    def __init__(self, minor):
        self.minor = minor
        self.reported = set()

    def report(self, where, what):
        key = (where, what)
        if key not in self.reported:
            self.reported.add(key)
            print(f"1.{self.minor}: {where}: {what}", file=sys.stderr)

    def node(self, s, where):
        if not isinstance(s, dict):
            self.report(where, f"not a schema: {s!r}; any value kept")
            return {"x-kubernetes-preserve-unknown-fields": True}
        for q in ("oneOf", "anyOf"):
            if q in s:
                types = branch_types(s[q])
                if types == ["integer", "string"]:
                    return {"x-kubernetes-int-or-string": True}
                if types == ["number", "string"]:
                    return {"type": "string"}
        out = {}
        for key, value in s.items():
            if key in DROP:
                continue
            if key == "$ref":
                if isinstance(value, str) and value.startswith(REF_PREFIX):
                    out["$ref"] = value[len(REF_PREFIX) :]
                else:
                    self.report(where, f"unsupported $ref {value!r}; any value kept")
                    out["x-kubernetes-preserve-unknown-fields"] = True
            elif key == "type":
                types = [t for t in value if t != "null"] if isinstance(value, list) else [value]
                if len(types) == 1:
                    out["type"] = types[0]
                else:
                    self.report(where, f"type {value!r}: left untyped, any value kept")
                    out["x-kubernetes-preserve-unknown-fields"] = True
            elif key == "properties":
                out["properties"] = {
                    name: self.node(child, f"{where}.properties[{name}]")
                    for name, child in value.items()
                }
            elif key in ("items", "additionalProperties") and isinstance(value, dict):
                out[key] = self.node(value, f"{where}.{key}")
            elif key in QUANTIFIERS:
                self.report(where, f"{key} replaced by x-kubernetes-preserve-unknown-fields")
                out["x-kubernetes-preserve-unknown-fields"] = True
            elif key in KEEP or key == "additionalProperties":
                out[key] = value
            else:
                self.report(where, f"unknown key {key!r} dropped")
        if not out:
            out["x-kubernetes-preserve-unknown-fields"] = True
        return out

    def definition(self, name, s):
        out = self.node(s, name)
        if name in OPAQUE_OBJECTS:
            out["x-kubernetes-preserve-unknown-fields"] = True
        if s.get("x-kubernetes-group-version-kind"):
            for field in ("apiVersion", "kind"):
                out.get("properties", {}).get(field, {}).pop("enum", None)
        return out


def refs(s, found):
    if isinstance(s, dict):
        for key, value in s.items():
            if key == "$ref" and isinstance(value, str):
                found.add(value)
            else:
                refs(value, found)
    elif isinstance(s, list):
        for value in s:
            refs(value, found)


def is_listed_kind(name, s, kind):
    if name.startswith(META_PREFIX):
        return False
    props = s.get("properties", {})
    is_list = props.get("metadata", {}).get("$ref") == LIST_META or (
        kind.endswith("List") and "items" in props
    )
    return not is_list


def load(directory, minor):
    path = os.path.join(directory, f"v1.{minor}.0-local", "_definitions.json")
    with open(path, encoding="utf-8") as f:
        return json.load(f)["$defs"]


def ranges(by_minor):
    """[(minor, value)] sorted by minor -> [[first, last, value]] joining
    consecutive minors with equal values."""
    out = []
    for minor, value in by_minor:
        if out and out[-1][1] == minor - 1 and out[-1][2] == value:
            out[-1][1] = minor
        else:
            out.append([minor, minor, value])
    return out


def generate(directory):
    definitions = {}  # name -> [(minor, canonical json)]
    kinds = {}  # "g/v/K" -> [(minor, name)]
    for minor in MINORS:
        defs = load(directory, minor)
        conv = Converter(minor)
        roots = []
        for name in sorted(defs):
            s = defs[name]
            gvks = [
                gvk
                for gvk in s.get("x-kubernetes-group-version-kind") or []
                if is_listed_kind(name, s, gvk["kind"])
            ]
            if not gvks:
                continue
            roots.append(name)
            for gvk in gvks:
                key = f"{gvk.get('group', '')}/{gvk['version']}/{gvk['kind']}"
                kinds.setdefault(key, []).append((minor, name))
        roots.append("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta")
        converted = {}
        pending = list(roots)
        while pending:
            name = pending.pop()
            if name in converted:
                continue
            if name not in defs:
                conv.report(name, "referenced but not defined")
                continue
            converted[name] = conv.definition(name, defs[name])
            found = set()
            refs(converted[name], found)
            pending.extend(sorted(found))
        for name, s in converted.items():
            text = json.dumps(s, sort_keys=True, separators=(",", ":"))
            definitions.setdefault(name, []).append((minor, text))
    out_defs = {
        name: [[a, b, json.loads(text)] for a, b, text in ranges(sorted(entries))]
        for name, entries in definitions.items()
    }
    out_kinds = {key: ranges(sorted(entries)) for key, entries in kinds.items()}
    doc = {
        "source": source_name(),
        "minors": list(MINORS),
        "definitions": out_defs,
        "kinds": out_kinds,
    }
    return (json.dumps(doc, sort_keys=True, separators=(",", ":"), ensure_ascii=False) + "\n").encode()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--check",
        action="store_true",
        help="regenerate in memory and exit 1 if the committed file differs",
    )
    parser.add_argument(
        "--schemas-dir",
        help="kubernetes-validate's kubernetes-json-schema directory (default: the installed package's)",
    )
    args = parser.parse_args()
    directory = args.schemas_dir or schemas_dir()
    if directory is None:
        print("kubernetes-validate is not installed (pip install kubernetes-validate)", file=sys.stderr)
        return 2
    if not os.path.isdir(directory):
        print(f"no such directory: {directory}", file=sys.stderr)
        return 2
    data = generate(directory)
    rel = os.path.relpath(OUTPUT, ROOT)
    if args.check:
        try:
            with open(OUTPUT, "rb") as f:
                current = f.read()
        except FileNotFoundError:
            current = None
        if current != data:
            print(f"{rel} is out of date: run scripts/builtin-schemas.py", file=sys.stderr)
            return 1
        print(f"{rel} is up to date ({len(data)} bytes)")
        return 0
    os.makedirs(os.path.dirname(OUTPUT), exist_ok=True)
    with open(OUTPUT, "wb") as f:
        f.write(data)
    print(f"wrote {rel}: {len(data)} bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
