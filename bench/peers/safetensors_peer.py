#!/usr/bin/env python3
"""bench/peers/safetensors_peer.py FILE [--device D]: safetensors.torch.load_file (PyPI safetensors)."""
import peer_run

args = peer_run.parse_args(__doc__)
peer_run.require_device(args.device)
st = peer_run.import_or_unavailable("safetensors.torch", "safetensors")

clock = peer_run.Clock(args.device)
clock.start()
for tensor in st.load_file(args.file, device=args.device).values():
    clock.tensor(tensor)
clock.finish()
