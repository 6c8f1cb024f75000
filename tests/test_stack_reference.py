"""docs/stack-file.md, the generated stack-file reference: every key of the typed config, every key the repo's
stacks use, an example for each that the key's own type accepts, and refusals that point at the page."""

from __future__ import annotations

import re
import typing

import pytest
from pydantic import TypeAdapter, ValidationError

from aks_gpu_inference.components.core.errors import REFERENCE
from aks_gpu_inference.components.stack import reference as stack_doc
from tests.conftest import REPO
from tests.test_stack_input_errors import problems

KEYS = stack_doc.keys()
PAGE = (REPO / REFERENCE).read_text()


def _pattern(path: str) -> re.Pattern:
    """A reference path as a pattern over a stack's concrete paths (`<name>` stands for any key)."""
    return re.compile(re.escape(path).replace(re.escape("<name>"), r"[^.\[]+") + "$")


def test_the_page_is_the_models_own():
    assert stack_doc.with_reference(PAGE) == PAGE, "run `make docs`"


def test_every_key_the_repo_stacks_use_is_in_the_reference():
    def covering(path: str):
        """The reference key of a stack's path: the same path, or a free-form mapping above it (`tags`)."""
        for key in KEYS:
            if _pattern(key.path).match(path):
                return key
        for key in KEYS:
            if key.type.startswith("mapping of") and path.startswith(f"{key.path}."):
                return key
        return None

    used = stack_doc.stack_examples()
    assert len(used) > 60
    assert not [path for path in used if covering(path) is None]
    for path in used:  # and on the page itself
        assert f"**`{covering(path).path}`**" in PAGE


def test_every_key_has_a_type_a_default_a_reader_and_an_example():
    assert len(KEYS) > 250
    for key in KEYS:
        assert key.type and key.default and key.reader, key
        assert key.example or "mapping" in key.type, f"{key.path}: no example (components/stack/reference_examples.yaml)"
        assert key.text, f"{key.path}: no docstring in the code"


@pytest.mark.parametrize("path", sorted(stack_doc.written_examples()))
def test_each_written_example_is_accepted_by_its_keys_type(path):
    field = stack_doc.field_at(path)
    annotation = typing.Annotated[(field.annotation, *field.metadata)] if field.metadata else field.annotation
    value = stack_doc.written_examples()[path]
    try:
        TypeAdapter(annotation).validate_python(value)
    except ValidationError as err:
        pytest.fail(f"{path}: example {value!r} is refused: {err}")
    assert path in {k.path for k in KEYS}, "an example for a key that does not exist"


def test_a_refused_unknown_key_points_at_the_reference_and_lists_what_is_accepted():
    (line,) = problems(lambda c: c["gpu_pools"][0].update(zzz_unknown=1))
    assert f"({REFERENCE} lists every key)" in line
    assert "accepted here: name, vm_size, count" in line
