"""The stack program: typed config -> components -> exports. All logic lives in ``components``."""

from aks_gpu_inference.components.stack.program import run_stack

run_stack()
