import sys

from aks_gpu_inference.planner.cli import main

sys.exit(main())
