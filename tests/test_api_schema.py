"""The OpenAPI schema says what every field is (README, API): a script writer reads /api/docs/, not our models.
Walked generically over every component, request and response, nested objects included, so a new endpoint's
fields are checked by being in the schema."""

from __future__ import annotations

import re
from collections.abc import Iterator

from drf_spectacular.generators import SchemaGenerator

# Django's help text of User.username: it describes the user form's validation, and leaks into every field that
# names a person by username unless that field says whose username it is.
USER_FORM_TEXT = ("150 characters or fewer", "Letters, digits and @/./+/-/_ only")


def properties(schema: dict, path: str) -> Iterator[tuple[str, str, dict]]:
    """(path, name, schema) of every property of `schema`, into inline objects, array items and allOf/oneOf/anyOf
    parts (a $ref is a component of its own, walked as one)."""
    for name, prop in schema.get("properties", {}).items():
        yield f"{path}.{name}", name, prop
        yield from properties(prop, f"{path}.{name}")
    for key in ("items", "additionalProperties"):
        if isinstance(schema.get(key), dict):
            yield from properties(schema[key], f"{path}[]")
    for key in ("allOf", "oneOf", "anyOf"):
        for part in schema.get(key, []):
            yield from properties(part, path)


def words(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", " ", text.lower()).strip()


def schema_problems() -> list[tuple[str, str]]:
    schema = SchemaGenerator().get_schema(request=None, public=True)
    components = schema["components"]["schemas"]
    assert any("properties" in body for body in components.values())  # not vacuously true
    found = []
    for component, body in components.items():
        for path, name, prop in properties(body, component):
            description = prop.get("description", "").strip()
            if not description:
                found.append((path, "no description"))
            elif any(text in description for text in USER_FORM_TEXT):
                found.append((path, "the User model's username help text"))
            elif words(description) in {words(name), words(prop.get("title", ""))}:
                found.append((path, f"only repeats the field's name: {description!r}"))
    return found


def report(found: list[tuple[str, str]]) -> str:
    return f"{len(found)} schema properties:\n" + "\n".join(f"  {path}: {problem}" for path, problem in found)


def test_no_field_carries_the_user_forms_help_text():
    found = [(path, problem) for path, problem in schema_problems() if "username help text" in problem]
    assert not found, report(found)


def test_every_schema_property_says_what_it_is():
    found = schema_problems()
    assert not found, report(found)
