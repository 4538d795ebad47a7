"""tests/bindings/diffusers_test.py: diffusers' from_pretrained with ringload doing the reads
(ringload.diffusers_reads.reading()), with the real diffusers 0.42.1 from PyPI on the CPU.

A tiny UNet2DModel (random weights from a fixed seed) saved by diffusers' own save_pretrained,
as one safetensors file and as shards with their index; loaded by diffusers alone and inside
reading() with each placement. Checked: every parameter equal to diffusers' own load, the
same output of a forward pass (up to rounding), ringload read every file (its Reads count them and their
tensors), the placement each file got (a cached local file mapped under "auto"), diffusers'
own function back after the `with` (also after a failed load), and a damaged file named in the
error. Run with .venv-sglang's python (scripts/setup_sglang.sh installs diffusers there).
"""
import os

import pytest
import torch


def tiny_unet():
    from diffusers import UNet2DModel
    torch.manual_seed(5)
    return UNet2DModel(sample_size=8, in_channels=3, out_channels=3, layers_per_block=1,
                       block_out_channels=(8, 16), norm_num_groups=4,
                       down_block_types=("DownBlock2D", "DownBlock2D"), up_block_types=("UpBlock2D", "UpBlock2D"))


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    model = tiny_unet()
    one = str(tmp_path_factory.mktemp("one"))
    sharded = str(tmp_path_factory.mktemp("sharded"))
    model.save_pretrained(one)
    model.save_pretrained(sharded, max_shard_size="20KB")
    assert len([f for f in os.listdir(sharded) if f.endswith(".safetensors")]) > 1, os.listdir(sharded)
    return {"one": one, "sharded": sharded}


def forward(model):
    generator = torch.Generator().manual_seed(9)
    sample = torch.randn(1, 3, 8, 8, generator=generator)
    with torch.no_grad():
        return model(sample, timestep=3).sample


@pytest.mark.parametrize("layout", ["one", "sharded"])
@pytest.mark.parametrize("placement", ["auto", "mapped", "arena"])
def test_from_pretrained_with_ringloads_reads(folders, layout, placement):
    from diffusers import UNet2DModel
    from diffusers.models import model_loading_utils

    import ringload.diffusers_reads
    folder = folders[layout]
    own = UNet2DModel.from_pretrained(folder)
    original = model_loading_utils.load_state_dict
    for name in os.listdir(folder):  # the page cache holds them: "auto" maps
        with open(os.path.join(folder, name), "rb") as file:
            file.read()
    with ringload.diffusers_reads.reading(placement=placement) as reads:
        assert model_loading_utils.load_state_dict is not original
        ours = UNet2DModel.from_pretrained(folder)
    assert model_loading_utils.load_state_dict is original
    files = [f for f in os.listdir(folder) if f.endswith(".safetensors")]
    assert reads.files == len(files) and reads.tensors == len(own.state_dict()), reads
    assert reads.bytes > 0
    assert set(reads.placements) == {"mapped" if placement == "auto" else placement}, reads.placements
    expected = own.state_dict()
    for name, tensor in ours.state_dict().items():
        assert torch.equal(tensor, expected[name]), name
    # Equal weights; the output equal up to rounding (the convolutions' kernels may sum in
    # another order for memory at another alignment: the file's pages against torch's own).
    assert torch.allclose(forward(ours), forward(own), rtol=1e-5, atol=1e-6)


def test_a_damaged_file_is_named_and_the_original_put_back(folders, tmp_path):
    import shutil

    from diffusers import UNet2DModel
    from diffusers.models import model_loading_utils

    import ringload.diffusers_reads
    folder = str(tmp_path / "cut")
    shutil.copytree(folders["one"], folder)
    path = os.path.join(folder, "diffusion_pytorch_model.safetensors")
    data = open(path, "rb").read()
    with open(path, "wb") as file:
        file.write(data[: len(data) // 2])
    original = model_loading_utils.load_state_dict
    with pytest.raises(Exception, match="diffusion_pytorch_model.safetensors"):
        with ringload.diffusers_reads.reading():
            UNet2DModel.from_pretrained(folder)
    assert model_loading_utils.load_state_dict is original
