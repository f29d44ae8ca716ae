#!/usr/bin/python3
"""Checks deploy/kubernetes/*.yaml offline against the Kubernetes API's typed models.

Every document is turned into the model class of its apiVersion/kind from Debian's
python3-kubernetes (V1StatefulSet, V1Job, ...), field by field: a key the API does not
have, a value of the wrong type (string for integer, map for list, ...), a missing
required field or a bad enum value fails the test. The python client ignores unknown keys
by itself; this walk is what rejects them.

What this proves: each manifest is a well-formed object of the API version the package
was generated from (see the printed version). What it cannot: admission checks a cluster
makes (name formats, resource quantities' syntax, immutable fields, a storage class or
image existing), whether the pods start, or fields added in API versions newer than the
package. Exits 77 (ctest SKIP) when python3-kubernetes or python3-yaml is missing.
"""
import glob
import os
import re
import sys

try:
    import yaml
    import kubernetes
    from kubernetes import client
except ImportError as e:
    print(f"SKIP: {e}: install Debian's python3-kubernetes and python3-yaml")
    sys.exit(77)

# Objects as the API spells them; client-side validation (required fields, enums) on.
CONFIG = client.Configuration()
CONFIG.client_side_validation = True


# Fields newer than python3-kubernetes 22.6.0 (Kubernetes 1.22's API) that the manifests use:
# checked here by hand against the upstream API reference, reported as such.
NEWER_FIELDS = {
    ("V1Probe", "grpc"): ("V1GRPCAction, Kubernetes >= 1.24 (GA 1.27)",
                          {"port": int, "service": str}, {"port"}),
}
# Maps whose values are resource.Quantity: the client types them str, the API also takes
# a number (nvidia.com/gpu: 1).
QUANTITY_MAPS = {("V1ResourceRequirements", "limits"), ("V1ResourceRequirements", "requests")}
notes = []


def check_newer_field(value, spec, path, errors):
    what, fields, required = spec
    notes.append(f"{path}: {what}, newer than the package: checked by hand")
    if not isinstance(value, dict):
        errors.append(f"{path}: expected an object")
        return
    for key, v in value.items():
        if key not in fields:
            errors.append(f"{path}.{key}: no such field in {what}")
        elif not isinstance(v, fields[key]) or isinstance(v, bool):
            errors.append(f"{path}.{key}: expected {fields[key].__name__}")
    for key in required - value.keys():
        errors.append(f"{path}: {key} is required")


def model_class(api_version, kind):
    group, _, version = api_version.rpartition("/")
    return getattr(client, version.capitalize() + kind, None)


def build(value, type_name, path, errors):
    """`value` as an instance of the API type `type_name`; errors appended with `path`."""
    if value is None:
        return None
    m = re.fullmatch(r"list\[(.*)\]", type_name)
    if m:
        if not isinstance(value, list):
            errors.append(f"{path}: expected a list, got {type(value).__name__}")
            return None
        return [build(v, m.group(1), f"{path}[{i}]", errors) for i, v in enumerate(value)]
    m = re.fullmatch(r"dict\(str, (.*)\)", type_name)
    if m:
        if not isinstance(value, dict):
            errors.append(f"{path}: expected a map, got {type(value).__name__}")
            return None
        return {k: build(v, m.group(1), f"{path}.{k}", errors) for k, v in value.items()}
    primitive = {"str": str, "int": int, "bool": bool, "float": (int, float)}
    if type_name in primitive:
        ok = isinstance(value, primitive[type_name]) and not (
            type_name == "int" and isinstance(value, bool))
        if not ok:
            errors.append(f"{path}: expected {type_name}, got {type(value).__name__} {value!r}")
        return value
    if type_name == "object":  # IntOrString, Quantity and free-form fields
        if not isinstance(value, (str, int, float, dict, list)):
            errors.append(f"{path}: unexpected {type(value).__name__}")
        return value
    cls = getattr(client, type_name, None)
    if cls is None:
        errors.append(f"{path}: unknown API type {type_name}")
        return None
    if not isinstance(value, dict):
        errors.append(f"{path}: expected a {type_name} object, got {type(value).__name__}")
        return None
    by_json_name = {json: attr for attr, json in cls.attribute_map.items()}
    kwargs = {}
    for key, v in value.items():
        attr = by_json_name.get(key)
        if (type_name, key) in NEWER_FIELDS:
            check_newer_field(v, NEWER_FIELDS[(type_name, key)], f"{path}.{key}", errors)
            continue
        if attr is not None and (type_name, key) in QUANTITY_MAPS and isinstance(v, dict):
            v = {k: str(q) if isinstance(q, (int, float)) and not isinstance(q, bool) else q
                 for k, q in v.items()}
        if attr is None:
            errors.append(f"{path}.{key}: no such field in {type_name}")
            continue
        kwargs[attr] = build(v, cls.openapi_types[attr], f"{path}.{key}", errors)
    try:
        return cls(local_vars_configuration=CONFIG, **kwargs)
    except ValueError as e:  # a required field missing, an enum value not allowed
        errors.append(f"{path}: {type_name}: {e}")
        return None


def main():
    source = sys.argv[1] if len(sys.argv) > 1 else os.environ.get("HGEVAL_SOURCE_DIR", ".")
    files = sorted(glob.glob(os.path.join(source, "deploy/kubernetes/*.yaml")))
    if not files:
        print("FAIL: no manifests under deploy/kubernetes")
        return 1
    print(f"python3-kubernetes {kubernetes.__version__}")
    failures = 0
    checked = 0
    for path in files:
        with open(path) as f:
            docs = [d for d in yaml.safe_load_all(f) if d is not None]
        for doc in docs:
            name = f"{os.path.basename(path)}: {doc.get('kind')} {doc.get('metadata', {}).get('name')}"
            cls = model_class(doc.get("apiVersion", ""), doc.get("kind", ""))
            if cls is None:
                print(f"FAIL {name}: no API model for {doc.get('apiVersion')} {doc.get('kind')}")
                failures += 1
                continue
            errors = []
            build(doc, cls.__name__, doc.get("kind"), errors)
            checked += 1
            if errors:
                failures += 1
                print(f"FAIL {name}:")
                for e in errors:
                    print(f"  {e}")
            else:
                print(f"ok   {name} ({cls.__name__})")
    # The check itself must reject what it claims to: a typo'd field and a mistyped value.
    for bad in ({"apiVersion": "v1", "kind": "Service", "spec": {"prots": []}},
                {"apiVersion": "v1", "kind": "Service", "spec": {"ports": [{"port": "80"}]}},
                {"apiVersion": "v1", "kind": "Service", "spec": {"ports": [{"name": "x"}]}}):
        errors = []
        build(bad, "V1Service", "Service", errors)
        if not errors:
            print(f"FAIL: the check accepted a bad object: {bad}")
            failures += 1
    for note in sorted(set(notes)):
        print(f"note {note}")
    print(f"{checked} documents checked, {failures} failing")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
