"""Read a GPU tensor from the target pod into the initiator with NIXL and count wrong elements."""

import sys

import torch
from nixl._api import nixl_agent, nixl_agent_config

PORT = 5555
mode = sys.argv[1]
torch.set_default_device("cuda:0")
agent = nixl_agent(mode, nixl_agent_config(True, True, PORT if mode == "target" else 0))
generator = torch.Generator(device="cuda:0").manual_seed(20261130)
expected = torch.rand((64, 1024 * 1024), generator=generator)
tensor = expected.clone() if mode == "target" else torch.zeros_like(expected)
registered = agent.register_memory(tensor)
rows = agent.get_xfer_descs([tensor[i] for i in range(tensor.shape[0])])

if mode == "target":
    while not agent.check_remote_metadata("initiator"):
        pass
    agent.send_notif("initiator", agent.get_serialized_descs(rows))
    while b"done" not in agent.get_new_notifs().get("initiator", []):
        pass
    print("target: transfer served", flush=True)
else:
    peer = sys.argv[2]
    agent.fetch_remote_metadata("target", peer, PORT)
    agent.send_local_metadata(peer, PORT)
    notifs = agent.get_new_notifs()
    while "target" not in notifs:
        notifs = agent.get_new_notifs()
    remote = agent.deserialize_descs(notifs["target"][0])
    while not agent.check_remote_metadata("target"):
        pass
    handle = agent.initialize_xfer("READ", rows, remote, "target", "done")
    state = agent.transfer(handle)
    while state not in ("DONE", "ERR"):
        state = agent.check_xfer_state(handle)
    if state == "ERR":
        sys.exit("transfer failed")
    print(f"initiator: wrong values: {int((tensor != expected).sum().item())}", flush=True)
    agent.release_xfer_handle(handle)
agent.deregister_memory(registered)
