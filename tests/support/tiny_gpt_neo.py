"""tests/support/tiny_gpt_neo.py: a small GPT-Neo model folder, made locally (no hub access), that
stands in for EleutherAI/gpt-neo-125M in tensorizer's own tests (tests/tensorizer_upstream).
Needs torch, transformers and tokenizers (the .venv-vllm has them).

    make_tiny_gpt_neo(folder)    # config.json, tokenizer files, model.safetensors

What those tests assume of the model, and how this one meets it:
- it has layers transformer.h.0 and .1 (2 layers: global, then local attention), 512 positions
  (the prompt is 400 tokens and 50 more are generated); it is 128 wide (4 heads), small enough
  that generating on a CPU takes a moment, with a 300-token byte-level BPE;
- a test swaps in `torch.nn.LayerNorm(768, 768)` for transformer.h.0.ln_2 and expects
  verification to catch it: it differs from the stored one in shape (and every weight is drawn,
  fixed seed, none left at transformers' init of ones and zeros);
- it continues " hello" * 400 with at least one more "hello" (sampled): the last layer norm's
  weight is zero and its bias a multiple of the embedding of " hello", so every position's
  logits favour " hello" by a wide margin (the output embedding is the input one, tied).
"""
import os

SEED = 2811
TEXT = [
    " hello" * 64,
    "The quick brown fox jumps over the lazy dog. " * 4,
    "Tensors are serialized to files, S3 and Redis, and deserialized into modules. " * 4,
    "0123456789 abcdefghijklmnopqrstuvwxyz ABCDEFGHIJKLMNOPQRSTUVWXYZ .,;:!?'\"()[]{}",
]


def _train_tokenizer(folder):
    """A 300-token byte-level BPE in which " hello" is one token, saved for AutoTokenizer."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast
    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=300, special_tokens=["<|endoftext|>"], show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tokenizer.train_from_iterator(TEXT, trainer)
    fast = PreTrainedTokenizerFast(tokenizer_object=tokenizer, bos_token="<|endoftext|>",
                                   eos_token="<|endoftext|>", unk_token="<|endoftext|>")
    hello = fast.encode(" hello")
    if len(hello) != 1:
        raise RuntimeError(f'" hello" should be one token of the tiny tokenizer, not {hello}')
    fast.save_pretrained(folder)
    return fast, hello[0]


def make_tiny_gpt_neo(folder):
    """Writes the model folder; returns its state dict (name -> fp32 tensor)."""
    import torch
    from transformers import GPTNeoConfig, GPTNeoForCausalLM
    os.makedirs(folder, exist_ok=True)
    tokenizer, hello = _train_tokenizer(folder)
    config = GPTNeoConfig(vocab_size=len(tokenizer), hidden_size=128, num_layers=2, num_heads=4,
                          attention_types=[[["global", "local"], 1]], max_position_embeddings=512, window_size=256,
                          bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id,
                          torch_dtype="float32")
    torch.manual_seed(SEED)
    model = GPTNeoForCausalLM(config)
    with torch.no_grad():
        for parameter in model.parameters():
            parameter.normal_(0.0, 0.1)
        final_norm = model.transformer.ln_f
        final_norm.weight.zero_()
        hello_embedding = model.transformer.wte.weight[hello]
        final_norm.bias.copy_(hello_embedding * (40.0 / hello_embedding.dot(hello_embedding)))  # its logit: 40
    model.save_pretrained(folder)
    return {name: tensor.detach().clone() for name, tensor in model.state_dict().items()}
