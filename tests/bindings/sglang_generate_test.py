"""tests/bindings/sglang_generate_test.py: SGLang generating on the CPU with `--load-format
ringload`, against SGLang's own DefaultModelLoader and transformers, with the real SGLang 0.5.23
from PyPI (.venv-sglang, scripts/setup_sglang.sh).

PyPI's SGLang runs a model on this CPU with SGLANG_USE_CPU_ENGINE=1 and the torch_native
attention backend, given only the pure-Python modules of PyPI's sglang-kernel (its compiled ops
need libcuda: setup_sglang.sh installs a stub for them, so any compiled kernel call raises rather
than computes). Each engine (sglang.Engine: its tokenizer, scheduler and detokenizer processes)
runs in a process of its own (tests/support/sglang_generate.py). Greedy tokens of a tiny Llama
for three prompts: SGLang with ringload's loader (placement "arena", and "mapped") equal SGLang's
default loader's and transformers' own; ringload's loader ran in the scheduler (its log line) and
only where asked; a changed weight gives other tokens (the comparison sees a wrong load); a
missing weights file fails the engine's start naming it.
"""
import json
import os
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
SUPPORT = os.path.join(HERE, "..", "support")
sys.path.insert(0, SUPPORT)

PROMPTS = ["The quick brown fox", "ringload reads model weights", "Once upon a time"]
TOKENS = 8


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    """The tiny Llama folder and the prompts' token ids."""
    from tiny_llama import make_tiny_llama
    from transformers import AutoTokenizer
    folder = str(tmp_path_factory.mktemp("sglang-generate") / "tiny-llama")
    make_tiny_llama(folder)
    tokenizer = AutoTokenizer.from_pretrained(folder)
    return folder, [tokenizer(prompt)["input_ids"] for prompt in PROMPTS]


def generate(folder, ids, load_format, extra=None):
    """SGLang's greedy tokens (and ringload's log line) from an engine in a process of its own."""
    out = subprocess.run([sys.executable, os.path.join(SUPPORT, "sglang_generate.py"), folder, load_format,
                          str(TOKENS), json.dumps(ids), json.dumps(extra or {})],
                         capture_output=True, text=True, timeout=400)
    lines = [line for line in out.stdout.splitlines() if line.startswith("{")]
    assert lines, f"no result (exit {out.returncode}): {out.stderr[-3000:]}"
    return json.loads(lines[-1]), out


def transformers_tokens(folder, ids):
    """Greedy decoding by hand (the argmax of each full forward; EOS not special, as ignore_eos)."""
    import torch
    from transformers import LlamaForCausalLM
    model = LlamaForCausalLM.from_pretrained(folder, dtype=torch.float32).eval()
    made = []
    with torch.no_grad():
        for prompt in ids:
            sequence = torch.tensor([prompt])
            for _ in range(TOKENS):
                next_token = model(sequence).logits[0, -1].argmax().view(1, 1)
                sequence = torch.cat([sequence, next_token], dim=1)
            made.append(sequence[0, len(prompt):].tolist())
    return made


@pytest.fixture(scope="module")
def sglangs_own(model):
    folder, ids = model
    result, out = generate(folder, ids, "auto")
    assert "tokens" in result, result.get("error", out.stderr[-3000:])
    assert result["ringload_log"] == "", "ringload's loader ran where SGLang's own was asked for"
    return result["tokens"]


def test_sglangs_own_loader_generates_what_transformers_does(model, sglangs_own):
    folder, ids = model
    assert sglangs_own == transformers_tokens(folder, ids)


@pytest.mark.parametrize("placement, how", [("arena", "read straight into the parameters"),
                                            ("mapped", "parameters mapped")])
def test_ringload_generates_the_tokens_of_sglangs_own_loader(model, sglangs_own, placement, how):
    folder, ids = model
    result, out = generate(folder, ids, "ringload", {"placement": placement})
    assert "tokens" in result, result.get("error", out.stderr[-3000:])
    assert how in result["ringload_log"], result["ringload_log"] or out.stderr[-3000:]
    assert result["tokens"] == sglangs_own


def test_a_changed_weight_changes_the_tokens(model, sglangs_own, tmp_path):
    """The comparison sees a wrong load: one down_proj scaled by 1.5 in a copy of the file."""
    import torch
    from safetensors.torch import load_file, save_file
    folder, ids = model
    tensors = load_file(os.path.join(folder, "model.safetensors"))
    name = next(n for n in tensors if n.endswith("mlp.down_proj.weight"))
    tensors[name] = tensors[name] * 1.5
    changed = str(tmp_path / "changed.safetensors")
    save_file({n: t.contiguous() for n, t in tensors.items()}, changed, metadata={"format": "pt"})
    assert not torch.equal(load_file(changed)[name], load_file(os.path.join(folder, "model.safetensors"))[name])
    result, out = generate(folder, ids, "ringload", {"uri": changed})
    assert "tokens" in result, result.get("error", out.stderr[-3000:])
    assert result["tokens"] != sglangs_own


def test_a_missing_weights_file_fails_the_start_naming_it(model, tmp_path):
    folder, ids = model
    missing = str(tmp_path / "missing.safetensors")
    result, out = generate(folder, ids, "ringload", {"uri": missing})
    assert out.returncode == 2 and missing in result.get("error", ""), result
