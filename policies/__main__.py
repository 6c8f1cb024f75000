"""Builds the aks-gpu-guardrails pack. Only this: PolicyPack() serves gRPC and never returns."""

from pulumi_policy import EnforcementLevel, PolicyPack, ReportViolation, ResourceValidationArgs, ResourceValidationPolicy

from policies.rules import node_os_upgrade_channel


def _node_os_upgrade_channel(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
    if args.resource_type.startswith(node_os_upgrade_channel.MANAGED_CLUSTER):
        for message in node_os_upgrade_channel.violations(args.props):
            report_violation(message)


PolicyPack(
    name="aks-gpu-guardrails",
    enforcement_level=EnforcementLevel.MANDATORY,
    policies=[
        ResourceValidationPolicy(
            name=node_os_upgrade_channel.NAME,
            description="AKS clusters use the NodeImage node OS upgrade channel (kernel and GPU driver upgrade together).",
            validate=_node_os_upgrade_channel,
        )
    ],
)
