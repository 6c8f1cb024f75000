"""The stack program: typed config -> components -> exports. All logic lives in ``components``."""

from components.stack.program import run_stack

run_stack()
