"""A random Llama with a byte-level BPE tokenizer, saved like any fine-tune: the smallest real model
the hf backend can load from a folder (no download), for tests that must run transformers for real."""

from __future__ import annotations

from pathlib import Path

TEMPLATE = ("{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
            "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")


def save_tiny_llama(folder: Path, texts: list[str], *, vocab: int, hidden: int, intermediate: int, layers: int,
                    heads: int, kv_heads: int, context: int = 4096) -> Path:
    """Train the tokenizer on ``texts``, build the model with seed 0, save both into ``folder``."""
    import torch
    import transformers
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.train_from_iterator(texts, trainers.BpeTrainer(
        vocab_size=vocab, initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        special_tokens=["<|endoftext|>", "<|im_start|>", "<|im_end|>"]))
    fast = transformers.PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="<|im_end|>",
                                                bos_token="<|im_start|>", pad_token="<|endoftext|>")
    fast.chat_template = TEMPLATE
    torch.manual_seed(0)
    cfg = transformers.LlamaConfig(vocab_size=len(fast), hidden_size=hidden, intermediate_size=intermediate,
                                   num_hidden_layers=layers, num_attention_heads=heads, num_key_value_heads=kv_heads,
                                   max_position_embeddings=context, eos_token_id=fast.eos_token_id,
                                   bos_token_id=fast.bos_token_id)
    transformers.LlamaForCausalLM(cfg).save_pretrained(folder)
    fast.save_pretrained(folder)
    return folder


def save_tiny_qwen2(folder: Path, texts: list[str], *, vocab: int, hidden: int, intermediate: int, layers: int,
                    heads: int, kv_heads: int, context: int = 4096) -> Path:
    """A random Qwen2 (biased q/k/v projections, tied embeddings) with the same tokenizer recipe."""
    import torch
    import transformers

    save_tiny_llama(folder, texts, vocab=vocab, hidden=hidden, intermediate=intermediate, layers=layers, heads=heads,
                    kv_heads=kv_heads, context=context)
    fast = transformers.AutoTokenizer.from_pretrained(folder)
    torch.manual_seed(1)
    cfg = transformers.Qwen2Config(vocab_size=len(fast), hidden_size=hidden, intermediate_size=intermediate,
                                   num_hidden_layers=layers, num_attention_heads=heads, num_key_value_heads=kv_heads,
                                   max_position_embeddings=context, eos_token_id=fast.eos_token_id,
                                   bos_token_id=fast.bos_token_id, tie_word_embeddings=True)
    for stale in folder.glob("model*.safetensors"):
        stale.unlink()
    transformers.Qwen2ForCausalLM(cfg).save_pretrained(folder)
    return folder
