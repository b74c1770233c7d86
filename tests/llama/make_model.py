#!/usr/bin/env python3
"""tests/llama/make_model.py OUT.gguf — a tiny llama-architecture model for the llama.cpp tests.

No model can be downloaded in CI, so the test makes its own: a GGUF (version 3) file with a
SentencePiece-style vocabulary (control tokens, the 256 byte-fallback tokens, a few hundred
word pieces) and the weights of a 2-layer transformer (n_embd 64, 4 heads of 16, 2 KV heads:
grouped-query attention, feed-forward 128), drawn from a fixed-seed generator: the same bytes
on every machine. The weights are noise; what the model says is meaningless, but it runs every
kernel a llama model runs (embedding lookup, RMS norm, matrix products in F16 and Q8_0, RoPE,
softmax, SwiGLU) and its greedy output is a deterministic function of them.

GGUF layout (llama.cpp's gguf.h): magic "GGUF", version u32, tensor count u64, key-value count
u64; key-values (string key, u32 type, value); tensor infos (name, n_dims u32, dims u64...,
ggml type u32, offset u64 from the data start); padding to general.alignment (32); the data.
Standard library only.
"""
import random
import struct
import sys

ALIGN = 32
T_U32, T_I32, T_F32, T_STR, T_ARR = 4, 5, 6, 8, 9
GGML_F32, GGML_F16, GGML_Q8_0 = 0, 1, 8


def s(x):
    b = x.encode()
    return struct.pack("<Q", len(b)) + b


def kv(key, typ, val):
    out = s(key) + struct.pack("<I", typ)
    if typ == T_U32:
        return out + struct.pack("<I", val)
    if typ == T_F32:
        return out + struct.pack("<f", val)
    if typ == T_STR:
        return out + s(val)
    etyp, items = val
    out += struct.pack("<IQ", etyp, len(items))
    for it in items:
        out += {T_I32: lambda v: struct.pack("<i", v), T_F32: lambda v: struct.pack("<f", v),
                T_STR: s}[etyp](it)
    return out


def f16(vals):
    return struct.pack("<%de" % len(vals), *vals)


def q8_0(vals):
    """blocks of 32: an f16 scale, 32 int8 quants"""
    out = bytearray()
    for i in range(0, len(vals), 32):
        blk = vals[i:i + 32]
        amax = max(abs(v) for v in blk) or 1.0
        d = amax / 127.0
        out += struct.pack("<e", d)
        out += struct.pack("<32b", *[max(-127, min(127, round(v / d))) for v in blk])
    return bytes(out)


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: make_model.py OUT.gguf")
    rng = random.Random(20261127)
    n_embd, n_head, n_head_kv, n_ff, n_layer, n_ctx = 64, 4, 2, 128, 2, 256
    head = n_embd // n_head
    # vocabulary: <unk> <s> </s>, the byte tokens, then pieces
    tokens, scores, types = ["<unk>", "<s>", "</s>"], [0.0, 0.0, 0.0], [2, 3, 3]
    for b in range(256):
        tokens.append("<0x%02X>" % b)
        scores.append(0.0)
        types.append(6)
    words = ("the a of to and in is it that for on with as was he be at by this had not are "
             "but from or have an they which one you were her all she there would their we him "
             "been has when who will more no if out so said what up its about into than them "
             "can only other new some could time these two may then do first any my now such "
             "like our over man me even most made after also did many before must through back "
             "years where much your way well down should because each just those people how "
             "too little state good very make world still own see men work long get here "
             "between both life being under never day same another know while last might us "
             "great old year off come since against go came right used take three").split()
    pieces = ["\u2581"] + [chr(c) for c in range(ord("a"), ord("z") + 1)]
    pieces += ["\u2581" + w for w in words]
    for i, p in enumerate(pieces):
        tokens.append(p)
        scores.append(-float(i))
        types.append(1)
    n_vocab = len(tokens)

    def normal(n, scale):
        return [rng.gauss(0.0, scale) for _ in range(n)]

    tensors = []  # (name, dims, ggml type, bytes)

    def add(name, dims, typ, scale=0.08, ones=False):
        n = 1
        for d in dims:
            n *= d
        vals = [1.0] * n if ones else normal(n, scale)
        data = {GGML_F32: lambda v: struct.pack("<%df" % len(v), *v), GGML_F16: f16,
                GGML_Q8_0: q8_0}[typ](vals)
        tensors.append((name, dims, typ, data))

    add("token_embd.weight", [n_embd, n_vocab], GGML_F16, 0.5)
    for i in range(n_layer):
        p = "blk.%d." % i
        add(p + "attn_norm.weight", [n_embd], GGML_F32, ones=True)
        add(p + "attn_q.weight", [n_embd, n_embd], GGML_Q8_0)
        add(p + "attn_k.weight", [n_embd, head * n_head_kv], GGML_Q8_0)
        add(p + "attn_v.weight", [n_embd, head * n_head_kv], GGML_F16)
        add(p + "attn_output.weight", [n_embd, n_embd], GGML_F16)
        add(p + "ffn_norm.weight", [n_embd], GGML_F32, ones=True)
        add(p + "ffn_gate.weight", [n_embd, n_ff], GGML_Q8_0)
        add(p + "ffn_up.weight", [n_embd, n_ff], GGML_F16)
        add(p + "ffn_down.weight", [n_ff, n_embd], GGML_F16)
    add("output_norm.weight", [n_embd], GGML_F32, ones=True)
    add("output.weight", [n_embd, n_vocab], GGML_F16, 0.5)

    kvs = [
        kv("general.architecture", T_STR, "llama"),
        kv("general.name", T_STR, "reprise-tiny"),
        kv("general.alignment", T_U32, ALIGN),
        kv("llama.context_length", T_U32, n_ctx),
        kv("llama.embedding_length", T_U32, n_embd),
        kv("llama.block_count", T_U32, n_layer),
        kv("llama.feed_forward_length", T_U32, n_ff),
        kv("llama.attention.head_count", T_U32, n_head),
        kv("llama.attention.head_count_kv", T_U32, n_head_kv),
        kv("llama.rope.dimension_count", T_U32, head),
        kv("llama.attention.layer_norm_rms_epsilon", T_F32, 1e-5),
        kv("llama.vocab_size", T_U32, n_vocab),
        kv("tokenizer.ggml.model", T_STR, "llama"),
        kv("tokenizer.ggml.tokens", T_ARR, (T_STR, tokens)),
        kv("tokenizer.ggml.scores", T_ARR, (T_F32, scores)),
        kv("tokenizer.ggml.token_type", T_ARR, (T_I32, types)),
        kv("tokenizer.ggml.bos_token_id", T_U32, 1),
        kv("tokenizer.ggml.eos_token_id", T_U32, 2),
        kv("tokenizer.ggml.unknown_token_id", T_U32, 0),
    ]
    out = bytearray(b"GGUF" + struct.pack("<IQQ", 3, len(tensors), len(kvs)))
    for k in kvs:
        out += k
    off = 0
    for name, dims, typ, data in tensors:
        out += s(name) + struct.pack("<I", len(dims))
        for d in dims:
            out += struct.pack("<Q", d)
        out += struct.pack("<IQ", typ, off)
        off += len(data)
        off = (off + ALIGN - 1) // ALIGN * ALIGN
    out += b"\0" * ((ALIGN - len(out) % ALIGN) % ALIGN)
    for name, dims, typ, data in tensors:
        out += data
        out += b"\0" * ((ALIGN - len(data) % ALIGN) % ALIGN)
    with open(sys.argv[1], "wb") as f:
        f.write(out)


if __name__ == "__main__":
    main()
