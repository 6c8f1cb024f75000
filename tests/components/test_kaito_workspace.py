"""KaitoWorkspace under mocks: the kaito.sh/v1beta1 Workspace object (fields beside metadata, not
under spec), its replacement behaviour, its outputs, and every input it refuses."""

import pulumi
import pulumi_kubernetes as k8s
import pytest

from aks_gpu_inference.components._base import ComponentInputError, raise_problems, validate_args
from aks_gpu_inference.components.serving.kaito_workspace import (
    GATED_PRESETS,
    PRESETS,
    KaitoWorkspace,
    KaitoWorkspaceArgs,
    kaito_workspace_problems,
)
from aks_gpu_inference.planner.analyzer import analyze
from aks_gpu_inference.planner.engine.program import PlaceholderMocks, RecordingMonitor
from aks_gpu_inference.planner.engine.values import kubernetes_object
from tests.conftest import cluster_context, of_type, one, registered_before_error, run_components

A100 = "Standard_NC24ads_A100_v4"
PHI = {"name": "phi-4-mini", "preset": "phi-4-mini-instruct", "instance_type": A100}
WORKSPACE = "kubernetes:kaito.sh/v1beta1:Workspace"


class OptionsMonitor(RecordingMonitor):
    """Also keeps the replacement options the recording monitor leaves out."""

    def __init__(self):
        super().__init__(PlaceholderMocks())
        self.replacement: dict[str, tuple[list[str], bool]] = {}

    def RegisterResource(self, request):
        self.replacement[request.name] = (list(request.replaceOnChanges), request.deleteBeforeReplace)
        return super().RegisterResource(request)


def build(args=None, monitor=None, in_opts=False):
    """Build one workspace; its provider comes from the cluster context, or with ``in_opts`` from ``opts``."""
    holder = {}

    def program():
        provider = k8s.Provider("k8s", kubeconfig="x")
        cluster = cluster_context(provider=None if in_opts else provider, kaito_enabled=True)
        opts = pulumi.ResourceOptions(provider=provider) if in_opts else None
        workspace = KaitoWorkspace("kaito", args or PHI, opts, cluster=cluster)
        holder["workspace"] = workspace
        pulumi.export("service_name", workspace.service_name)
        pulumi.export("endpoint", workspace.endpoint)

    run = run_components(program, monitor=monitor)
    return holder["workspace"], run


@pytest.fixture(scope="module")
def default_build():
    return build()


def test_workspace_fields_sit_beside_metadata_not_under_spec(default_build):
    _, run = default_build
    workspace = one(run, WORKSPACE)
    assert kubernetes_object(workspace) == {
        "apiVersion": "kaito.sh/v1beta1",
        "kind": "Workspace",
        "metadata": {"name": "phi-4-mini", "namespace": "default"},
        "resource": {
            "count": 1,
            "instanceType": A100,
            "labelSelector": {"matchLabels": {"apps": "phi-4-mini"}},
        },
        "inference": {"preset": {"name": "phi-4-mini-instruct"}},
    }


def test_workspace_goes_through_the_cluster_provider_under_the_component(default_build):
    _, run = default_build
    workspace = one(run, WORKSPACE)
    assert workspace.custom and workspace.is_kubernetes
    assert workspace.parent == one(run, "aks-gpu:index:KaitoWorkspace").urn
    assert workspace.options["provider"] == one(run, "pulumi:providers:kubernetes").urn


def test_a_provider_in_opts_serves_when_the_cluster_has_none():
    _, run = build(in_opts=True)
    assert one(run, WORKSPACE).options["provider"] == one(run, "pulumi:providers:kubernetes").urn


def test_a_provider_in_opts_wins_over_the_clusters():
    def program():
        cluster = cluster_context(provider=k8s.Provider("cluster", kubeconfig="x"), kaito_enabled=True)
        KaitoWorkspace("kaito", PHI, pulumi.ResourceOptions(provider=k8s.Provider("other", kubeconfig="y")), cluster=cluster)

    run = run_components(program)
    providers = {r.name: r.urn for r in of_type(run, "pulumi:providers:kubernetes")}
    assert one(run, WORKSPACE).options["provider"] == providers["other"]


def test_outputs_name_the_service_kaito_creates(default_build):
    workspace, run = default_build
    assert workspace.service_name == "phi-4-mini"
    assert run.outputs == {"service_name": "phi-4-mini", "endpoint": "http://phi-4-mini.default.svc.cluster.local:80/v1"}


def test_immutable_fields_replace_the_workspace_deleting_it_first():
    monitor = OptionsMonitor()
    build(monitor=monitor)
    assert monitor.replacement["kaito-workspace"] == (["resource", "inference"], True)


def test_gated_model_passes_its_access_secret():
    args = {"name": "llama", "preset": "llama-3.1-8b-instruct", "instance_type": A100, "model_access_secret": "hf-token"}
    _, run = build(args)
    inference = one(run, WORKSPACE).inputs["inference"]
    assert inference == {"preset": {"name": "llama-3.1-8b-instruct", "presetOptions": {"modelAccessSecret": "hf-token"}}}


def test_namespace_count_and_labels_are_configurable():
    args = {**PHI, "namespace": "models", "count": 2, "label_selector": {"workload": "kaito-phi"}}
    workspace, run = build(args)
    obj = kubernetes_object(one(run, WORKSPACE))
    assert obj["metadata"] == {"name": "phi-4-mini", "namespace": "models"}
    assert obj["resource"]["count"] == 2
    assert obj["resource"]["labelSelector"] == {"matchLabels": {"workload": "kaito-phi"}}
    assert workspace.endpoint == "http://phi-4-mini.models.svc.cluster.local:80/v1"


@pytest.mark.parametrize("preset", sorted(set(PRESETS) - GATED_PRESETS))
def test_every_ungated_preset_is_accepted(preset):
    _, run = build({"name": "model", "preset": preset, "instance_type": "Standard_NC96ads_A100_v4"})
    assert one(run, WORKSPACE).inputs["inference"]["preset"] == {"name": preset}


@pytest.mark.parametrize(
    "args, kaito_enabled, expected",
    [
        (
            PHI,
            False,
            "cluster.kaito_enabled=False: the cluster does not run the AI toolchain operator (KAITO) add-on; set kaito: true",
        ),
        (
            {**PHI, "preset": "gpt-4"},
            True,
            "preset='gpt-4': not a KAITO preset this component supports; accepted: " + ", ".join(PRESETS),
        ),
        ({**PHI, "preset": "Phi-4"}, True, "preset='Phi-4': not a KAITO preset"),
        ({**PHI, "instance_type": "Standard_NC6s_v3"}, True, "instance_type='Standard_NC6s_v3': Standard_NC6s_v3 was retired on"),
        ({**PHI, "instance_type": "Standard_ND96isr_MI300X_v5"}, True, "has AMD GPUs; KAITO presets request nvidia.com/gpu"),
        (
            {**PHI, "instance_type": "Standard_NV6ads_A10_v5"},
            True,
            "has a fraction of a GPU; KAITO supports whole-GPU sizes only",
        ),
        ({**PHI, "instance_type": "Standard_D4ds_v5"}, True, "'Standard_D4ds_v5' is not a GPU VM size"),
        ({**PHI, "name": "Phi_4"}, True, "name='Phi_4': KAITO workspace names are DNS labels"),
        ({**PHI, "name": "x" * 64}, True, "KAITO workspace names are DNS labels"),
        ({**PHI, "namespace": "Models"}, True, "namespace='Models'"),
        ({**PHI, "count": 0}, True, "count=0: Input should be greater than or equal to 1"),
        ({**PHI, "label_selector": {}}, True, "label_selector={}: give at least one label"),
        ({**PHI, "label_selector": {"kaito.sh/workspace": "x"}}, True, "kaito.sh/ keys belong to KAITO"),
        ({**PHI, "label_selector": {"apps": "-bad"}}, True, "label value '-bad'"),
        ({**PHI, "label_selector": {"bad key": "x"}}, True, "label key 'bad key'"),
        (
            {**PHI, "preset": "llama-3.1-8b-instruct"},
            True,
            "model_access_secret=None: llama-3.1-8b-instruct is a gated Hugging Face model; create a Secret with key HF_TOKEN",
        ),
        ({**PHI, "model_access_secret": "HF_Token"}, True, "model_access_secret='HF_Token': Secret names are DNS subdomains"),
        ({**PHI, "spec": {}}, True, "spec={}: unknown key"),
    ],
)
def test_bad_input_is_refused(args, kaito_enabled, expected):
    """What the constructor checks before it registers anything: the args, then the cluster."""
    with pytest.raises(ComponentInputError, match="KaitoWorkspace 'kaito': invalid arguments") as caught:
        validate_args(KaitoWorkspaceArgs, args, "KaitoWorkspace", "kaito")
        raise_problems("KaitoWorkspace", "kaito", kaito_workspace_problems(cluster_context(kaito_enabled=kaito_enabled)))
    assert expected in str(caught.value)


def test_a_cluster_with_kaito_has_no_problem():
    assert kaito_workspace_problems(cluster_context(kaito_enabled=True)) == []


@pytest.mark.parametrize(
    "args, kaito_enabled",
    [(PHI, False), ({**PHI, "preset": "gpt-4"}, True)],
    ids=["cluster-without-kaito", "unknown-preset"],
)
def test_a_refused_workspace_registers_nothing(args, kaito_enabled):
    def program():
        KaitoWorkspace("kaito", args, cluster=cluster_context(kaito_enabled=kaito_enabled))

    assert registered_before_error(program, ComponentInputError) == []


def test_policy_pack_has_no_mandatory_objection(default_build):
    _, run = default_build
    assert [v for v in analyze(run) if v.mandatory] == []
