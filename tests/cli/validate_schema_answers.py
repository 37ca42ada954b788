#!/usr/bin/env python3
"""Validates quip's --json-schema answers with an independent validator.

Reads JSON lines {"schema": ..., "answer": "TEXT"} from the file given (or
stdin): each answer must parse as JSON and be valid under its schema for the
`jsonschema` package's Draft 2020-12 validator, with format checking.
Prints one line per failure. Exit status: 0 when all are valid, 1 when one is
not, 2 when the validator or a format checker is missing.
"""
import json
import sys

FORMATS = ("date", "time", "date-time", "uuid", "email")


def main() -> int:
    try:
        import jsonschema
    except ImportError:
        print("validate_schema_answers: the jsonschema package is not installed", file=sys.stderr)
        return 2
    cls = jsonschema.Draft202012Validator
    checker = cls.FORMAT_CHECKER
    missing = [f for f in FORMATS if f not in checker.checkers]
    if missing:
        print("validate_schema_answers: no format checker for " + ", ".join(missing),
              file=sys.stderr)
        return 2
    source = open(sys.argv[1], encoding="utf-8") if len(sys.argv) > 1 else sys.stdin
    failures = checked = 0
    for n, line in enumerate(source, 1):
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
        errors = sorted(cls(case["schema"], format_checker=checker).iter_errors(instance),
                        key=str)
        if errors:
            print(f"line {n}: {errors[0].message}: {case['answer']!r}")
            failures += 1
    print(f"validate_schema_answers: {checked} answers, {failures} invalid")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
