"""The engine sends every number as a float: the plan records whole numbers as ints once, as it records them, so no
reader normalises them again (and a fraction stays a float)."""

import pulumi

from aks_gpu_inference.planner.engine import program as engine
from tests.conftest import PROJECT


def numbers_program():
    pulumi.CustomResource(
        "test:index:Thing",
        "thing",
        {"count": 2, "ratio": 0.5, "nested": {"sizes": [3, 1.5, {"deep": 40}]}, "key": pulumi.Output.secret(7)},
    )
    pulumi.export("replicas", 2)
    pulumi.export("fit", {"weights_gib": 15.0, "kv_fraction": 0.25, "per_gpu": [1, 2.5]})


def test_recorded_inputs_and_outputs_have_whole_numbers_as_ints_and_secrets_masked():
    run = engine.run_function(numbers_program, PROJECT, "test")
    (thing,) = [r for r in run.resources if r.type == "test:index:Thing"]
    inputs = {k: v for k, v in thing.inputs.items() if not k.startswith("__")}
    assert inputs == {"count": 2, "ratio": 0.5, "nested": {"sizes": [3, 1.5, {"deep": 40}]}, "key": engine.SECRET}
    assert [type(v) for v in (inputs["count"], inputs["nested"]["sizes"][0], inputs["nested"]["sizes"][2]["deep"])] == [int] * 3
    assert type(inputs["ratio"]) is float and type(inputs["nested"]["sizes"][1]) is float
    assert run.outputs == {"replicas": 2, "fit": {"weights_gib": 15, "kv_fraction": 0.25, "per_gpu": [1, 2.5]}}
    assert type(run.outputs["replicas"]) is int and type(run.outputs["fit"]["weights_gib"]) is int
