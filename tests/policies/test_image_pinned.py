"""image-pinned: container images carry a version tag (not latest nor another floating tag), or a digest."""

from aks_gpu_inference.policies.manifests import UNKNOWN
from aks_gpu_inference.policies.rules.image_pinned import RULE

from ._fixtures import WORKLOAD_KINDS, Case, container, table_tests, workload

DIGEST = "sha256:" + "0" * 64


def image(ref, list_name="containers"):
    """A workload of each kind whose ``list_name`` has one container running ``ref``; the others are pinned."""
    spec = {"containers": [container()], list_name: [container("c", image=ref)]}
    return lambda kind: [workload(kind, spec)]


def problem(ref, what, where="containers[0] c"):
    return f"{{label}} {{tpl}}{where}: image {ref!r} {what}; pin a version tag or a digest"


CASES = [
    Case("version tag", image("vllm/vllm-openai:v0.10.1"), over=WORKLOAD_KINDS),
    Case("digest", image(f"vllm/vllm-openai@{DIGEST}"), over=WORKLOAD_KINDS),
    Case("latest tag with a digest", image(f"vllm/vllm-openai:latest@{DIGEST}"), over=WORKLOAD_KINDS),
    Case("registry with a port and a tag", image("myacr.azurecr.io:5000/team/vllm:1.2"), over=WORKLOAD_KINDS),
    Case(
        "no tag",
        image("vllm/vllm-openai"),
        per_template=(problem("vllm/vllm-openai", "has no tag (means latest)"),),
        over=WORKLOAD_KINDS,
    ),
    Case(
        "latest tag",
        image("vllm/vllm-openai:latest"),
        per_template=(problem("vllm/vllm-openai:latest", "uses the latest tag"),),
        over=WORKLOAD_KINDS,
    ),
    *(
        Case(
            f"floating tag {tag}",
            image(f"vllm/vllm-openai:{tag}"),
            per_template=(problem(f"vllm/vllm-openai:{tag}", f"uses the floating tag {tag!r}, which moves to each new build"),),
            over=("Deployment", "CronJob"),
        )
        for tag in ("stable", "nightly", "main", "edge", "dev", "latest-gpu")
    ),
    *(
        Case(f"dated or versioned tag {tag}", image(f"vllm/vllm-openai:{tag}"), over=("Deployment",))
        for tag in ("nightly-2025-06-01", "main-3f2a1c9", "v0.10.1-rc1", "2025-05-27-v1")
    ),
    Case(
        "registry port is not a tag",
        image("myacr.azurecr.io:5000/team/vllm"),
        per_template=(problem("myacr.azurecr.io:5000/team/vllm", "has no tag (means latest)"),),
        over=WORKLOAD_KINDS,
    ),
    Case(
        "initContainer",
        image("busybox", "initContainers"),
        per_template=(problem("busybox", "has no tag (means latest)", "initContainers[0] c"),),
        over=WORKLOAD_KINDS,
    ),
    Case(
        "ephemeralContainer",
        image("busybox:latest", "ephemeralContainers"),
        per_template=(problem("busybox:latest", "uses the latest tag", "ephemeralContainers[0] c"),),
        over=WORKLOAD_KINDS,
    ),
    Case(
        "mandatory override",
        image("busybox"),
        per_template=(problem("busybox", "has no tag (means latest)"),),
        level="mandatory",
        over=("Deployment",),
    ),
    Case("disabled", image("busybox"), level="disabled", over=("Deployment",)),
    # unknown images are skipped
    Case("unknown image", image(UNKNOWN), over=WORKLOAD_KINDS),
    Case("unknown container", lambda kind: [workload(kind, {"containers": [UNKNOWN]})], over=WORKLOAD_KINDS),
    Case("unknown pod spec", lambda kind: [workload(kind, UNKNOWN)], over=WORKLOAD_KINDS),
]


test_rule, test_through_analyzer, test_table_covers_the_rule = table_tests(RULE, CASES)
