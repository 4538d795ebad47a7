#!/usr/bin/env python3
"""bench/peers/torch_peer.py FILE [--device D]: torch.load(weights_only=True) of a torch.save zip file."""
import peer_run

args = peer_run.parse_args(__doc__)
peer_run.require_device(args.device)
import torch  # noqa: E402

clock = peer_run.Clock(args.device)
clock.start()
for tensor in torch.load(args.file, map_location=args.device, weights_only=True).values():
    clock.tensor(tensor)
clock.finish()
