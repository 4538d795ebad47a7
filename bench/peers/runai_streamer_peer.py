#!/usr/bin/env python3
"""bench/peers/runai_streamer_peer.py FILE [--device D]: Run:ai's model streamer (PyPI
runai-model-streamer), SafetensorsStreamer: its C++ readers stream the file into host memory;
on a GPU each tensor is then copied to the device as it arrives, as its docs show."""
import peer_run

args = peer_run.parse_args(__doc__)
peer_run.require_device(args.device)
streamer = peer_run.import_or_unavailable("runai_model_streamer", "runai-model-streamer")

clock = peer_run.Clock(args.device)
clock.start()
with streamer.SafetensorsStreamer() as stream:
    stream.stream_file(args.file)
    for _name, tensor in stream.get_tensors():
        # The streamer reuses its buffer for later tensors: a copy keeps this one.
        clock.tensor(tensor.to(args.device, copy=True))
clock.finish()
