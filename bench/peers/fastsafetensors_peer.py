#!/usr/bin/env python3
"""bench/peers/fastsafetensors_peer.py FILE [--device D]: IBM's fastsafetensors (PyPI), the
SafeTensorsFileLoader with one process group. GPUDirect Storage is not used (nogds=True): it
needs the nvidia-fs driver, which no machine here has; on a GPU the file goes through pinned
host memory to the device, on the CPU into host memory."""
import peer_run

args = peer_run.parse_args(__doc__)
peer_run.require_device(args.device)
fst = peer_run.import_or_unavailable("fastsafetensors", "fastsafetensors")

clock = peer_run.Clock(args.device)
clock.start()
loader = fst.SafeTensorsFileLoader(fst.SingleGroup(), device=args.device, nogds=True)
loader.add_filenames({0: [args.file]})
files = loader.copy_files_to_device()
for name in files.key_to_rank_lidx:
    clock.tensor(files.get_tensor(name))
clock.finish()
files.close()
loader.close()
