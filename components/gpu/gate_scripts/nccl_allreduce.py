"""All-reduce a known tensor across every rank and count the elements that come back wrong."""

import os

import torch
import torch.distributed as dist

dist.init_process_group("nccl")
rank, world = dist.get_rank(), dist.get_world_size()
torch.cuda.set_device(int(os.environ["LOCAL_RANK"]))
elements = 64 * 1024 * 1024  # 256 MiB of float32: large enough to take the network path
for _ in range(5):
    data = torch.full((elements,), float(rank + 1), device="cuda")
    dist.all_reduce(data)
expected = world * (world + 1) / 2
wrong = int((data != expected).sum().item())
total = torch.tensor([wrong], device="cuda")
dist.all_reduce(total)
if rank == 0:
    print(f"world size: {world}; wrong values: {int(total.item())}", flush=True)
dist.destroy_process_group()
