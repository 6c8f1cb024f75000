"""Mocks for the Azure component tests: the planner's placeholders plus what Azure computes on
identities and storage accounts, so that a test can follow those outputs into their consumers."""

from __future__ import annotations

import pulumi

from aks_gpu_inference.planner.engine.program import PlaceholderMocks, ProgramRun, RecordingMonitor, placeholder
from tests.conftest import run_components


class AzureOutputMocks(PlaceholderMocks):
    """The planner's mocks plus placeholders for what Azure computes on identities and storage
    accounts, and a record of every invoke."""

    def __init__(self):
        self.calls: list[tuple[str, dict]] = []

    def new_resource(self, args: pulumi.runtime.MockResourceArgs):
        resource_id, state = super().new_resource(args)
        if args.typ == "azure-native:managedidentity:UserAssignedIdentity":
            state["clientId"] = placeholder(f"{args.name}.clientId")
            state["principalId"] = placeholder(f"{args.name}.principalId")
        if args.typ == "azure-native:storage:StorageAccount":
            state["primaryEndpoints"] = {"blob": placeholder(f"{args.name}.blob")}
        return resource_id, state

    def call(self, args: pulumi.runtime.MockCallArgs):
        self.calls.append((args.token, dict(args.args)))
        if args.token == "azure-native:storage:getStorageAccount":
            name = args.args["accountName"]
            return {"name": name, "primaryEndpoints": {"blob": f"https://{name}.blob.core.windows.net/"}}
        return super().call(args)


def run_with_outputs(program) -> tuple[ProgramRun, AzureOutputMocks]:
    """Run ``program`` under ``AzureOutputMocks``; return the run and the mocks (for invoke calls)."""
    mocks = AzureOutputMocks()
    return run_components(program, monitor=RecordingMonitor(mocks)), mocks
