"""Time an all-reduce of a large buffer across every rank, report its bus bandwidth as nccl-tests defines it
(algorithm bandwidth x 2(n-1)/n), and count the elements that come back wrong."""

import os
import time

import torch
import torch.distributed as dist

dist.init_process_group("nccl")
rank, world = dist.get_rank(), dist.get_world_size()
torch.cuda.set_device(int(os.environ["LOCAL_RANK"]))
elements = 1024 * 1024 * 1024  # 4 GiB of float32, in the 512 MiB-8 GiB range of published NVL72 runs
data = torch.full((elements,), float(rank + 1), device="cuda")
dist.all_reduce(data)  # warm-up: connections and NVLS buffers are set up on first use
iterations = 10
torch.cuda.synchronize()
start = time.perf_counter()
for _ in range(iterations):
    data.fill_(float(rank + 1))
    dist.all_reduce(data)
torch.cuda.synchronize()
seconds = (time.perf_counter() - start) / iterations
expected = world * (world + 1) / 2
wrong = torch.tensor([int((data != expected).sum().item())], device="cuda")
dist.all_reduce(wrong)
busbw = elements * 4 / seconds / 1e9 * 2 * (world - 1) / world
if rank == 0:
    print(f"busbw GB/s: {busbw:.1f}; world size: {world}; wrong values: {int(wrong.item())}", flush=True)
dist.destroy_process_group()
