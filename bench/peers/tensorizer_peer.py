#!/usr/bin/env python3
"""bench/peers/tensorizer_peer.py FILE [--device D]: CoreWeave tensorizer's TensorDeserializer
(PyPI tensorizer), its default readers, without hash checks (ringload's load checks none either)."""
import peer_run

args = peer_run.parse_args(__doc__)
peer_run.require_device(args.device)
tensorizer = peer_run.import_or_unavailable("tensorizer", "tensorizer")

clock = peer_run.Clock(args.device)
clock.start()
deserializer = tensorizer.TensorDeserializer(args.file, device=args.device, lazy_load=True)
for tensor in deserializer.values():
    clock.tensor(tensor)
clock.finish()
deserializer.close()
