"""tests/bindings/parameter_load_test.py: reading a checkpoint straight into a model's parameters
(ringload.params.plan, ringload.params.load), with torch only (the real vLLM case is in
vllm_test.py).

A small model with the loading code servers have (vLLM's shapes): q/k/v fused into one
parameter by narrow + copy_, a row-parallel weight (rank 1 of 2: a column cut), an embedding
with padding rows filled after the copy, a default loader, a loader that computes (w + 1), one
that permutes its destination in place after the copy, one that needs a value (.item()), and a
buffer of another dtype (a floating conversion on the way). Each checkpoint is written by an
independent writer (PyPI safetensors, torch.save) and by ringload's tensorizer writer; the
reference is the same model loaded by the same load_weights from the tensors as safetensors'
own load_file gives them. Checked: every parameter equals the reference, no parameter's storage
was replaced (same data_ptr), the loaders that compute were handed real tensors (and only
those), and each byte of the tensors read was read once.

Run by ctest (test `parameter_load`) with PYTHONPATH at <build>/bindings/python.
"""
import os
import sys

import pytest
import safetensors.torch as safetensors_torch
import torch

from ringload.params.load import load_into_parameters
from ringload.params.plan import box_of, learn_plan

HIDDEN, HEADS_DIM, VOCAB, PADDED_VOCAB, FFN = 64, 16, 50, 56, 96


def checkpoint_tensors():
    generator = torch.Generator().manual_seed(7)

    def random(*shape, dtype=torch.float32):
        return torch.randn(*shape, generator=generator).to(dtype)

    return {
        "embed.weight": random(VOCAB, HIDDEN),
        "q.weight": random(HEADS_DIM, HIDDEN),
        "k.weight": random(HEADS_DIM, HIDDEN),
        "v.weight": random(HEADS_DIM, HIDDEN),
        "down.weight": random(HIDDEN, FFN),
        "norm.weight": random(HIDDEN),
        "rotary.weight": random(8, 4),
        "scale": random(1),
        "mixed.weight": random(12, 3, dtype=torch.bfloat16),
        "unused.weight": random(5, 5),
        "lm_head.weight": random(20, HIDDEN),
    }


class ServerLikeModel(torch.nn.Module):
    """Parameters as a tensor-parallel server allocates them (rank 1 of 2 for `down`), and a
    load_weights that copies as vLLM's weight loaders do."""

    def __init__(self):
        super().__init__()
        self.embed = torch.nn.Parameter(torch.empty(PADDED_VOCAB, HIDDEN), requires_grad=False)
        self.qkv = torch.nn.Parameter(torch.empty(3 * HEADS_DIM, HIDDEN), requires_grad=False)
        self.down = torch.nn.Parameter(torch.empty(HIDDEN, FFN // 2), requires_grad=False)
        self.norm = torch.nn.Parameter(torch.empty(HIDDEN), requires_grad=False)
        self.rotary = torch.nn.Parameter(torch.empty(8, 4), requires_grad=False)
        self.scale = torch.nn.Parameter(torch.empty(1), requires_grad=False)
        self.register_buffer("mixed", torch.empty(12, 3, dtype=torch.float32))
        self.lm_head = torch.nn.Parameter(torch.empty(20, HIDDEN), requires_grad=False)
        self.item_seen = []

    def load_weights(self, weights):
        loaded = set()
        for name, weight in weights:
            if name == "embed.weight":  # vocab padding: copy the rows, zero the rest
                self.embed[: weight.shape[0]].data.copy_(weight)
                self.embed[weight.shape[0]:].data.fill_(0)
                loaded.add("embed")
            elif name in ("q.weight", "k.weight", "v.weight"):
                shard = "qkv".index(name[0])
                destination = self.qkv.data.narrow(0, shard * HEADS_DIM, HEADS_DIM)
                assert destination.shape == weight.shape
                destination.copy_(weight)
                loaded.add("qkv")
            elif name == "down.weight":  # row parallel, rank 1: the second half of the columns
                size = self.down.shape[1]
                self.down.data.copy_(weight.narrow(1, size, size))
                loaded.add("down")
            elif name == "norm.weight":  # computes: handed over
                self.norm.data.copy_(weight + 1.0)
                loaded.add("norm")
            elif name == "rotary.weight":  # permutes its destination after the copy: handed over
                self.rotary.data.copy_(weight)
                self.rotary.data.mul_(-1.0)
                loaded.add("rotary")
            elif name == "scale":  # needs the value: handed over
                self.item_seen.append(float(weight.item()))
                self.scale.data.fill_(weight.item())
                loaded.add("scale")
            elif name == "mixed.weight":  # bfloat16 into float32: converted on the way
                self.mixed.copy_(weight)
                loaded.add("mixed")
            elif name == "lm_head.weight":  # whole, as stored: the file's pages can back it
                self.lm_head.data.copy_(weight)
                loaded.add("lm_head")
        return loaded


@pytest.fixture(scope="module")
def tensors():
    return checkpoint_tensors()


@pytest.fixture(scope="module")
def reference(tensors, tmp_path_factory):
    """The model loaded by its own load_weights from what safetensors' load_file gives."""
    path = tmp_path_factory.mktemp("reference") / "model.safetensors"
    safetensors_torch.save_file(tensors, str(path))
    model = ServerLikeModel()
    model.load_weights(safetensors_torch.load_file(str(path)).items())
    return model


def write_checkpoint(kind, tensors, folder):
    if kind == "safetensors":
        path = os.path.join(folder, "model.safetensors")
        safetensors_torch.save_file(tensors, path)
    elif kind == "torch":
        path = os.path.join(folder, "pytorch_model.bin")
        torch.save(tensors, path)
    else:
        from ringload import TensorSerializer
        path = os.path.join(folder, "model.tensors")
        with TensorSerializer(path) as serializer:
            serializer.write_state_dict(tensors)
    return path


def data_pointers(model):
    return {name: tensor.data_ptr() for name, tensor in list(model.named_parameters()) + list(model.named_buffers())}


@pytest.mark.parametrize("kind", ["safetensors", "torch", "tensorizer"])
def test_straight_into_parameters_equals_the_reference(kind, tensors, reference, tmp_path):
    path = write_checkpoint(kind, tensors, str(tmp_path))
    model = ServerLikeModel()
    before = data_pointers(model)
    report = load_into_parameters([path], model.load_weights, {})
    assert data_pointers(model) == before, "a parameter's storage was replaced"
    for name, expected in list(reference.named_parameters()) + list(reference.named_buffers()):
        assert torch.equal(dict(list(model.named_parameters()) + list(model.named_buffers()))[name], expected), name
    assert report.loaded == {"embed", "qkv", "down", "norm", "rotary", "scale", "mixed", "lm_head"}
    assert set(report.handed) == {"norm.weight", "rotary.weight", "scale"}, report.handed
    assert "changed after the copy" in report.handed["rotary.weight"]
    assert model.item_seen == [float(tensors["scale"].item())], "the loader that needs a value got the real one"
    # Each byte once: the whole of every tensor read, but down's other half and the unused one.
    def nbytes(name):
        return tensors[name].numel() * tensors[name].element_size()

    read_whole = sum(nbytes(name) for name in tensors if name not in ("down.weight", "unused.weight"))
    assert report.straight_bytes + report.handed_bytes == read_whole + nbytes("down.weight") // 2
    # Read once: no byte twice (gaps of a few KiB between the pieces are read through, not asked for again).
    assert report.straight_bytes + report.handed_bytes <= report.bytes_read <= os.path.getsize(path)


def test_whole_parameters_mapped_from_the_file(tensors, reference, tmp_path):
    """map_files: lm_head (a whole tensor as stored) is backed by the file's pages, copy-on-write;
    the others are copied in as before (their storage kept); the values are the reference's."""
    path = write_checkpoint("safetensors", tensors, str(tmp_path))
    model = ServerLikeModel()
    before = data_pointers(model)
    report = load_into_parameters([path], model.load_weights, {}, model=model, map_files=True)
    after = data_pointers(model)
    assert report.mapped_parameters == 1 and report.mapped_bytes == tensors["lm_head.weight"].numel() * 4, report
    assert after["lm_head"] != before["lm_head"]
    assert {k: v for k, v in after.items() if k != "lm_head"} == {k: v for k, v in before.items() if k != "lm_head"}
    mapped_files = [line for line in open("/proc/self/maps") if line.rstrip().endswith(path)]
    assert any(int(line.split("-")[0], 16) <= after["lm_head"] < int(line.split()[0].split("-")[1], 16)
               for line in mapped_files), "lm_head is not in a mapping of the file"
    for name, expected in list(reference.named_parameters()) + list(reference.named_buffers()):
        assert torch.equal(dict(list(model.named_parameters()) + list(model.named_buffers()))[name], expected), name
    stored = open(path, "rb").read()
    model.lm_head.data.mul_(2.0)  # copy-on-write: the file keeps its bytes
    assert open(path, "rb").read() == stored
    assert report.bytes_read <= os.path.getsize(path)


class FusedModel(torch.nn.Module):
    """vLLM's fused parameters: gate_up from gate_proj and up_proj (stored back to back: the
    file's order is by name), qkv from q, k, v (stored k, q, v: not in the fused order)."""

    def __init__(self):
        super().__init__()
        self.gate_up = torch.nn.Parameter(torch.empty(2 * FFN, HIDDEN), requires_grad=False)
        self.qkv = torch.nn.Parameter(torch.empty(3 * HEADS_DIM, HIDDEN), requires_grad=False)

    def load_weights(self, weights):
        for name, weight in weights:
            fused, order = (self.gate_up, ("gate", "up")) if "mlp" in name else (self.qkv, ("q", "k", "v"))
            shard = order.index(name.split(".")[-2].removesuffix("_proj"))
            fused.data.narrow(0, shard * weight.shape[0], weight.shape[0]).copy_(weight)
        return {"gate_up", "qkv"}


def test_fused_parameters_stored_back_to_back_are_mapped(tmp_path):
    """A fused parameter whose parts lie back to back in the file, in its order, is backed by
    one stretch of the file's pages; one whose parts are stored in another order is copied in."""
    generator = torch.Generator().manual_seed(3)
    tensors = {f"layer.mlp.{name}_proj.weight": torch.randn(FFN, HIDDEN, generator=generator)
               for name in ("gate", "up")}
    tensors.update({f"layer.attn.{name}_proj.weight": torch.randn(HEADS_DIM, HIDDEN, generator=generator)
                    for name in ("q", "k", "v")})
    path = write_checkpoint("safetensors", tensors, str(tmp_path))
    model = FusedModel()
    before = data_pointers(model)
    report = load_into_parameters([path], model.load_weights, {}, model=model, map_files=True)
    assert report.mapped_parameters == 1 and report.mapped_bytes == 2 * FFN * HIDDEN * 4, report
    assert data_pointers(model)["qkv"] == before["qkv"]
    mapped_files = [line for line in open("/proc/self/maps") if line.rstrip().endswith(path)]
    assert any(int(line.split("-")[0], 16) <= model.gate_up.data_ptr() < int(line.split()[0].split("-")[1], 16)
               for line in mapped_files), "gate_up is not in a mapping of the file"
    expected = FusedModel()
    expected.load_weights(safetensors_torch.load_file(path).items())
    assert torch.equal(model.gate_up, expected.gate_up) and torch.equal(model.qkv, expected.qkv)
    assert report.bytes_read <= os.path.getsize(path)


def test_one_stretch_maps_one_parameter_and_views_are_not_replaced(tmp_path):
    """Two untied parameters copied from the same tensor: only one is backed by its pages (two
    would share them: a write to one seen by the other). A parameter another tensor views (a
    buffer over part of it) keeps its storage, since the view would keep the old bytes."""
    weight = torch.randn(8, HIDDEN, generator=torch.Generator().manual_seed(1))
    path = str(tmp_path / "model.safetensors")
    safetensors_torch.save_file({"w": weight, "v": weight.clone() + 1}, path)
    holder = torch.nn.Module()
    holder.a = torch.nn.Parameter(torch.empty(8, HIDDEN), requires_grad=False)
    holder.b = torch.nn.Parameter(torch.empty(8, HIDDEN), requires_grad=False)
    holder.c = torch.nn.Parameter(torch.empty(8, HIDDEN), requires_grad=False)
    holder.register_buffer("c_rows", holder.c.data[:2])  # a view of part of c

    def load_weights(weights):
        for name, tensor in weights:
            if name == "w":
                holder.a.data.copy_(tensor)
                holder.b.data.copy_(tensor)
            else:
                holder.c.data.copy_(tensor)
        return {"a", "b", "c"}

    c_before = holder.c.data_ptr()
    report = load_into_parameters([path], load_weights, {}, model=holder, map_files=True)
    assert report.mapped_parameters == 1, report.summary()
    assert torch.equal(holder.a, weight) and torch.equal(holder.b, weight)
    holder.a.data.mul_(2)
    assert torch.equal(holder.b, weight), "a and b share memory"
    assert holder.c.data_ptr() == c_before and torch.equal(holder.c_rows, weight[:2] + 1)


def test_cached_files_map_where_asked_for_cached(tensors, tmp_path):
    """map_files="cached" (placement auto on one CPU) maps a file the page cache holds (as the
    engine's read_mode auto decides: mincore)."""
    from ringload import _ringload
    path = write_checkpoint("safetensors", tensors, str(tmp_path))
    with open(path, "rb") as file:
        file.read()
    assert _ringload.mostly_in_page_cache(path)
    assert not _ringload.mostly_in_page_cache(str(tmp_path / "missing.safetensors"))
    model = ServerLikeModel()
    report = load_into_parameters([path], model.load_weights, {}, model=model, map_files="cached")
    assert report.mapped_parameters == 1, report


def test_a_tensor_the_engine_cannot_map_is_copied(tmp_path):
    """A float32 tensor at byte 3 of the data (after a 3-byte uint8 one, written by hand: a valid
    safetensors file) cannot be a mapped float32 view: map_files copies it in instead."""
    import json
    import struct
    values = torch.arange(4, dtype=torch.float32)
    header = json.dumps({"a": {"dtype": "U8", "shape": [3], "data_offsets": [0, 3]},
                         "b": {"dtype": "F32", "shape": [4], "data_offsets": [3, 19]}}).encode()
    header += b" " * (-len(header) % 8)
    path = str(tmp_path / "odd.safetensors")
    with open(path, "wb") as file:
        file.write(struct.pack("<Q", len(header)) + header + bytes([1, 2, 3]) + values.numpy().tobytes())
    target = torch.nn.Parameter(torch.zeros(4), requires_grad=False)
    holder = torch.nn.Module()
    holder.b = target

    def load_weights(weights):
        for name, weight in weights:
            if name == "b":
                target.data.copy_(weight)
        return {"b"}

    report = load_into_parameters([path], load_weights, {}, model=holder, map_files=True)
    assert report.mapped_parameters == 0 and report.straight_tensors == 1, report
    assert torch.equal(holder.b, values)


def test_each_byte_read_once_without_column_cuts(tensors, tmp_path):
    """Without the row-parallel cut, what is read is exactly the used tensors' bytes."""
    used = {name: tensor for name, tensor in tensors.items() if name in ("embed.weight", "q.weight", "k.weight",
                                                                         "v.weight", "norm.weight")}
    path = write_checkpoint("safetensors", used, str(tmp_path))
    model = ServerLikeModel()
    report = load_into_parameters([path], model.load_weights, {})
    assert report.bytes_read == sum(t.numel() * t.element_size() for t in used.values())
    assert report.straight_tensors == 4 and set(report.handed) == {"norm.weight"}


def test_a_checkpoint_in_two_files_verified(tensors, reference, tmp_path):
    names = sorted(tensors)
    first = {name: tensors[name] for name in names[: len(names) // 2]}
    second = {name: tensors[name] for name in names[len(names) // 2:]}
    os.makedirs(tmp_path / "a")
    os.makedirs(tmp_path / "b")
    paths = [write_checkpoint("tensorizer", first, str(tmp_path / "a")),
             write_checkpoint("tensorizer", second, str(tmp_path / "b"))]
    model = ServerLikeModel()
    load_into_parameters(paths, model.load_weights, {"verify_hash": True})  # hashes of whole tensors, checked
    for name, expected in reference.named_parameters():
        assert torch.equal(dict(model.named_parameters())[name], expected), name


def signed_checkpoint_in_files(tensors, folder, files):
    """The tensors in `files` safetensors files of one folder, signed by ringload.sign_model (a
    P-256 key, model_signing's key method); the load's signature keywords."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    import ringload
    names = sorted(tensors)
    paths = []
    for k in range(files):
        path = os.path.join(folder, "model", f"model-{k + 1:05d}-of-{files:05d}.safetensors")
        os.makedirs(os.path.dirname(path), exist_ok=True)
        safetensors_torch.save_file({name: tensors[name] for name in names[k::files]}, path)
        paths.append(path)
    key = ec.generate_private_key(ec.SECP256R1())
    with open(os.path.join(folder, "key.pem"), "wb") as file:
        file.write(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                     serialization.NoEncryption()))
    with open(os.path.join(folder, "pub.pem"), "wb") as file:
        file.write(key.public_key().public_bytes(serialization.Encoding.PEM,
                                                 serialization.PublicFormat.SubjectPublicKeyInfo))
    signature = os.path.join(folder, "model.sig")
    ringload.sign_model(os.path.join(folder, "model"), signature, private_key=os.path.join(folder, "key.pem"))
    return paths, {"signature": signature, "public_key": os.path.join(folder, "pub.pem"),
                   "model_folder": os.path.join(folder, "model")}


def test_a_signed_checkpoint_in_files_read_side_by_side(tensors, reference, tmp_path):
    """Signed files are read several at once (each file's hash is one core's lane): every
    parameter as the reference, every loader's tensors handed over, each file's in file order."""
    paths, signed = signed_checkpoint_in_files(tensors, str(tmp_path), 3)
    model = ServerLikeModel()
    handed_order = []

    def load_weights(weights):
        weights = list(weights)
        # The reads' calls, not the plan's (which hands stand-ins on the meta device).
        handed_order.extend(name for name, weight in weights if weight.device.type != "meta")
        return model.load_weights(weights)

    report = load_into_parameters(paths, load_weights, signed)
    for name, expected in list(reference.named_parameters()) + list(reference.named_buffers()):
        assert torch.equal(dict(list(model.named_parameters()) + list(model.named_buffers()))[name], expected), name
    assert report.loaded == {"embed", "qkv", "down", "norm", "rotary", "scale", "mixed", "lm_head"}
    file_of = {name: k for k in range(3) for name in sorted(tensors)[k::3]}
    assert sorted(handed_order) == sorted(report.handed)
    handed_files = [file_of[name] for name in handed_order]
    assert handed_files == sorted(handed_files), handed_order  # file by file, in order
    # Every file read whole, for its hash (once per pass: the bfloat16 tensor converting into
    # its float32 buffer is a pass of its own).
    assert report.bytes_read >= sum(os.path.getsize(path) for path in paths)


def test_a_changed_signed_file_fails_the_load_naming_it(tensors, tmp_path):
    paths, signed = signed_checkpoint_in_files(tensors, str(tmp_path), 3)
    with open(paths[1], "r+b") as file:  # one byte of a tensor's data
        file.seek(os.path.getsize(paths[1]) - 5)
        byte = file.read(1)
        file.seek(-1, os.SEEK_CUR)
        file.write(bytes([byte[0] ^ 1]))
    with pytest.raises(Exception, match=os.path.basename(paths[1]) + ".*does not match its signed SHA-256"):
        load_into_parameters(paths, ServerLikeModel().load_weights, signed)


def test_a_name_in_two_files_is_refused(tensors, tmp_path):
    os.makedirs(tmp_path / "a")
    os.makedirs(tmp_path / "b")
    paths = [write_checkpoint("safetensors", {"q.weight": tensors["q.weight"]}, str(tmp_path / "a")),
             write_checkpoint("safetensors", {"q.weight": tensors["q.weight"]}, str(tmp_path / "b"))]
    with pytest.raises(ValueError, match="q.weight is in two weight files"):
        load_into_parameters(paths, ServerLikeModel().load_weights, {})


def test_two_names_into_the_same_bytes_are_both_handed_over():
    target = torch.zeros(4, 4)

    def load_weights(weights):
        for name, weight in weights:
            target.copy_(weight)
        return {"target"}

    plan = learn_plan(load_weights, [("a", (4, 4), "float32"), ("b", (4, 4), "float32")])
    assert set(plan.handed) == {"a", "b"} and not plan.planned()


def test_boxes_of_views():
    base = torch.empty(6, 8, device="meta")
    assert box_of((6, 8), base.narrow(0, 2, 3)) == [(2, 5), (0, 8)]
    assert box_of((6, 8), base.narrow(1, 4, 4)) == [(0, 6), (4, 8)]
    assert box_of((6, 8), base[1:3, 2:5]) == [(1, 3), (2, 5)]
    assert box_of((6, 8), base.view(-1)[16:32]) == [(2, 4), (0, 8)]
    assert box_of((6, 8), base.t()) is None
    assert box_of((6, 8), base[:, ::2]) is None
    assert box_of((6, 8), base.view(-1)[3:9]) is None


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q"]))


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device (scripts/gpu_check.sh runs this on a GPU)")
@pytest.mark.parametrize("kind", ["safetensors", "tensorizer"])
def test_straight_into_cuda_parameters(kind, tensors, reference, tmp_path):
    """devices=True: whole tensors (q/k/v into the fused rows, lm_head, the bfloat16 buffer
    converted to float32 on the way) go from the pinned ring into the CUDA parameters, the
    row-parallel columns are cut on the host and uploaded into theirs; the loaders that compute
    are handed CPU tensors as before. Same values as the reference, no storage replaced, no
    device memory of the load's own beyond its scratch."""
    path = write_checkpoint(kind, tensors, str(tmp_path))
    model = ServerLikeModel().to("cuda")
    before = data_pointers(model)
    torch.cuda.synchronize()
    allocated = torch.cuda.memory_allocated()
    torch.cuda.reset_peak_memory_stats()
    report = load_into_parameters([path], model.load_weights, {}, model=model, devices=True)
    torch.cuda.synchronize()
    assert data_pointers(model) == before, "a parameter's storage was replaced"
    for name, expected in list(reference.named_parameters()) + list(reference.named_buffers()):
        got = dict(list(model.named_parameters()) + list(model.named_buffers()))[name]
        assert got.device.type == "cuda" and torch.equal(got.cpu(), expected), name
    assert set(report.handed) == {"norm.weight", "rotary.weight", "scale"}, report.handed
    assert report.straight_tensors >= 7, report.summary()
    # What the handed ones need on the device (load_weights' own temporaries), not the model's size again.
    assert torch.cuda.max_memory_allocated() - allocated < 4 << 20


def test_signed_files_read_at_once_follow_the_engines_rule(tmp_path):
    """Signed files into parameters are read as many at once as `ringload load DIR` reads
    (ringload/model_load.hpp files_read_at_once): two per core, one per core unsigned, for files
    small beside the memory this process may take."""
    from ringload import _ringload
    files = []
    for k in range(3):
        files.append(str(tmp_path / f"shard-{k}.safetensors"))
        safetensors_torch.save_file({"w": torch.ones(4)}, files[-1])
    cores = len(os.sched_getaffinity(0))
    assert _ringload.files_read_at_once(files, True) == 2 * cores
    assert _ringload.files_read_at_once(files, False) == cores
