"""aks-gpu-inference components: Pulumi ComponentResources for GPU inference on AKS.

The code lives in domain packages (``core``, ``azure``, ``gpu``, ``serving``, ``gateway``, ``training``, ``stack``);
every public name is re-exported here, so ``from aks_gpu_inference.components import VllmService`` works as well as
``from aks_gpu_inference.components.serving import VllmService``. Exports are loaded on first use, so importing a
fact module (``from aks_gpu_inference.components.core import catalog``: the command line's scan and fit paths) does
not import the Pulumi SDKs.
"""

from importlib import import_module

from ._lazy import exporter

DOMAINS = ("core", "azure", "gpu", "serving", "gateway", "training", "stack")

_EXPORTS = {
    "AzureScope": ".context",
    "ClusterContext": ".context",
    **{
        name: f".{domain}{module}"
        for domain in DOMAINS
        for name, module in getattr(import_module(f".{domain}", __name__), "_EXPORTS", {}).items()
    },
}

__all__ = sorted(_EXPORTS)
__getattr__ = exporter(__name__, _EXPORTS)
