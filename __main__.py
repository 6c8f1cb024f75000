"""The stack program: typed config -> components -> exports. All logic lives in ``components``."""

from components.stack.program import build_stack, load_stack_config

build_stack(load_stack_config())
