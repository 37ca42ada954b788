#!/usr/bin/env python3
"""Checks the labels of the JSON Schema corpus against an independent validator.

Each tests/data/json_schemas/NAME.json holds {"schema": ..., "valid": [...],
"invalid": [...]}. json_schema_test.cpp checks that the grammar made from each
schema matches the valid instances and refuses the invalid ones; this script
checks that the labels are right, with the `jsonschema` package's Draft 2020-12
validator and its format checkers (date-time and time need rfc3339-validator).

Usage: check_json_schemas.py [DIR]   (default: the corpus beside this script)
Exits 1 on any mismatch, 2 when the validator or a format checker is missing.
"""
import json
import pathlib
import sys

FORMATS = ("date", "time", "date-time", "uuid", "email")


def main() -> int:
    here = pathlib.Path(__file__).resolve().parent
    corpus = pathlib.Path(sys.argv[1]) if len(sys.argv) > 1 else here.parent / "data" / "json_schemas"
    try:
        import jsonschema
    except ImportError:
        print("check_json_schemas: the jsonschema package is not installed", file=sys.stderr)
        return 2
    validator_class = jsonschema.Draft202012Validator
    checker = validator_class.FORMAT_CHECKER
    missing = [f for f in FORMATS if f not in checker.checkers]
    if missing:
        # Without them the formats would be passed unchecked.
        print("check_json_schemas: no format checker for " + ", ".join(missing) +
              " (install rfc3339-validator)", file=sys.stderr)
        return 2

    files = sorted(corpus.glob("*.json"))
    if not files:
        print(f"check_json_schemas: no corpus files in {corpus}", file=sys.stderr)
        return 1
    failures = 0
    instances = 0
    for path in files:
        with open(path, encoding="utf-8") as f:
            case = json.load(f)
        schema = case["schema"]
        try:
            validator_class.check_schema(schema)
        except jsonschema.SchemaError as e:
            print(f"{path.name}: the schema is not valid: {e.message}")
            failures += 1
            continue
        validator = validator_class(schema, format_checker=checker)
        for label, expected in (("valid", True), ("invalid", False)):
            for i, instance in enumerate(case[label]):
                instances += 1
                if validator.is_valid(instance) != expected:
                    print(f"{path.name}: {label}[{i}] {json.dumps(instance, ensure_ascii=False)} "
                          f"is {'invalid' if expected else 'valid'} for jsonschema")
                    failures += 1
    print(f"check_json_schemas: {len(files)} schemas, {instances} instances, {failures} mismatches")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
