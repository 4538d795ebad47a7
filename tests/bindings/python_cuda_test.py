"""tests/bindings/python_cuda_test.py: the Python package on a GPU (issue #6's "CPU and CUDA alike").

On a machine with an NVIDIA GPU, a CUDA build of torch and ringload built with CUDA:
- every tensorizer fixture (the encrypted ones with their key or passphrase) loads with
  device="cuda:0" to its manifest's dtype, shape and sha256, every tensor on cuda:0;
- zero-copy: the tensors are views of the engine's one device allocation, not copies made by
  torch: torch's allocator holds no more memory after the load than before, and a tensor's
  storage starts inside that allocation;
- the tensors outlive the deserializer (the view keeps the device memory alive);
- load_into_module into a module already on cuda:0 fills its own parameters (same data_ptr);
- dtype="float16" on the GPU gives torch's own cast of the CPU load;
- safetensors and torch zip files: load_file, stream_tensors and safe_open (get_tensor,
  get_slice) on cuda:0 give the CPU load's bytes (and upstream safetensors' own cuda load,
  where it is installed), with dtype conversion on the device too;
- the model-level call onto cuda:0 (stream_folder, load_folder of four files read side by
  side, as many as the device's free memory holds) gives every file's tensors.
Elsewhere it prints why it cannot run and exits 77 (ctest: Skipped). Run by ctest (test
`python_cuda`) and by scripts/gpu_check.sh, with PYTHONPATH at <build>/bindings/python.
"""
import hashlib
import json
import os
import sys

DATA = os.environ.get("RINGLOAD_TEST_DATA", os.path.join(os.path.dirname(__file__), "..", "data"))
FIXTURES = os.path.join(DATA, "tensorizer")
SKIP = 77


def skip(reason):
    print(f"SKIPPED: {reason}")
    sys.exit(SKIP)


try:
    import torch
except ImportError:
    skip("torch is not installed")
if not torch.cuda.is_available():
    skip(f"no CUDA device for torch {torch.__version__} (a GPU machine runs this: scripts/gpu_check.sh)")
import ringload  # noqa: E402
from ringload import errors  # noqa: E402

failures = []


def check(condition, what):
    if not condition:
        failures.append(what)
        print(f"FAIL: {what}")


def host_bytes(tensor):
    tensor = tensor.detach().cpu().contiguous()
    return tensor.reshape(-1).view(torch.uint8).numpy().tobytes() if tensor.numel() else b""


def decryption(manifest):
    encryption = manifest.get("encryption")
    if not encryption:
        return None
    if encryption["kind"] == "raw_key":
        return ringload.DecryptionParams.from_key(bytes.fromhex(encryption["key_hex"]))
    return ringload.DecryptionParams.from_string(encryption["passphrase"])


def fixtures():
    index = json.load(open(os.path.join(FIXTURES, "index.json")))
    for entry in index["files"]:
        yield entry["file"], json.load(open(os.path.join(FIXTURES, entry["manifest"])))


def check_fixture(file, manifest):
    path = os.path.join(FIXTURES, file)
    allocated_before = torch.cuda.memory_allocated(0)
    try:
        deserializer = ringload.TensorDeserializer(path, device="cuda:0", encryption=decryption(manifest))
    except errors.DeviceError as error:
        if "without CUDA" in str(error):
            skip(f"ringload was built without CUDA: {error}")
        raise
    with deserializer:
        tensors = deserializer.flat_tensors()
    check(torch.cuda.memory_allocated(0) == allocated_before,
          f"{file}: torch's allocator grew by {torch.cuda.memory_allocated(0) - allocated_before} bytes "
          "(the tensors should be views of ringload's device memory)")
    expected = {".".join(str(c) for c in t["path"]): t for t in manifest["tensors"]}
    check(set(tensors) == set(expected), f"{file}: names {sorted(tensors)} != {sorted(expected)}")
    pointers = []
    for name, tensor in tensors.items():  # the deserializer is closed: the views keep the memory
        want = expected.get(name)
        if want is None:
            continue
        check(tensor.device == torch.device("cuda:0"), f"{file}:{name} is on {tensor.device}")
        check(list(tensor.shape) == want["shape"], f"{file}:{name} shape {list(tensor.shape)} != {want['shape']}")
        if want["dtype"].startswith("torch.") and hasattr(torch, want["dtype"][6:]):
            check(tensor.dtype == getattr(torch, want["dtype"][6:]), f"{file}:{name} dtype {tensor.dtype}")
        digest = hashlib.sha256(host_bytes(tensor)).hexdigest()
        check(digest == want["sha256"], f"{file}:{name} sha256 {digest} != manifest {want['sha256']}")
        if tensor.numel():
            pointers.append(tensor.data_ptr())
    if len(pointers) > 1:
        total = sum(t["byte_length"] for t in manifest["tensors"])
        check(max(pointers) - min(pointers) < total + 64 * len(pointers),
              f"{file}: the tensors are not in one allocation of the load")


def check_module():
    torch.manual_seed(3)
    module = torch.nn.Sequential(torch.nn.Linear(64, 32), torch.nn.LayerNorm(32))
    path = os.path.join(os.environ.get("TMPDIR", "/tmp"), f"ringload-cuda-test-{os.getpid()}.tensors")
    try:
        with ringload.TensorSerializer(path) as writer:
            writer.write_module(module)
        target = torch.nn.Sequential(torch.nn.Linear(64, 32), torch.nn.LayerNorm(32)).to("cuda:0")
        before = {name: t.data_ptr() for name, t in target.state_dict().items()}
        with ringload.TensorDeserializer(path, device="cuda:0", lazy_load=True) as deserializer:
            deserializer.load_into_module(target, verify_hash=True)
        after = {name: t.data_ptr() for name, t in target.state_dict().items()}
        check(after == before, "load_into_module on cuda:0 replaced the module's storage")
        for name, tensor in module.state_dict().items():
            check(torch.equal(target.state_dict()[name].cpu(), tensor), f"module {name} differs after the load")
        with ringload.TensorDeserializer(path, device="cpu") as cpu, \
                ringload.TensorDeserializer(path, device="cuda:0", dtype="float16") as gpu:
            for name, tensor in cpu.flat_tensors().items():
                cast = gpu.flat_tensors()[name]
                check(cast.dtype == torch.float16 and torch.equal(cast.cpu(), tensor.to(torch.float16)),
                      f"dtype=float16 on cuda:0 differs from torch's cast for {name}")
    finally:
        if os.path.exists(path):
            os.remove(path)


def same_tensors(got, want, what, device=None):
    """got (on `device`, where given) holds want's names, dtypes and values."""
    check(set(got) == set(want), f"{what}: names {sorted(got)} != {sorted(want)}")
    for name in set(got) & set(want):
        check(device is None or got[name].device == torch.device(device), f"{what}:{name} on {got[name].device}")
        check(got[name].dtype == want[name].dtype and torch.equal(got[name].cpu(), want[name].cpu()),
              f"{what}:{name} differs from the CPU load")


def check_formats(device):
    """safetensors and torch zip on the device: every reading API against the CPU load."""
    torch.manual_seed(5)
    tensors = {"embed": torch.randn(300, 1000), "norm": torch.rand(1000).to(torch.bfloat16),
               "ids": torch.arange(4097, dtype=torch.int64), "half": torch.randn(64, 33).half(),
               "empty": torch.zeros(0, 8), "big": torch.randn(5, 1 << 20)}  # 20 MiB: several slots
    path = os.path.join(os.environ.get("TMPDIR", "/tmp"), f"ringload-cuda-test-{os.getpid()}.safetensors")
    try:
        ringload.save_file(tensors, path)
        cpu = ringload.load_file(path)
        same_tensors(cpu, tensors, "safetensors on the CPU", "cpu")
        same_tensors(ringload.load_file(path, device=device), tensors, "load_file(safetensors)", device)
        same_tensors(dict(ringload.stream_tensors(path, device=device)), tensors, "stream_tensors(safetensors)",
                     device)
        with ringload.safe_open(path, framework="pt", device=device) as opened:
            same_tensors({name: opened.get_tensor(name) for name in opened.keys()}, tensors, "safe_open", device)
            rows = opened.get_slice("embed")[17:211, 5:900]
            check(rows.device == torch.device(device) and torch.equal(rows.cpu(), tensors["embed"][17:211, 5:900]),
                  "safe_open get_slice on the device")
        cast = ringload.load_file(path, device=device, dtype="float16")
        for name, tensor in tensors.items():
            want = tensor.to(torch.float16) if tensor.is_floating_point() else tensor
            check(cast[name].dtype == want.dtype and torch.equal(cast[name].cpu(), want),
                  f"dtype=float16 of {name} on {device} differs from torch's cast")
        try:
            import safetensors.torch as upstream
        except ImportError:
            print("note: safetensors is not installed: no comparison with its own load")
        else:
            same_tensors(ringload.load_file(path, device=device), upstream.load_file(path, device=device),
                         "load_file against safetensors' own")
    finally:
        os.remove(path)
    checkpoint = os.path.join(DATA, "torch", "checkpoint_misc.pt")
    on_cpu = ringload.load_file(checkpoint)
    same_tensors(ringload.load_file(checkpoint, device=device), on_cpu, "torch zip load_file", device)
    same_tensors(dict(ringload.stream_tensors(checkpoint, device=device)), on_cpu, "torch zip stream_tensors",
                 device)


def check_model_stream(device):
    """The model-level call onto a GPU (vLLM's and SGLang's streamed path): a model's files read
    side by side as many as the device's free memory holds (files_read_at_once with the device),
    every tensor of every file handed over once on the device, equal to each file's CPU load."""
    import tempfile
    from ringload import _ringload
    with tempfile.TemporaryDirectory(prefix="ringload-cuda-model-") as folder:
        files, expected = [], {}
        for k in range(4):
            part = {f"shard{k}.t{j}": torch.randn(256, 1024 + 64 * j) for j in range(6)}
            files.append(os.path.join(folder, f"part-{k}.safetensors"))
            ringload.save_file(part, files[-1])
            expected.update(part)
        at_once = _ringload.files_read_at_once(files, False, device)
        check(1 <= at_once <= max(1, len(os.sched_getaffinity(0))), f"files_read_at_once on {device}: {at_once}")
        streamed = dict(ringload.stream_folder(files, device=device))
        check(all(tensor.device == torch.device(device) for tensor in streamed.values()),
              "stream_folder: every tensor on the device")
        same_tensors({name: tensor.cpu() for name, tensor in streamed.items()}, expected,
                     "stream_folder of 4 files onto the device")
        same_tensors({name: tensor.cpu() for name, tensor in ringload.load_folder(files, device=device).items()},
                     expected, "load_folder of 4 files onto the device")


if __name__ == "__main__":
    for fixture_file, fixture_manifest in fixtures():
        check_fixture(fixture_file, fixture_manifest)
    check_module()
    check_formats("cuda:0")
    check_model_stream("cuda:0")
    print(f"{'FAILED' if failures else 'passed'}: {len(failures)} failures")
    sys.exit(1 if failures else 0)
