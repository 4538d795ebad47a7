"""Read once per process group (issue #26): ranks started locally with gloo on the CPU.

Every rank's tensors (sha256 of each tensor's bytes, with its shape and dtype) must equal the
file's tensors as the format's own library reads them: PyPI safetensors, torch.load (weights_only)
and the real tensorizer (which also decrypts the encrypted file), converted by torch where a case
asks for a dtype. The bytes read summed over the ranks must equal what one rank alone reads, no
rank reads more than its share plus one round, and a rank that cannot read (a wrong key) makes
every rank fail with one error naming it, within the collectives' timeout.

RINGLOAD_DISTRIBUTED_DEVICE=cuda runs the same cases on GPUs (scripts/gpu_check.sh): rank r on
cuda:(r mod the GPU count), over NCCL where every rank has a GPU of its own, else over gloo
(which takes CUDA tensors too), so one GPU checks the device path of the exchange.
"""
import datetime
import hashlib
import json
import os
import shutil
import sys
import tempfile
import time

import pytest

torch = pytest.importorskip("torch")
dist = pytest.importorskip("torch.distributed")
mp = pytest.importorskip("torch.multiprocessing")
safetensors_torch = pytest.importorskip("safetensors.torch")

import tensorizer  # noqa: E402
import tensorizer.serialization  # noqa: E402

import ringload  # noqa: E402  (spawned ranks find it through PYTHONPATH too)

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "support"))

if not dist.is_available() or not dist.is_gloo_available():
    pytest.skip("torch.distributed with gloo is not available in this torch", allow_module_level=True)


DEVICE = os.environ.get("RINGLOAD_DISTRIBUTED_DEVICE", "cpu")

# How ranks start. On the CPU: forked from a fork server that has imported torch, safetensors,
# tensorizer, ringload and this module once, where "spawn" imported them again in each of the ~30
# ranks of a run (seconds of CPU each). A rank still begins as a new process of its own: it exits,
# dies (os._exit) and is killed like a spawned one, and it takes the parent's environment as it is
# when the rank starts (run_ranks passes it; a forked rank would otherwise have the server's).
# On CUDA the ranks are spawned: a process forked after CUDA is initialised cannot use CUDA, and
# while the server itself never touches CUDA (importing torch does not initialise it), nothing here
# checks that a CUDA build of ringload does not when it is imported; spawning costs time only there.
START_METHOD = "spawn" if DEVICE == "cuda" else "forkserver"
PRELOADED = ["torch", "torch.distributed", "safetensors.torch", "tensorizer", "tensorizer.serialization",
             "ringload", __name__]


def rank_device(rank: int) -> str:
    return f"cuda:{rank % torch.cuda.device_count()}" if DEVICE == "cuda" else DEVICE


def backend(world: int) -> str:
    return "nccl" if DEVICE == "cuda" and torch.cuda.device_count() >= world else "gloo"


def digest(tensor) -> str:
    raw = tensor.detach().cpu().contiguous().reshape(-1).view(torch.uint8).numpy().tobytes() if tensor.numel() else b""
    return hashlib.sha256(raw + str((tuple(tensor.shape), tensor.dtype)).encode()).hexdigest()


def digests(tensors: dict) -> dict:
    return {name: digest(tensor) for name, tensor in tensors.items()}


def state(seed=3):
    generator = torch.Generator().manual_seed(seed)
    tensors = {f"layers.{i}.weight": torch.randn(48 + i, 256, generator=generator) for i in range(9)}
    tensors["huge"] = torch.randn(1000, 300, generator=generator)  # split between ranks by rows
    tensors["embed"] = torch.randn(7, 5, generator=generator).half()
    tensors["ids"] = torch.arange(13)
    tensors["scalar"] = torch.tensor(2.5)
    tensors["empty"] = torch.zeros(0, 3)
    tensors["row"] = torch.randn(1, 33, generator=generator)
    return tensors


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    root = tmp_path_factory.mktemp("distributed")
    tensors = state()
    paths = {"safetensors": str(root / "m.safetensors"), "torch": str(root / "m.pt"),
             "tensorizer": str(root / "m.tensors"), "encrypted": str(root / "e.tensors"),
             "key": str(root / "key"), "wrong_key": str(root / "wrong_key")}
    safetensors_torch.save_file(tensors, paths["safetensors"])
    base = torch.randn(32, 48, generator=torch.Generator().manual_seed(9))
    torch.save({**tensors, "view.rows": base[4:20], "view.t": base.t()}, paths["torch"])
    with ringload.TensorSerializer(paths["tensorizer"]) as writer:
        writer.write_state_dict(tensors)
    key = bytes(range(32))
    with open(paths["key"], "wb") as f:
        f.write(key)
    with open(paths["wrong_key"], "wb") as f:
        f.write(bytes(32))
    with ringload.TensorSerializer(paths["encrypted"], encryption=ringload.EncryptionParams(key)) as writer:
        writer.write_state_dict(tensors)
    return paths


def _options(case: dict, rank: int = 0) -> dict:
    options = {"device": rank_device(rank)}
    if case.get("key"):
        with open(case["key"], "rb") as f:
            options["encryption"] = ringload.DecryptionParams.from_key(f.read())
    if case.get("verify"):
        options["verify_hash"] = True
    if case.get("dtype"):
        options["dtype"] = getattr(torch, case["dtype"])
    for name in ("s3_endpoint", "gcs_endpoint"):  # the option table's keywords, passed as they are
        if case.get(name):
            options[name] = case[name]
    if case.get("gcs_endpoint"):
        options["gcs_anonymous"] = True  # the emulator checks no token
    return options


def _rank_main(rank: int, world: int, init_file: str, case: dict, out_dir: str, environment: dict):
    os.environ.clear()  # the parent's environment, as a spawned rank inherits it
    os.environ.update(environment)
    if case.get("round_bytes"):  # many rounds from a small file
        os.environ["RINGLOAD_GROUP_ROUND_BYTES"] = str(case["round_bytes"])
    if DEVICE == "cuda":
        torch.cuda.set_device(rank_device(rank))
    dist.init_process_group(backend(world), init_method=f"file://{init_file}", rank=rank, world_size=world,
                            timeout=datetime.timedelta(seconds=case.get("timeout", 60)))
    result = {"rank": rank}
    if rank in case.get("die", ()):
        os._exit(3)  # a rank lost before the load: the others must not wait for it forever
    try:
        options = _options(case, rank)
        if case.get("rank_key") and rank in case["rank_key"]:  # this rank alone gets another key
            with open(case["rank_key"][rank], "rb") as f:
                options["encryption"] = ringload.DecryptionParams.from_key(f.read())
        if case.get("stream"):  # the streamed iterator: each tensor once, as its round lands
            streamed = {}
            for name, tensor in ringload.stream_tensors(case["path"], process_group=dist.group.WORLD, **options):
                assert name not in streamed, name
                streamed[name] = tensor.clone()
            result["digests"] = digests(streamed)
        else:
            with ringload.TensorDeserializer(case["path"], process_group=dist.group.WORLD, **options) as loaded:
                tensors = loaded.flat_tensors()
                result["digests"] = digests(tensors)
                result["bytes_read"] = loaded.total_bytes_read
    except Exception as error:  # the parent checks what each rank raised
        result["error"] = str(error)
    with open(os.path.join(out_dir, f"rank{rank}.json"), "w") as f:
        json.dump(result, f)
    dist.destroy_process_group()


@pytest.fixture(scope="module", autouse=True)
def rank_starter():
    """The fork server (started by the first rank) preloads PRELOADED; it stops with this module,
    which leaves no process behind for the rest of the session."""
    if START_METHOD != "forkserver":
        yield
        return
    from multiprocessing import forkserver
    server = forkserver._forkserver  # private: the only handle there is to stop it
    started_here, previous = server._forkserver_pid is None, server._preload_modules
    mp.get_context("forkserver").set_forkserver_preload(PRELOADED)
    try:
        yield
    finally:
        forkserver.set_forkserver_preload(previous)  # for any later user in the session
        if started_here and hasattr(server, "_stop"):
            server._stop()  # closes its "alive" pipe and waits for it to exit


def run_ranks(world: int, case: dict, timeout: float = 120, every_rank_reports: bool = True) -> list:
    """Each rank's result (None for a rank that ended without one, where that is allowed). A rank
    still running `timeout` seconds after the start fails the test ("a rank hung") and is killed."""
    with tempfile.TemporaryDirectory(prefix="ringload-dist-") as folder:
        init_file = os.path.join(folder, "init")
        context = mp.get_context(START_METHOD)
        processes = [context.Process(target=_rank_main, args=(r, world, init_file, case, folder, dict(os.environ)))
                     for r in range(world)]
        try:
            for process in processes:
                process.start()
            deadline = time.monotonic() + timeout
            for process in processes:
                process.join(max(0.0, deadline - time.monotonic()))
                assert process.exitcode is not None, "a rank hung"
        finally:  # nothing outlives the call, whatever failed
            for process in processes:
                if process.is_alive():
                    process.kill()
                    process.join()
        results = []
        for r in range(world):
            path = os.path.join(folder, f"rank{r}.json")
            if not os.path.exists(path):
                assert not every_rank_reports, f"rank {r} ended without a result (exit code {processes[r].exitcode})"
                results.append(None)
                continue
            with open(path) as f:
                results.append(json.load(f))
        return results


def reference(path: str, key: str = "", dtype: str = "") -> dict:
    """The digests every rank must get for the local file `path`: its tensors as the format's own
    library reads them (the real tensorizer with the key in the file `key`), floating ones
    converted to `dtype` by torch."""
    if path.endswith(".safetensors"):
        tensors = safetensors_torch.load_file(path)
    elif path.endswith(".pt"):
        tensors = torch.load(path, weights_only=True)
    else:
        options = {}
        if key:
            with open(key, "rb") as f:
                options["encryption"] = tensorizer.serialization.DecryptionParams.from_key(f.read())
        with tensorizer.TensorDeserializer(path, device="cpu", **options) as theirs:
            tensors = {name: theirs[name].detach().clone() for name in theirs.keys()}
    if dtype:
        tensors = {name: tensor.to(getattr(torch, dtype)) if tensor.is_floating_point() else tensor
                   for name, tensor in tensors.items()}
    return digests(tensors)


def expected_for(case: dict) -> dict:
    return reference(case["path"], case.get("key", ""), case.get("dtype", ""))


@pytest.mark.parametrize("world", [2, 4])
@pytest.mark.parametrize("fmt", ["safetensors", "torch", "tensorizer"])
def test_every_rank_gets_what_one_process_loads(files, fmt, world):
    case = {"path": files[fmt], "round_bytes": 64 << 10 if world == 4 else 0}
    expected = expected_for(case)
    alone = run_ranks(1, case)[0]
    assert "error" not in alone, alone
    assert alone["digests"] == expected
    results = run_ranks(world, case)
    for result in results:
        assert "error" not in result, result
        assert result["digests"] == expected, f"rank {result['rank']}"
    read = [result["bytes_read"] for result in results]
    if fmt == "safetensors":
        assert sum(read) == alone["bytes_read"], read
    elif fmt == "tensorizer":  # headers aside: a slice reads a record's data, not its header
        with ringload.TensorDeserializer(case["path"], lazy_load=True) as index:
            assert index.total_tensor_bytes <= sum(read) <= alone["bytes_read"], read
    # (torch zip tensors may share a storage that two ranks then both read)
    share = alone["bytes_read"] / world
    assert max(read) <= share + 64 * 1024, (read, share)  # within a few rows of an even split


def test_verified_converted_encrypted_and_streamed_loads_match(files):
    cases = [{"path": files["tensorizer"], "verify": True}, {"path": files["safetensors"], "dtype": "float16"},
             {"path": files["encrypted"], "key": files["key"]}, {"path": files["torch"], "stream": True},
             {"path": files["safetensors"], "stream": True, "round_bytes": 100 << 10}]
    for case in cases:
        expected = expected_for(case)
        for result in run_ranks(2, case):
            assert "error" not in result, (case, result)
            assert result["digests"] == expected, (case, result["rank"])


def test_a_rank_that_cannot_read_fails_every_rank_with_one_error(files):
    case = {"path": files["encrypted"], "key": files["key"], "rank_key": {1: files["wrong_key"]},
            "round_bytes": 64 << 10}
    results = run_ranks(3, case)
    for result in results:
        assert "digests" not in result, f"rank {result['rank']} returned a model"
        assert "rank 1 of 3 could not read its share" in result["error"], result["error"]


def test_a_rank_that_dies_fails_the_others_within_the_timeout(files):
    case = {"path": files["safetensors"], "die": [1], "timeout": 20}
    started = time.monotonic()
    results = run_ranks(3, case, every_rank_reports=False)
    assert results[1] is None
    for r in (0, 2):
        assert "digests" not in results[r], f"rank {r} returned a model"
        assert "a rank died or stopped answering" in results[r]["error"], results[r]["error"]
    assert time.monotonic() - started < 90  # a hang guard: the collectives' 20 s timeout, with room to spare


@pytest.fixture(scope="module")
def remote_files(files):
    """The same files from a real nginx (HTTP/1.1), a real S3 server (moto) and a real GCS
    emulator (fake-gcs-server)."""
    from gcs_server import FakeGcsServer
    from nginx import Nginx
    from s3_server import MotoServer
    # Not under pytest's tmp_path, whose parent only its owner may enter: nginx's workers may
    # run as another user.
    root = tempfile.mkdtemp(prefix="ringload-dist-http-")
    os.chmod(root, 0o755)
    names = {"safetensors": "m.safetensors", "torch": "m.pt", "tensorizer": "m.tensors"}
    for fmt, name in names.items():
        shutil.copy(files[fmt], os.path.join(root, name))
        os.chmod(os.path.join(root, name), 0o644)
    with Nginx(root) as nginx, MotoServer() as s3, FakeGcsServer() as gcs:
        admin = s3.client()
        admin.create_bucket(Bucket="models")
        gcs.create_bucket("models")
        for name in names.values():
            admin.upload_file(os.path.join(root, name), "models", name)
            gcs.upload("models", name, os.path.join(root, name))
        yield {"http": {fmt: f"{nginx.http_url}/{name}" for fmt, name in names.items()},
               "s3": {fmt: f"s3://models/{name}" for fmt, name in names.items()}, "s3_endpoint": s3.url,
               "gs": {fmt: f"gs://models/{name}" for fmt, name in names.items()}, "gcs_endpoint": gcs.url}
    shutil.rmtree(root, ignore_errors=True)


@pytest.mark.parametrize("where", ["http", "s3", "gs"])
def test_over_http_and_s3_every_rank_gets_what_one_process_loads(remote_files, files, where, monkeypatch):
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "admin")  # run_ranks passes the environment to the ranks
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "admin")
    monkeypatch.setenv("AWS_REGION", "us-east-1")
    for fmt in ("safetensors", "torch", "tensorizer"):
        expected = reference(files[fmt])
        case = {"path": remote_files[where][fmt], "s3_endpoint": remote_files["s3_endpoint"] if where == "s3" else "",
                "gcs_endpoint": remote_files["gcs_endpoint"] if where == "gs" else ""}
        results = run_ranks(2, case)
        for result in results:
            assert "error" not in result, (fmt, result)
            assert result["digests"] == expected, (fmt, result["rank"])
        if fmt == "safetensors":
            alone = run_ranks(1, case)[0]
            assert sum(result["bytes_read"] for result in results) == alone["bytes_read"]
