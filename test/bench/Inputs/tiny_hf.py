"""Writes a tiny random Llama (2 layers, d 32) with a word-level tokenizer
and a labelled prompt file into a folder: the local Hugging Face model and
prompt file bench/herald_check.py --hf-model takes, made here (nothing is
downloaded). Label 1 when a prompt holds one of the words "w0".."w4"."""
import json
import os
import random
import sys

from tokenizers import Tokenizer, models, pre_tokenizers
import transformers

out = sys.argv[1]
os.makedirs(out, exist_ok=True)
words = ["w%d" % i for i in range(40)]
vocab = {w: i for i, w in enumerate(["[UNK]", "[PAD]"] + words)}
tok = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
fast = transformers.PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="[UNK]",
                                            pad_token="[PAD]")
fast.save_pretrained(out)
cfg = transformers.LlamaConfig(vocab_size=len(vocab), hidden_size=32, intermediate_size=64,
                               num_hidden_layers=4, num_attention_heads=4, num_key_value_heads=2,
                               max_position_embeddings=64)
transformers.LlamaForCausalLM(cfg).save_pretrained(out)
rng = random.Random(0)
with open(os.path.join(out, "prompts.jsonl"), "w") as f:
    for i in range(200):
        p = [rng.choice(words[5:]) for _ in range(8)]
        label = i % 2
        if label:
            p[rng.randrange(8)] = rng.choice(words[:5])
        f.write(json.dumps(dict(prompt=" ".join(p), label=label)) + "\n")
