#!/usr/bin/python3
"""Measures, on the CPU, the most memory a training job's tensors take at once, for a
Llama-style causal language model trained in full and with LoRA adapters, with and
without gradient checkpointing and grouped-query attention, a GPT-2-style one (its
gelu_new written out in Python, or as one operation), BERT for masked-language
modelling, a T5-style encoder-decoder and torchvision's ViT-B/16, some also under
DistributedDataParallel over two processes (gloo; rank 0's tensors), and writes each model's print(model)
(NAME.txt) and index.csv (run, summary, batch, seq_len, image_size, checkpointing 0/1,
gpus, measured peak in MiB, parameters, trained parameters).

Why the CPU: autograd keeps and frees the same tensors on any device, so the peak of
live tensor bytes over two training steps (forward, cross-entropy, backward, AdamW
step; the profiler's allocation records) checks carma's replay of those steps without
a GPU. Two things are made to behave as on a GPU: dropout keeps a one-byte mask
(MaskedDropout; torch's CPU dropout keeps a float one), and the "sdpa" runs' attention
keeps what a fused kernel keeps (FusedAttention). It does not check what only a GPU
has: the caching allocator's segments, cuBLAS workspaces.

The model is written here from the published Llama architecture with the module names
Hugging Face transformers print (eager attention, RMSNorm in Python, gated SiLU MLP);
the LoRA wrapper runs and prints as PEFT's lora.Linear (peft >= 0.7): base_layer,
lora_dropout, lora_A, lora_B; ModulesToSaveWrapper as PEFT's. Gradient checkpointing
is what transformers' gradient_checkpointing_enable() does: each decoder layer run
through torch.utils.checkpoint (reentrant), the embedding's output made to require a
gradient (PEFT's enable_input_require_grads) so that frozen models still backpropagate. The files in
data/estimator/cpu-peaks/ were written with Debian's torch 1.13.1 (apt-get install
python3-torchvision; run with /usr/bin/python3), about a minute per run on two cores.
Usage: cpu_peaks.py OUTDIR [RUN...]   (the named runs only, kept with the others)"""
import math
import os
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.profiler import ProfilerActivity, profile
from torch.utils.checkpoint import checkpoint


class MaskedDropout(torch.autograd.Function):
    """Dropout as CUDA runs it (at::native_dropout): the output and a one-byte mask, which
    backward keeps. Torch's CPU dropout keeps a mask of the input's dtype instead (four
    bytes a value in fp32), which a GPU never holds."""

    @staticmethod
    def forward(ctx, x, p):
        mask = torch.empty(x.shape, dtype=torch.bool).bernoulli_(1 - p)
        ctx.save_for_backward(mask)
        ctx.scale = 1.0 / (1 - p)
        return x.mul(mask).mul_(ctx.scale)

    @staticmethod
    def backward(ctx, grad):
        (mask,) = ctx.saved_tensors
        return grad.mul(mask).mul_(ctx.scale), None


class Dropout(nn.Dropout):
    """nn.Dropout with CUDA's memory (MaskedDropout); prints as nn.Dropout does. p = 0
    returns the input, as ATen does."""

    def forward(self, x):
        if not self.training or self.p == 0:
            return x
        return MaskedDropout.apply(x, self.p)


def cuda_dropout(model):
    for m in model.modules():
        if type(m) is nn.Dropout:
            m.__class__ = Dropout
    return model


class LlamaRMSNorm(nn.Module):
    def __init__(self, d, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(d))
        self.eps, self.d = eps, d

    def forward(self, h):
        dt = h.dtype
        h = h.to(torch.float32)
        var = h.pow(2).mean(-1, keepdim=True)
        h = h * torch.rsqrt(var + self.eps)
        return self.weight * h.to(dt)

    def extra_repr(self):
        return f"({self.d},), eps={self.eps}"


class LlamaRotaryEmbedding(nn.Module):
    def __init__(self, hd):
        super().__init__()
        inv = 1.0 / (10000 ** (torch.arange(0, hd, 2).float() / hd))
        self.register_buffer("inv_freq", inv, persistent=False)

    def forward(self, x, pos):
        f = torch.outer(pos.float(), self.inv_freq)
        e = torch.cat((f, f), dim=-1)
        return e.cos().to(x.dtype), e.sin().to(x.dtype)


def rotate_half(x):
    a, b = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2:]
    return torch.cat((-b, a), dim=-1)


def repeat_kv(x, n):
    """transformers' repeat_kv: a grouped key or value expanded to every query head (a
    copy, by reshape)."""
    b, h, s, e = x.shape
    return x if n == 1 else x[:, :, None].expand(b, h, n, s, e).reshape(b, h * n, s, e)


class LlamaAttention(nn.Module):
    def __init__(self, d, nh, nkv=None):
        super().__init__()
        self.nh, self.hd = nh, d // nh
        self.nkv = nkv or nh
        self.q_proj = nn.Linear(d, d, bias=False)
        self.k_proj = nn.Linear(d, self.nkv * self.hd, bias=False)
        self.v_proj = nn.Linear(d, self.nkv * self.hd, bias=False)
        self.o_proj = nn.Linear(d, d, bias=False)
        self.rotary_emb = LlamaRotaryEmbedding(self.hd)

    def qkv(self, h, pos):
        """The projections, the query and key rotary-embedded."""
        b, s, d = h.shape
        q = self.q_proj(h).view(b, s, self.nh, self.hd).transpose(1, 2)
        k = self.k_proj(h).view(b, s, self.nkv, self.hd).transpose(1, 2)
        v = self.v_proj(h).view(b, s, self.nkv, self.hd).transpose(1, 2)
        cos, sin = self.rotary_emb(v, pos)
        cos, sin = cos[None, None], sin[None, None]
        k = k * cos + rotate_half(k) * sin
        g = self.nh // self.nkv
        return q * cos + rotate_half(q) * sin, repeat_kv(k, g), repeat_kv(v, g)

    def forward(self, h, mask, pos):
        b, s, d = h.shape
        q, k, v = self.qkv(h, pos)
        w = torch.matmul(q, k.transpose(2, 3)) / math.sqrt(self.hd)
        w = F.softmax(w + mask, dim=-1, dtype=torch.float32).to(q.dtype)
        w = F.dropout(w, p=0.0, training=self.training)
        o = torch.matmul(w, v).transpose(1, 2).contiguous().reshape(b, s, d)
        return self.o_proj(o)


class FusedAttention(torch.autograd.Function):
    """Causal attention with a fused kernel's memory (FlashAttention, PyTorch's
    memory-efficient SDPA): the forward keeps q, k, v, the output and the log-sum-exp
    per query, never the probabilities; the backward recomputes them, one (sample, head)
    at a time here, and makes the three input gradients. Torch 1.13 has no
    scaled_dot_product_attention: this is its memory, not its speed."""

    @staticmethod
    def forward(ctx, q, k, v, causal=True):
        b, h, s, e = q.shape
        scale = 1.0 / math.sqrt(e)
        mask = torch.full((s, s), float("-inf")).triu(1) if causal else torch.zeros(s, s)
        out = torch.empty_like(q)
        lse = torch.empty(b, h, s)
        for i in range(b):
            for j in range(h):
                w = q[i, j] @ k[i, j].t() * scale + mask
                lse[i, j] = torch.logsumexp(w, -1)
                out[i, j] = torch.softmax(w, -1) @ v[i, j]
        ctx.save_for_backward(q, k, v, out, lse)
        ctx.causal = causal
        return out

    @staticmethod
    def backward(ctx, dout):
        q, k, v, out, lse = ctx.saved_tensors
        b, h, s, e = q.shape
        scale = 1.0 / math.sqrt(e)
        mask = (torch.full((s, s), float("-inf")).triu(1) if ctx.causal
                else torch.zeros(s, s))
        dq, dk, dv = torch.empty_like(q), torch.empty_like(k), torch.empty_like(v)
        delta = (dout * out).sum(-1)
        for i in range(b):
            for j in range(h):
                p = torch.exp(q[i, j] @ k[i, j].t() * scale + mask - lse[i, j, :, None])
                dv[i, j] = p.t() @ dout[i, j]
                ds = p * (dout[i, j] @ v[i, j].t() - delta[i, j, :, None])
                dq[i, j] = ds @ k[i, j] * scale
                dk[i, j] = ds.t() @ q[i, j] * scale
        return dq, dk, dv, None


class LlamaSdpaAttention(LlamaAttention):
    """transformers 4.36 to 4.47's LlamaSdpaAttention: the same projections and rotary
    embedding, then a fused kernel (is_causal, no mask tensor, no dropout)."""

    def forward(self, h, mask, pos):
        b, s, d = h.shape
        q, k, v = self.qkv(h, pos)
        o = FusedAttention.apply(q, k, v).transpose(1, 2).contiguous().reshape(b, s, d)
        return self.o_proj(o)


class LlamaMLP(nn.Module):
    def __init__(self, d, i):
        super().__init__()
        self.gate_proj = nn.Linear(d, i, bias=False)
        self.up_proj = nn.Linear(d, i, bias=False)
        self.down_proj = nn.Linear(i, d, bias=False)
        self.act_fn = nn.SiLU()

    def forward(self, x):
        return self.down_proj(self.act_fn(self.gate_proj(x)) * self.up_proj(x))


class LlamaDecoderLayer(nn.Module):
    def __init__(self, d, nh, i, attn=LlamaAttention, nkv=None):
        super().__init__()
        self.self_attn = attn(d, nh, nkv)
        self.mlp = LlamaMLP(d, i)
        self.input_layernorm = LlamaRMSNorm(d)
        self.post_attention_layernorm = LlamaRMSNorm(d)

    def forward(self, h, mask, pos):
        h = h + self.self_attn(self.input_layernorm(h), mask, pos)
        return h + self.mlp(self.post_attention_layernorm(h))


class LlamaModel(nn.Module):
    def __init__(self, v, d, nh, i, n, attn, nkv=None):
        super().__init__()
        self.embed_tokens = nn.Embedding(v, d)
        self.layers = nn.ModuleList([LlamaDecoderLayer(d, nh, i, attn, nkv)
                                     for _ in range(n)])
        self.norm = LlamaRMSNorm(d)
        self.gradient_checkpointing = False

    def forward(self, ids):
        h = self.embed_tokens(ids)
        s = ids.shape[1]
        mask = torch.full((s, s), float("-inf"), dtype=h.dtype).triu(1)[None, None]
        pos = torch.arange(s)
        if self.gradient_checkpointing and not h.requires_grad:
            h.requires_grad_(True)
        for layer in self.layers:
            if self.gradient_checkpointing and self.training:
                h = checkpoint(layer, h, mask, pos)
            else:
                h = layer(h, mask, pos)
        return self.norm(h)


class LlamaForCausalLM(nn.Module):
    def __init__(self, v=8000, d=512, nh=8, i=1376, n=4, attn=LlamaAttention, nkv=None):
        super().__init__()
        self.model = LlamaModel(v, d, nh, i, n, attn, nkv)
        self.lm_head = nn.Linear(d, v, bias=False)

    def forward(self, ids):
        return self.lm_head(self.model(ids))


class Conv1D(nn.Module):
    """Hugging Face's transposed linear layer (GPT-2): addmm(bias, x, weight[nx, nf])."""

    def __init__(self, nf, nx):
        super().__init__()
        self.nf, self.nx = nf, nx
        self.weight = nn.Parameter(torch.empty(nx, nf).normal_(std=0.02))
        self.bias = nn.Parameter(torch.zeros(nf))

    def forward(self, x):
        size_out = x.size()[:-1] + (self.nf,)
        return torch.addmm(self.bias, x.view(-1, x.size(-1)), self.weight).view(size_out)

    def __repr__(self):
        return f"Conv1D(nf={self.nf}, nx={self.nx})"


class NewGELUActivation(nn.Module):
    """GPT-2's "gelu_new": the tanh approximation written out in Python, as Hugging Face
    writes it (each operation a tensor autograd may keep)."""

    def forward(self, x):
        return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) *
                                           (x + 0.044715 * torch.pow(x, 3.0))))


class GELUTanh(nn.Module):
    """The same function as one operation (F.gelu(approximate="tanh"))."""

    def forward(self, x):
        return F.gelu(x, approximate="tanh")


class GPT2Attention(nn.Module):
    def __init__(self, d, nh, n_pos, p):
        super().__init__()
        self.nh, self.hd, self.d = nh, d // nh, d
        self.register_buffer("bias", torch.tril(torch.ones(n_pos, n_pos, dtype=torch.bool))
                             .view(1, 1, n_pos, n_pos), persistent=False)
        self.c_attn = Conv1D(3 * d, d)
        self.c_proj = Conv1D(d, d)
        self.attn_dropout = nn.Dropout(p)
        self.resid_dropout = nn.Dropout(p)

    def split(self, t):
        return t.view(t.size()[:-1] + (self.nh, self.hd)).permute(0, 2, 1, 3)

    def forward(self, h):
        q, k, v = (self.split(t) for t in self.c_attn(h).split(self.d, dim=2))
        w = torch.matmul(q, k.transpose(-1, -2))
        w = w / torch.full([], v.size(-1) ** 0.5, dtype=w.dtype)
        s = q.size(-2)
        w = torch.where(self.bias[:, :, :s, :s], w, torch.full([], torch.finfo(w.dtype).min,
                                                               dtype=w.dtype))
        w = self.attn_dropout(F.softmax(w, dim=-1).type(v.dtype))
        o = torch.matmul(w, v).permute(0, 2, 1, 3).contiguous()
        o = o.view(o.size()[:-2] + (self.d,))
        return self.resid_dropout(self.c_proj(o))


class GPT2MLP(nn.Module):
    def __init__(self, d, p, act):
        super().__init__()
        self.c_fc = Conv1D(4 * d, d)
        self.c_proj = Conv1D(d, 4 * d)
        self.act = act()
        self.dropout = nn.Dropout(p)

    def forward(self, h):
        return self.dropout(self.c_proj(self.act(self.c_fc(h))))


class GPT2Block(nn.Module):
    def __init__(self, d, nh, n_pos, p, act):
        super().__init__()
        self.ln_1 = nn.LayerNorm(d, eps=1e-5)
        self.attn = GPT2Attention(d, nh, n_pos, p)
        self.ln_2 = nn.LayerNorm(d, eps=1e-5)
        self.mlp = GPT2MLP(d, p, act)

    def forward(self, h):
        h = self.attn(self.ln_1(h)) + h
        return h + self.mlp(self.ln_2(h))


class GPT2Model(nn.Module):
    def __init__(self, v, d, nh, n, n_pos, p, act):
        super().__init__()
        self.wte = nn.Embedding(v, d)
        self.wpe = nn.Embedding(n_pos, d)
        self.drop = nn.Dropout(p)
        self.h = nn.ModuleList([GPT2Block(d, nh, n_pos, p, act) for _ in range(n)])
        self.ln_f = nn.LayerNorm(d, eps=1e-5)

    def forward(self, ids):
        h = self.drop(self.wte(ids) + self.wpe(torch.arange(ids.shape[1])[None]))
        for block in self.h:
            h = block(h)
        return self.ln_f(h)


class GPT2LMHeadModel(nn.Module):
    """GPT-2 as transformers 4.45 builds it (eager attention), the head tied to the token
    table; its loss is the caller's cross-entropy over the logits."""

    def __init__(self, v=8000, d=512, nh=8, n=4, n_pos=1024, p=0.1, act=NewGELUActivation):
        super().__init__()
        self.transformer = GPT2Model(v, d, nh, n, n_pos, p, act)
        self.lm_head = nn.Linear(d, v, bias=False)
        self.lm_head.weight = self.transformer.wte.weight

    def forward(self, ids):
        return self.lm_head(self.transformer(ids))


class BertEmbeddings(nn.Module):
    def __init__(self, v, d, p):
        super().__init__()
        self.word_embeddings = nn.Embedding(v, d, padding_idx=0)
        self.position_embeddings = nn.Embedding(512, d)
        self.token_type_embeddings = nn.Embedding(2, d)
        self.LayerNorm = nn.LayerNorm(d, eps=1e-12)
        self.dropout = nn.Dropout(p)

    def forward(self, ids):
        s = ids.shape[1]
        e = self.word_embeddings(ids) + self.token_type_embeddings(torch.zeros_like(ids))
        e = e + self.position_embeddings(torch.arange(s)[None])
        return self.dropout(self.LayerNorm(e))


class BertSdpaSelfAttention(nn.Module):
    """transformers 4.41+: q, k, v, then scaled_dot_product_attention with the dropout
    given to the kernel (FusedAttention's memory: no probabilities, no mask kept); the
    dropout module stays, unused in training, and printed."""

    def __init__(self, d, nh, p):
        super().__init__()
        self.nh, self.hd = nh, d // nh
        self.query = nn.Linear(d, d)
        self.key = nn.Linear(d, d)
        self.value = nn.Linear(d, d)
        self.dropout = nn.Dropout(p)

    def split(self, t):
        return t.view(t.size()[:-1] + (self.nh, self.hd)).permute(0, 2, 1, 3)

    def forward(self, h):
        b, s, d = h.shape
        q, k, v = self.split(self.query(h)), self.split(self.key(h)), self.split(self.value(h))
        return FusedAttention.apply(q, k, v, False).transpose(1, 2).reshape(b, s, d)


class BertSelfOutput(nn.Module):
    """dense (width_in -> d), dropout, then LayerNorm of the sum with the block's input."""

    def __init__(self, d, p, width_in=None):
        super().__init__()
        self.dense = nn.Linear(width_in or d, d)
        self.LayerNorm = nn.LayerNorm(d, eps=1e-12)
        self.dropout = nn.Dropout(p)

    def forward(self, h, x):
        return self.LayerNorm(self.dropout(self.dense(h)) + x)


class BertAttention(nn.Module):
    def __init__(self, d, nh, p):
        super().__init__()
        self.self = BertSdpaSelfAttention(d, nh, p)
        self.output = BertSelfOutput(d, p)

    def forward(self, x):
        return self.output(self.self(x), x)


class BertIntermediate(nn.Module):
    def __init__(self, d, i):
        super().__init__()
        self.dense = nn.Linear(d, i)
        self.intermediate_act_fn = GELUActivation()

    def forward(self, x):
        return self.intermediate_act_fn(self.dense(x))


class GELUActivation(nn.Module):
    def forward(self, x):
        return F.gelu(x)


class BertOutput(BertSelfOutput):
    def __init__(self, d, i, p):
        super().__init__(d, p, i)


class BertLayer(nn.Module):
    def __init__(self, d, nh, i, p):
        super().__init__()
        self.attention = BertAttention(d, nh, p)
        self.intermediate = BertIntermediate(d, i)
        self.output = BertOutput(d, i, p)

    def forward(self, x):
        a = self.attention(x)
        return self.output(self.intermediate(a), a)


class BertEncoder(nn.Module):
    def __init__(self, d, nh, i, n, p):
        super().__init__()
        self.layer = nn.ModuleList([BertLayer(d, nh, i, p) for _ in range(n)])

    def forward(self, x):
        for layer in self.layer:
            x = layer(x)
        return x


class BertModel(nn.Module):
    def __init__(self, v, d, nh, i, n, p):
        super().__init__()
        self.embeddings = BertEmbeddings(v, d, p)
        self.encoder = BertEncoder(d, nh, i, n, p)

    def forward(self, ids):
        return self.encoder(self.embeddings(ids))


class BertPredictionHeadTransform(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.dense = nn.Linear(d, d)
        self.transform_act_fn = GELUActivation()
        self.LayerNorm = nn.LayerNorm(d, eps=1e-12)

    def forward(self, x):
        return self.LayerNorm(self.transform_act_fn(self.dense(x)))


class BertLMPredictionHead(nn.Module):
    def __init__(self, v, d):
        super().__init__()
        self.transform = BertPredictionHeadTransform(d)
        self.decoder = nn.Linear(d, v)

    def forward(self, x):
        return self.decoder(self.transform(x))


class BertOnlyMLMHead(nn.Module):
    def __init__(self, v, d):
        super().__init__()
        self.predictions = BertLMPredictionHead(v, d)

    def forward(self, x):
        return self.predictions(x)


class BertForMaskedLM(nn.Module):
    """BERT for masked-language modelling as transformers 4.41+ builds it (SDPA, no
    pooler), the decoder tied to the word embeddings; the loss is the caller's
    cross-entropy over every token's logits."""

    def __init__(self, v=8000, d=512, nh=8, i=2048, n=4, p=0.1):
        super().__init__()
        self.bert = BertModel(v, d, nh, i, n, p)
        self.cls = BertOnlyMLMHead(v, d)
        self.cls.predictions.decoder.weight = self.bert.embeddings.word_embeddings.weight

    def forward(self, ids):
        return self.cls(self.bert(ids))


class T5LayerNorm(nn.Module):
    """T5's RMS norm, in Python (no mean, no bias): prints as `T5LayerNorm()`."""

    def __init__(self, d, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(d))
        self.eps = eps

    def forward(self, h):
        var = h.to(torch.float32).pow(2).mean(-1, keepdim=True)
        return self.weight * (h * torch.rsqrt(var + self.eps))


class T5Attention(nn.Module):
    """Eager, unscaled attention with an additive position bias: the first block of each
    stack owns the relative-position table and makes the bias (1, heads, q, k), to which
    the mask is added once, (batch, heads, q, k), then handed to every later block.
    Cross-attention reads the encoder's output, with a zero bias plus its mask."""

    def __init__(self, d, nh, p, bias_table, causal):
        super().__init__()
        self.nh, self.hd, self.p, self.causal = nh, d // nh, p, causal
        self.q = nn.Linear(d, d, bias=False)
        self.k = nn.Linear(d, d, bias=False)
        self.v = nn.Linear(d, d, bias=False)
        self.o = nn.Linear(d, d, bias=False)
        if bias_table:
            self.relative_attention_bias = nn.Embedding(32, nh)

    def split(self, t):
        return t.view(t.shape[0], -1, self.nh, self.hd).transpose(1, 2)

    def bias(self, sq, sk, mask):
        if hasattr(self, "relative_attention_bias"):
            rel = torch.arange(sk)[None, :] - torch.arange(sq)[:, None]
            bucket = (rel.clamp(-16, 15) + 16) if not self.causal else (-rel).clamp(0, 31)
            b = self.relative_attention_bias(bucket).permute(2, 0, 1)[None]
        else:
            b = torch.zeros(1, self.nh, sq, sk)
        return b + mask

    def forward(self, h, mask, position_bias=None, kv=None):
        src = h if kv is None else kv
        q, k, v = self.split(self.q(h)), self.split(self.k(src)), self.split(self.v(src))
        if position_bias is None:
            position_bias = self.bias(h.shape[1], src.shape[1], mask)
        scores = torch.matmul(q, k.transpose(3, 2))
        scores += position_bias
        w = F.softmax(scores.float(), dim=-1).type_as(scores)
        w = MaskedDropout.apply(w, self.p) if self.training and self.p else w
        out = torch.matmul(w, v).transpose(1, 2).contiguous().view(h.shape[0], -1,
                                                                   self.nh * self.hd)
        return self.o(out), position_bias


class T5LayerSelfAttention(nn.Module):
    def __init__(self, d, nh, p, bias_table, causal):
        super().__init__()
        self.SelfAttention = T5Attention(d, nh, p, bias_table, causal)
        self.layer_norm = T5LayerNorm(d)
        self.dropout = nn.Dropout(p)

    def forward(self, h, mask, bias):
        a, bias = self.SelfAttention(self.layer_norm(h), mask, bias)
        return h + self.dropout(a), bias


class T5LayerCrossAttention(nn.Module):
    def __init__(self, d, nh, p):
        super().__init__()
        self.EncDecAttention = T5Attention(d, nh, p, False, False)
        self.layer_norm = T5LayerNorm(d)
        self.dropout = nn.Dropout(p)

    def forward(self, h, mask, bias, enc):
        a, bias = self.EncDecAttention(self.layer_norm(h), mask, bias, enc)
        return h + self.dropout(a), bias


class T5DenseActDense(nn.Module):
    """Defined wi, wo, dropout, act (as Hugging Face prints it); runs wi, act, dropout, wo."""

    def __init__(self, d, i, p):
        super().__init__()
        self.wi = nn.Linear(d, i, bias=False)
        self.wo = nn.Linear(i, d, bias=False)
        self.dropout = nn.Dropout(p)
        self.act = nn.ReLU()

    def forward(self, h):
        return self.wo(self.dropout(self.act(self.wi(h))))


class T5LayerFF(nn.Module):
    def __init__(self, d, i, p):
        super().__init__()
        self.DenseReluDense = T5DenseActDense(d, i, p)
        self.layer_norm = T5LayerNorm(d)
        self.dropout = nn.Dropout(p)

    def forward(self, h):
        return h + self.dropout(self.DenseReluDense(self.layer_norm(h)))


class T5Block(nn.Module):
    def __init__(self, d, nh, i, p, first, decoder):
        super().__init__()
        layers = [T5LayerSelfAttention(d, nh, p, first, decoder)]
        if decoder:
            layers.append(T5LayerCrossAttention(d, nh, p))
        layers.append(T5LayerFF(d, i, p))
        self.layer = nn.ModuleList(layers)

    def forward(self, h, mask, bias, enc=None, enc_mask=None, enc_bias=None):
        h, bias = self.layer[0](h, mask, bias)
        if enc is not None:
            h, enc_bias = self.layer[1](h, enc_mask, enc_bias, enc)
        return self.layer[-1](h), bias, enc_bias


class T5Stack(nn.Module):
    def __init__(self, shared, d, nh, i, n, p, decoder):
        super().__init__()
        self.embed_tokens = shared
        self.block = nn.ModuleList([T5Block(d, nh, i, p, j == 0, decoder) for j in range(n)])
        self.final_layer_norm = T5LayerNorm(d)
        self.dropout = nn.Dropout(p)
        self.decoder = decoder

    def forward(self, ids, enc=None):
        b, s = ids.shape
        # the extended masks of an all-ones attention mask: (b, 1, 1, s), or causal
        if self.decoder:
            mask = torch.full((s, s), -1e9).triu(1)[None, None].expand(b, 1, s, s)
        else:
            mask = torch.zeros(b, 1, 1, s)
        enc_mask = torch.zeros(b, 1, 1, enc.shape[1]) if enc is not None else None
        h = self.dropout(self.embed_tokens(ids))
        bias = enc_bias = None
        for blk in self.block:
            h, bias, enc_bias = blk(h, mask, bias, enc, enc_mask, enc_bias)
        return self.dropout(self.final_layer_norm(h))


class T5ForConditionalGeneration(nn.Module):
    """T5 v1.0 (t5-small's layout, smaller) as transformers builds it: one token table
    shared by both stacks and the tied lm_head, whose input is scaled by d^-0.5; the
    decoder reads the labels shifted right. Eager attention (T5 has no SDPA path)."""

    def __init__(self, v=8000, d=512, nh=8, i=2048, n=2, p=0.1):
        super().__init__()
        self.shared = nn.Embedding(v, d)
        self.encoder = T5Stack(self.shared, d, nh, i, n, p, False)
        self.decoder = T5Stack(self.shared, d, nh, i, n, p, True)
        self.lm_head = nn.Linear(d, v, bias=False)
        self.lm_head.weight = self.shared.weight
        self.d = d

    def forward(self, ids, dec_ids):
        enc = self.encoder(ids)
        h = self.decoder(dec_ids, enc)
        return self.lm_head(h * self.d ** -0.5)


class LoraLinear(nn.Module):
    """base(x) + lora_B(lora_A(dropout(x))) * scaling, printed as lora.Linear."""

    def __init__(self, base, r, dropout):
        super().__init__()
        self.base_layer = base
        drop = nn.Dropout(p=dropout) if dropout > 0 else nn.Identity()
        self.lora_dropout = nn.ModuleDict({"default": drop})
        self.lora_A = nn.ModuleDict({"default": nn.Linear(base.in_features, r, bias=False)})
        self.lora_B = nn.ModuleDict({"default": nn.Linear(r, base.out_features, bias=False)})
        self.lora_embedding_A = nn.ParameterDict()
        self.lora_embedding_B = nn.ParameterDict()
        self.scaling = 2.0

    def _get_name(self):
        return "lora.Linear"

    def forward(self, x):
        result = self.base_layer(x)
        a = self.lora_A["default"](self.lora_dropout["default"](x))
        return result + self.lora_B["default"](a) * self.scaling


class ModulesToSaveWrapper(nn.Module):
    def __init__(self, m):
        super().__init__()
        self.original_module = m
        copy = nn.Linear(m.in_features, m.out_features, bias=m.bias is not None)
        copy.load_state_dict(m.state_dict())
        self.modules_to_save = nn.ModuleDict({"default": copy})

    def forward(self, x):
        return self.modules_to_save["default"](x)


class LoraModel(nn.Module):
    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, x):
        return self.model(x)


class PeftModelForCausalLM(nn.Module):
    def __init__(self, model):
        super().__init__()
        self.base_model = LoraModel(model)

    def forward(self, x):
        return self.base_model(x)


def peft(model, targets, r, dropout, save=()):
    for p in model.parameters():
        p.requires_grad_(False)
    for mod in list(model.modules()):
        for name, child in list(mod.named_children()):
            if name in targets and isinstance(child, nn.Linear):
                setattr(mod, name, LoraLinear(child, r, dropout))
            elif name in save:
                setattr(mod, name, ModulesToSaveWrapper(child))
    return PeftModelForCausalLM(model)


QV = ("q_proj", "v_proj")
ALL = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")
# name: (print, batch, seq, LoRA targets or None for full training, rank, dropout, saved,
# gradient checkpointing[, DistributedDataParallel processes])
RUNS = {
    "llama_full": ("llama_full", 4, 256, None, 0, 0, (), 0),
    "llama_lora_qv": ("llama_lora_qv", 4, 256, QV, 8, 0.05, (), 0),
    "llama_lora_qv_nodrop": ("llama_lora_qv_nodrop", 4, 256, QV, 8, 0.0, (), 0),
    "llama_lora_all": ("llama_lora_all", 4, 256, ALL, 16, 0.05, (), 0),
    "llama_lora_all_nodrop": ("llama_lora_all_nodrop", 4, 256, ALL, 16, 0.0, (), 0),
    "llama_lora_qv_head": ("llama_lora_qv_head", 2, 256, QV + ("lm_head",), 8, 0.1, (), 0),
    "llama_lora_qv_saved_head": ("llama_lora_qv_saved_head", 4, 256, QV, 8, 0.05,
                                 ("lm_head",), 0),
    "llama_full_gc": ("llama_full", 4, 256, None, 0, 0, (), 1),
    "llama_lora_qv_gc": ("llama_lora_qv", 4, 256, QV, 8, 0.05, (), 1),
    "llama_lora_all_gc": ("llama_lora_all", 4, 256, ALL, 16, 0.05, (), 1),
    "llama_lora_all_gc_b16": ("llama_lora_all", 16, 256, ALL, 16, 0.05, (), 1),
    # torchvision's ViT-B/16 at 224 x 224 (its own print; batch, no sequence)
    "vit_b_16": ("vit_b_16", 4, 0, None, 0, 0, (), 0),
    # GPT-2's layout (Conv1D, eager attention with dropout, gelu_new written in Python)
    "gpt2": ("gpt2", 4, 256, None, 0, 0, (), 0),
    "gpt2_gelu_tanh": ("gpt2_gelu_tanh", 4, 256, None, 0, 0, (), 0),
    # BERT for masked-language modelling, SDPA (FusedAttention), dropout 0.1
    "bert_sdpa": ("bert_sdpa", 4, 256, None, 0, 0, (), 0),
    # the fused kernel's memory (FusedAttention above) instead of eager attention
    "llama_sdpa_full": ("llama_sdpa_full", 4, 256, None, 0, 0, (), 0),
    "llama_sdpa_lora_all": ("llama_sdpa_lora_all", 4, 256, ALL, 16, 0.05, (), 0),
    "llama_sdpa_full_gc": ("llama_sdpa_full", 4, 256, None, 0, 0, (), 1),
    # grouped-query attention: 2 key/value heads for 8 query heads (repeat_kv)
    "llama_sdpa_gqa": ("llama_sdpa_gqa", 4, 256, None, 0, 0, (), 0),
    "llama_sdpa_gqa_lora_all": ("llama_sdpa_gqa_lora_all", 4, 256, ALL, 16, 0.05, (), 0),
    # an encoder-decoder: T5's layout (eager attention with a position bias, dropout 0.1)
    "t5": ("t5", 4, 256, None, 0, 0, (), 0),
    # DistributedDataParallel over two processes (gloo), rank 0's tensors
    "llama_full_ddp2": ("llama_full", 4, 256, None, 0, 0, (), 0, 2),
    "llama_full_gc_ddp2": ("llama_full", 4, 256, None, 0, 0, (), 1, 2),
    "llama_lora_all_ddp2": ("llama_lora_all", 4, 256, ALL, 16, 0.05, (), 0, 2),
    "vit_b_16_ddp2": ("vit_b_16", 4, 0, None, 0, 0, (), 0, 2),
}


class AdamW:
    """AdamW as current PyTorch (2.x) steps it with foreach: the state made at the first
    step, and one temporary list (the square root of exp_avg_sq, divided and incremented
    in place). torch 1.13's foreach step makes its denominator out of place, a second
    list of every parameter's size, which current PyTorch no longer does."""

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2):
        self.params = list(params)
        self.lr, self.betas, self.eps, self.wd = lr, betas, eps, weight_decay
        self.t = 0
        self.exp_avgs = self.exp_avg_sqs = None

    def zero_grad(self, set_to_none=True):
        for p in self.params:
            p.grad = None

    @torch.no_grad()
    def step(self):
        ps = [p for p in self.params if p.grad is not None]
        grads = [p.grad for p in ps]
        if self.exp_avgs is None:
            self.exp_avgs = [torch.zeros_like(p) for p in ps]
            self.exp_avg_sqs = [torch.zeros_like(p) for p in ps]
        self.t += 1
        b1, b2 = self.betas
        torch._foreach_mul_(ps, 1 - self.lr * self.wd)
        torch._foreach_mul_(self.exp_avgs, b1)
        torch._foreach_add_(self.exp_avgs, grads, alpha=1 - b1)
        torch._foreach_mul_(self.exp_avg_sqs, b2)
        torch._foreach_addcmul_(self.exp_avg_sqs, grads, grads, 1 - b2)
        step_size = self.lr / (1 - b1 ** self.t)
        denom = torch._foreach_sqrt(self.exp_avg_sqs)
        torch._foreach_div_(denom, math.sqrt(1 - b2 ** self.t))
        torch._foreach_add_(denom, self.eps)
        torch._foreach_addcdiv_(ps, self.exp_avgs, denom, -step_size)
        del denom


def measure_model(kind, batch, seq, targets, r, dropout, save, gc):
    if kind == "vit_b_16":
        import torchvision
        return cuda_dropout(torchvision.models.vit_b_16())
    if kind == "t5":
        return cuda_dropout(T5ForConditionalGeneration())
    if kind == "bert_sdpa":
        return cuda_dropout(BertForMaskedLM())
    if kind.startswith("gpt2"):
        return cuda_dropout(GPT2LMHeadModel(act=GELUTanh if kind == "gpt2_gelu_tanh"
                                            else NewGELUActivation))
    model = LlamaForCausalLM(attn=LlamaSdpaAttention if "sdpa" in kind else LlamaAttention,
                             nkv=2 if "gqa" in kind else None)
    model.model.gradient_checkpointing = bool(gc)
    if targets is not None:
        model = peft(model, set(targets), r, dropout, set(save))
    return cuda_dropout(model)


def measure(kind, batch, seq, targets, r, dropout, save, gc, gpus=1, rank=0):
    torch.manual_seed(0)
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        model = measure_model(kind, batch, seq, targets, r, dropout, save, gc)
        if kind == "vit_b_16":
            ids = torch.randn(batch, 3, 224, 224)
            labels = torch.randint(0, 1000, (batch,))
        else:
            ids = torch.randint(0, 8000, (batch, seq))
            labels = torch.randint(0, 8000, (batch, seq))
        # an encoder-decoder's second input: the labels shifted right
        extra = (torch.cat([torch.zeros_like(labels[:, :1]), labels[:, :-1]], 1),) \
            if kind == "t5" else ()
        model.train()
        net = model
        if gpus > 1:
            # as torchrun scripts wrap it: default bucket_cap_mb (25),
            # gradient_as_bucket_view=False, broadcast_buffers=True
            net = torch.nn.parallel.DistributedDataParallel(model)
        trained = [p for p in model.parameters() if p.requires_grad]
        opt = AdamW(trained)
        for _ in range(2):
            opt.zero_grad(set_to_none=True)
            out = net(ids, *extra)
            loss = F.cross_entropy(out.reshape(-1, out.shape[-1]), labels.reshape(-1))
            loss.backward()
            opt.step()
    live = peak = 0
    for e in prof.profiler.kineto_results.events():
        if e.name() == "[memory]":
            live += e.nbytes()
            peak = max(peak, live)
    return model, peak, sum(p.numel() for p in model.parameters()), sum(p.numel() for p in trained)


def ddp_rank(rank, gpus, port, args, result):
    os.environ["MASTER_ADDR"], os.environ["MASTER_PORT"] = "127.0.0.1", str(port)
    torch.distributed.init_process_group("gloo", rank=rank, world_size=gpus)
    torch.set_num_threads(1)
    got = measure(*args, gpus=gpus, rank=rank)
    if rank == 0:
        result.put(got[1:])
    torch.distributed.barrier()
    torch.distributed.destroy_process_group()


def measure_ddp(gpus, *args):
    """measure() in each of `gpus` processes under DistributedDataParallel; rank 0's
    model, peak and parameter counts."""
    import random
    import torch.multiprocessing as mp
    ctx = mp.get_context("spawn")
    result = ctx.Queue()
    port = random.randint(20000, 60000)
    procs = [ctx.Process(target=ddp_rank, args=(r, gpus, port, args, result))
             for r in range(gpus)]
    for p in procs:
        p.start()
    peak, params, trained = result.get()
    for p in procs:
        p.join()
        if p.exitcode:
            sys.exit(f"cpu_peaks.py: a DDP rank exited with status {p.exitcode}")
    # the print is the wrapped module's, as the single-process runs write it
    torch.manual_seed(0)
    return measure_model(*args), peak, params, trained


def main():
    if len(sys.argv) < 2 or any(r not in RUNS for r in sys.argv[2:]):
        sys.exit(__doc__)
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    index = os.path.join(out, "index.csv")
    head = ("run,summary,batch,seq_len,image_size,checkpointing,gpus,peak_mib,params,"
            "trained_params")
    rows = {}
    if os.path.exists(index):
        with open(index) as f:
            rows = {line.split(",")[0]: line.strip() for line in f.readlines()[1:] if line.strip()}
    for name in sys.argv[2:] or RUNS:
        txt, batch, seq, targets, r, dropout, save, gc, *ddp = RUNS[name]
        gpus = ddp[0] if ddp else 1
        image = 224 if txt == "vit_b_16" else 0
        args = (txt, batch, seq, targets, r, dropout, save, gc)
        model, peak, params, trained = (measure_ddp(gpus, *args) if gpus > 1
                                        else measure(*args))
        with open(os.path.join(out, txt + ".txt"), "w") as f:
            f.write(str(model) + "\n")
        rows[name] = (f"{name},{txt}.txt,{batch},{seq},{image},{gc},{gpus},{peak / 2**20:.1f},"
                      f"{params},{trained}")
        print(rows[name], flush=True)
        with open(index, "w") as f:
            f.write("\n".join([head] + [rows[n] for n in RUNS if n in rows]) + "\n")


if __name__ == "__main__":
    main()
