#!/usr/bin/env python3
"""Checks the labels of the JSON Schema corpus against an independent validator.

Each tests/data/json_schemas/NAME.json holds {"schema": ..., "valid": [...],
"invalid": [...]}. json_schema_test.cpp checks that the grammar made from each
schema matches the valid instances and refuses the invalid ones; this script
checks that the labels are right, with the `jsonschema` package's Draft 2020-12
validator and its format checkers (date-time and time need rfc3339-validator).

With --answers FILE it checks quip's --json-schema answers instead: FILE
holds JSON lines {"schema": ..., "answer": "TEXT"}, and each answer must
parse as JSON and be valid under its schema.

Usage: check_json_schemas.py [DIR]   (default: the corpus beside this script)
       check_json_schemas.py --answers FILE
Exits 1 on any mismatch, 2 when the validator or a format checker is missing.
"""
import json
import pathlib
import sys

FORMATS = ("date", "time", "date-time", "uuid", "email")


def check_answers(path, validator_class, checker) -> int:
    failures = checked = 0
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            case = json.loads(line)
            checked += 1
            try:
                instance = json.loads(case["answer"])
            except ValueError as e:
                print(f"line {n}: the answer is not JSON ({e}): {case['answer']!r}")
                failures += 1
                continue
            validator = validator_class(case["schema"], format_checker=checker)
            errors = sorted(validator.iter_errors(instance), key=str)
            if errors:
                print(f"line {n}: {errors[0].message}: {case['answer']!r}")
                failures += 1
    print(f"check_json_schemas: {checked} answers, {failures} invalid")
    return 1 if failures else 0


def main() -> int:
    here = pathlib.Path(__file__).resolve().parent
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
    if len(sys.argv) == 3 and sys.argv[1] == "--answers":
        return check_answers(sys.argv[2], validator_class, checker)
    corpus = pathlib.Path(sys.argv[1]) if len(sys.argv) > 1 else here.parent / "data" / "json_schemas"

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
