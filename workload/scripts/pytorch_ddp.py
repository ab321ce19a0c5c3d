#!/usr/bin/python3
"""A small PyTorch DistributedDataParallel training job, the pytorch-ddp workload's probe.

One process per rank, CPU only, gloo backend: the same code path (DDP's bucketed gradient
allreduce over gloo's TCP pairs) that a real data-parallel job takes, without a GPU. Rendezvous is
torch's env:// (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT), which fabric-chaos sets per rank.

Every training step prints one JSON line on stdout, flushed at once:
  {"step": 12, "t_start": 8123.456789, "duration_ms": 183.2, "bytes": 2626048}
t_start is time.monotonic() (CLOCK_MONOTONIC, the clock fabric-chaos keeps its samples in),
duration_ms covers forward, backward (which waits for the gradient allreduce) and the optimiser
step, and bytes is the size of the gradients DDP allreduced. With --log FILE the script also
writes its own CSV of the same steps (step,t_start,duration_ms; "{rank}" in FILE becomes the
rank), a record independent of the line fabric-chaos parsed. SIGTERM or SIGINT ends it after the current step, exit code 0; a gloo
error (a peer gone, a timeout) ends it with the error on stderr and exit code 1.
Print this file with `fabric-chaos workload-script pytorch-ddp`.
"""

import argparse
import datetime
import json
import os
import signal
import sys
import time
import traceback


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, default=0, help="stop after this many steps (0: until SIGTERM)")
    p.add_argument("--inputs", type=int, default=512, help="input features")
    p.add_argument("--hidden", type=int, default=1024, help="hidden layer width")
    p.add_argument("--outputs", type=int, default=128, help="output features")
    p.add_argument("--batch", type=int, default=32, help="samples per rank per step")
    p.add_argument("--timeout-s", type=float, default=1800.0,
                   help="init_process_group timeout: how long a collective may wait (torch: 30 min)")
    p.add_argument("--threads", type=int, default=1, help="torch intra-op threads per rank")
    p.add_argument("--log", default="",
                   help="also write step,t_start,duration_ms to this CSV ({rank}: the rank)")
    return p.parse_args()


def main():
    args = parse_args()
    stopping = {"now": False}

    def request_stop(signum, frame):  # noqa: ARG001 - signal handler signature
        stopping["now"] = True

    signal.signal(signal.SIGTERM, request_stop)
    signal.signal(signal.SIGINT, request_stop)

    import torch  # imported after the signal handlers: the import alone takes seconds
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel

    torch.set_num_threads(args.threads)
    rank = int(os.environ["RANK"])
    world = int(os.environ["WORLD_SIZE"])
    dist.init_process_group("gloo", rank=rank, world_size=world,
                            timeout=datetime.timedelta(seconds=args.timeout_s))
    torch.manual_seed(1234)  # every rank starts from the same weights, as DDP expects anyway
    model = torch.nn.Sequential(
        torch.nn.Linear(args.inputs, args.hidden),
        torch.nn.ReLU(),
        torch.nn.Linear(args.hidden, args.outputs),
    )
    ddp = DistributedDataParallel(model)
    gradient_bytes = sum(p.numel() * p.element_size() for p in model.parameters())
    optimiser = torch.optim.SGD(ddp.parameters(), lr=0.01)
    loss_fn = torch.nn.MSELoss()
    generator = torch.Generator().manual_seed(rank)
    log = open(args.log.replace("{rank}", str(rank)), "w", buffering=1) if args.log else None
    if log:
        log.write("step,t_start,duration_ms\n")

    step = 0
    while not stopping["now"] and (args.steps == 0 or step < args.steps):
        inputs = torch.randn(args.batch, args.inputs, generator=generator)
        targets = torch.randn(args.batch, args.outputs, generator=generator)
        t_start = time.monotonic()
        optimiser.zero_grad()
        loss = loss_fn(ddp(inputs), targets)
        loss.backward()  # DDP's allreduce of the gradient buckets completes inside backward
        optimiser.step()
        duration_ms = (time.monotonic() - t_start) * 1000.0
        print(json.dumps({"step": step, "t_start": round(t_start, 6),
                          "duration_ms": round(duration_ms, 3), "bytes": gradient_bytes}),
              flush=True)
        if log:
            log.write(f"{step},{t_start:.6f},{duration_ms:.3f}\n")
        step += 1
    if log:
        log.close()
    # No destroy_process_group: with a peer gone it can block, and exiting closes gloo's pairs.
    sys.stdout.flush()
    os._exit(0)


if __name__ == "__main__":
    try:
        main()
    except Exception as error:  # a gloo timeout or a lost peer: say why, then fail the rank
        traceback.print_exc()
        print(f"pytorch-ddp: {type(error).__name__}: {error}", file=sys.stderr, flush=True)
        sys.stderr.flush()
        os._exit(1)
