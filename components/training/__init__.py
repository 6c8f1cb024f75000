"""Distributed training: a KubeRay RayJob on an RDMA pool, checkpointing to the model store."""

from .._lazy import exporter

_EXPORTS = {
    "DistributedTraining": ".distributed_training",
    "DistributedTrainingArgs": ".distributed_training_args",
    "KubeRayOperatorArgs": ".distributed_training_args",
    "HeadArgs": ".distributed_training_args",
    "TrainingWorkers": ".distributed_training_args",
    "CheckpointStore": ".distributed_training_args",
    "TrainingCost": ".run_cost",
    "training_cost": ".run_cost",
}

__all__ = sorted(_EXPORTS)
__getattr__ = exporter(__name__, _EXPORTS)
