"""tests/bindings/parameter_group_test.py: two tensor-parallel ranks (torch.distributed, gloo)
reading a checkpoint once between them, straight into their own parameters
(ringload.params.load's group, ringload.params.group). The real vLLM case (TP=2 with
read_once) is in vllm_test.py.

Each rank's model is what a tensor-parallel server allocates for it: a vocabulary-parallel
embedding and fused q/k/v (its rows), a row-parallel weight (its columns), a replicated norm,
and a loader that computes (w * 2). The reference is the same model loaded by the same
load_weights from safetensors' own load_file. Checked per rank: every parameter equals the
reference and none was replaced (same data_ptr; map_files maps whole tensors only, and each
rank's are rows); the ranks' reads add up to the checkpoint once, not twice; a rank whose reads
fail (a wrong key) makes both ranks raise, naming it.

Run by ctest (test `parameter_group`) with PYTHONPATH at <build>/bindings/python.
"""
import datetime
import json
import multiprocessing
import os
import tempfile

import pytest
import safetensors.torch as safetensors_torch
import torch
import torch.distributed as dist

import ringload
from ringload.params.load import load_into_parameters

# Big enough that one rank's rows of a tensor are more than the 64 KiB the slice reader reads
# through between two ranges: the other rank's rows are not read twice.
HIDDEN, VOCAB, FFN, WORLD = 256, 512, 384, 2


def checkpoint():
    generator = torch.Generator().manual_seed(11)
    shapes = {"embed.weight": (VOCAB, HIDDEN), "q.weight": (HIDDEN, HIDDEN), "k.weight": (HIDDEN, HIDDEN),
              "v.weight": (HIDDEN, HIDDEN), "down.weight": (HIDDEN, FFN), "norm.weight": (HIDDEN,),
              "scale.weight": (HIDDEN,)}
    return {name: torch.randn(*shape, generator=generator) for name, shape in shapes.items()}


class RankModel(torch.nn.Module):
    def __init__(self, rank):
        super().__init__()
        self.rank = rank
        empty = lambda *shape: torch.nn.Parameter(torch.empty(*shape), requires_grad=False)  # noqa: E731
        self.embed = empty(VOCAB // WORLD, HIDDEN)
        self.qkv = empty(3 * HIDDEN // WORLD, HIDDEN)
        self.down = empty(HIDDEN, FFN // WORLD)
        self.norm = empty(HIDDEN)
        self.scale = empty(HIDDEN)

    def load_weights(self, weights):
        loaded = set()
        for name, weight in weights:
            if name == "embed.weight":
                rows = VOCAB // WORLD
                self.embed.data.copy_(weight.narrow(0, self.rank * rows, rows))
            elif name in ("q.weight", "k.weight", "v.weight"):
                rows = HIDDEN // WORLD
                shard = "qkv".index(name[0])
                self.qkv.data.narrow(0, shard * rows, rows).copy_(weight.narrow(0, self.rank * rows, rows))
            elif name == "down.weight":
                columns = FFN // WORLD
                self.down.data.copy_(weight.narrow(1, self.rank * columns, columns))
            elif name == "norm.weight":
                self.norm.data.copy_(weight)
            elif name == "scale.weight":  # computes: handed over
                self.scale.data.copy_(weight * 2)
            loaded.add(name.split(".")[0])
        return loaded


def _rank_main(rank, init_file, case, out_dir):
    dist.init_process_group("gloo", init_method=f"file://{init_file}", rank=rank, world_size=WORLD,
                            timeout=datetime.timedelta(seconds=60))
    result = {"rank": rank}
    if case.get("batch_bytes"):  # many exchange batches from a small file
        from ringload.params import group as parameter_group
        parameter_group.BATCH_BYTES = case["batch_bytes"]
    try:
        model = RankModel(rank)
        before = {name: p.data_ptr() for name, p in model.named_parameters()}
        kwargs = {}
        if case.get("keys"):
            with open(case["keys"][rank], "rb") as file:
                kwargs["encryption"] = ringload.DecryptionParams.from_key(file.read())
        path = case["paths"][rank] if "paths" in case else case["path"]
        report = load_into_parameters([path], model.load_weights, kwargs, model=model,
                                      map_files=case.get("map_files", False), group=dist.group.WORLD)
        reference = RankModel(rank)
        reference.load_weights(safetensors_torch.load_file(case["reference"]).items())
        result["equal"] = {name: bool(torch.equal(p, getattr(reference, name))) for name, p in model.named_parameters()}
        result["replaced"] = sorted(name for name, p in model.named_parameters() if p.data_ptr() != before[name])
        result["bytes_read"] = report.bytes_read
        result["group_tensors"] = report.group_tensors
        result["summary"] = report.summary()
        result["handed"] = sorted(report.handed)
    except Exception as error:  # the parent checks what each rank raised
        result["error"] = str(error)
    with open(os.path.join(out_dir, f"rank{rank}.json"), "w") as file:
        json.dump(result, file)
    dist.destroy_process_group()


def run_ranks(case, timeout=120):
    with tempfile.TemporaryDirectory(prefix="ringload-group-") as folder:
        context = multiprocessing.get_context("spawn")
        init_file = os.path.join(folder, "init")
        processes = [context.Process(target=_rank_main, args=(r, init_file, case, folder)) for r in range(WORLD)]
        try:
            for process in processes:
                process.start()
            for process in processes:
                process.join(timeout)
                assert process.exitcode is not None, "a rank hung"
        finally:
            for process in processes:
                if process.is_alive():
                    process.kill()
                    process.join()
        results = []
        for r in range(WORLD):
            with open(os.path.join(folder, f"rank{r}.json")) as file:
                results.append(json.load(file))
        return results


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    folder = tmp_path_factory.mktemp("group")
    tensors = checkpoint()
    path = str(folder / "model.safetensors")
    safetensors_torch.save_file(tensors, path)
    return {"path": path, "tensors": tensors, "folder": folder}


@pytest.mark.parametrize("map_files,batch_bytes", [(False, 0), (True, 0), (False, 4096)])
def test_two_ranks_read_once_into_their_parameters(files, map_files, batch_bytes):
    results = run_ranks({"path": files["path"], "reference": files["path"], "map_files": map_files,
                         "batch_bytes": batch_bytes})
    data_bytes = sum(t.numel() * t.element_size() for t in files["tensors"].values())
    for result in results:
        assert "error" not in result, result
        assert all(result["equal"].values()), result
        # Rows of a tensor are not mapped under a group (the engine would page in the other rank's).
        assert result["replaced"] == [], result
        assert result["handed"] == ["scale.weight"], result
        # norm (replicated), down (column cuts) and scale (computed) read whole by one rank and shared.
        assert result["group_tensors"] + (result["rank"] == 0) >= 2, result
        assert result["bytes_read"] < 0.75 * data_bytes, result  # not the whole checkpoint on each rank
    total = sum(result["bytes_read"] for result in results)
    assert data_bytes <= total <= data_bytes * 1.05, (total, data_bytes)


def test_a_rank_whose_reads_fail_fails_both(files):
    """An encrypted tensorizer file (every tensor read whole by one rank); rank 1 has a wrong key."""
    folder = files["folder"]
    key, wrong = folder / "key", folder / "wrong"
    key.write_bytes(b"k" * 32)
    wrong.write_bytes(b"w" * 32)
    path = str(folder / "model.tensors")
    with ringload.TensorSerializer(path, encryption=ringload.EncryptionParams(b"k" * 32)) as serializer:
        serializer.write_state_dict(files["tensors"])
    good = run_ranks({"path": path, "reference": files["path"], "keys": [str(key), str(key)]})
    for result in good:
        assert "error" not in result and all(result["equal"].values()), result
    failed = run_ranks({"path": path, "reference": files["path"], "keys": [str(key), str(wrong)]})
    for result in failed:
        assert "rank 1 of 2 could not read its share" in result.get("error", ""), result


def test_a_rank_that_cannot_open_fails_both_without_waiting(files, tmp_path):
    """Rank 1's file is missing: both ranks raise (naming rank 1 and the file), neither waits
    for the other in the group's first collective until its timeout."""
    missing = str(tmp_path / "missing.safetensors")
    results = run_ranks({"paths": [files["path"], missing], "reference": files["path"]}, timeout=50)
    for result in results:
        assert "rank 1 of 2" in result.get("error", "") and "missing.safetensors" in result["error"], result
