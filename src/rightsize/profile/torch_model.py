"""A compact decoder-only transformer built from a `ModelArch`, for profiling (needs torch).

Its weights are exactly the matrices `perf.params.count_params` counts, so a measurement
and the analytic model talk about the same network:

- token embedding [V, h]; an untied output head [V, h] unless `tied_embeddings`;
- per layer: two norms (LayerNorm or RMSNorm, a scale only, no bias), Q, K and V
  projections with grouped-query attention (g key/value heads of width d), the output
  projection, and a GELU MLP (up, down) or a SwiGLU MLP (gate and up fused, down);
  MoE layers hold `experts` routed experts, `shared_experts` shared ones and a router;
- rotary position embeddings (no parameters) and no biases anywhere.

The only weights beyond `count_params` are the final norm's h scales (count_params leaves
them out: under 1e-6 of any preset). Three kernels follow the implementation the analytic
activation model assumes (`perf.memory`, Korthikanti et al. 2022 generalised):

- the SwiGLU product is one fused function that keeps gate and up (not silu(gate)) for
  backward, as Megatron-LM's `bias_swiglu_impl`;
- RMSNorm and LayerNorm are fused functions that keep their input and per-row fp32
  statistics (Apex / Transformer Engine);
- on the meta device, attention stands in for the FlashAttention-2 kernel: it keeps
  Q, K, V, the output (in the [b, s, a, d] layout the out-projection reads) and a
  per-row fp32 log-sum-exp. On real devices attention is torch's
  `scaled_dot_product_attention` (flash or memory-efficient kernels where available).
"""

from __future__ import annotations

import math
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from rightsize.spec.model import ModelArch

# ---------------------------------------------------------------------------------------------
# Fused kernels with the saved-tensor footprint of the implementations the model assumes.


def _wide(x: torch.Tensor) -> torch.Tensor:
    """Statistics in at least fp32."""
    return x.float() if x.element_size() < 4 else x


class _FusedSwiGLU(torch.autograd.Function):
    """silu(gate) * up from one [.., 2f] tensor; keeps only that tensor for backward."""

    @staticmethod
    def forward(ctx: Any, gate_up: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(gate_up)
        if gate_up.device.type == "meta":  # shapes only: skip the elementwise arithmetic
            return gate_up.new_empty((*gate_up.shape[:-1], gate_up.shape[-1] // 2))
        gate, up = gate_up.chunk(2, dim=-1)
        return F.silu(gate) * up

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> torch.Tensor:
        (gate_up,) = ctx.saved_tensors
        if gate_up.device.type == "meta":
            return torch.empty_like(gate_up)
        gate, up = gate_up.chunk(2, dim=-1)
        sig = torch.sigmoid(gate)
        silu = gate * sig
        d_gate = grad * up * sig * (1 + gate * (1 - sig))
        return torch.cat([d_gate, grad * silu], dim=-1)


class _FusedRMSNorm(torch.autograd.Function):
    """x / rms(x) * w; keeps x and a per-row fp32 1/rms (Apex / Transformer Engine)."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, weight: torch.Tensor, eps: float) -> torch.Tensor:
        if x.device.type == "meta":  # shapes only: skip the elementwise arithmetic
            rstd = x.new_empty((*x.shape[:-1], 1), dtype=torch.float32)
            ctx.save_for_backward(x, weight, rstd)
            return torch.empty_like(x)
        rstd = torch.rsqrt(_wide(x).pow(2).mean(-1, keepdim=True) + eps)
        ctx.save_for_backward(x, weight, rstd)
        return (_wide(x) * rstd).to(x.dtype) * weight

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, None]:
        x, weight, rstd = ctx.saved_tensors
        if x.device.type == "meta":
            return torch.empty_like(x), torch.empty_like(weight), None
        gf = _wide(grad)
        xhat = _wide(x) * rstd
        gw = gf * _wide(weight)
        dx = rstd * (gw - xhat * (gw * xhat).mean(-1, keepdim=True))
        dw = (gf * xhat).reshape(-1, x.shape[-1]).sum(0)
        return dx.to(x.dtype), dw.to(weight.dtype), None


class _FusedLayerNorm(torch.autograd.Function):
    """(x - mean) / std * w (no bias); keeps x and per-row fp32 mean and 1/std, as
    torch's native layer_norm and Apex's fused kernel do."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, weight: torch.Tensor, eps: float) -> torch.Tensor:
        if x.device.type == "meta":  # shapes only: skip the elementwise arithmetic
            mean = x.new_empty((*x.shape[:-1], 1), dtype=torch.float32)
            ctx.save_for_backward(x, weight, mean, torch.empty_like(mean))
            return torch.empty_like(x)
        xf = _wide(x)
        mean = xf.mean(-1, keepdim=True)
        rstd = torch.rsqrt(xf.var(-1, keepdim=True, unbiased=False) + eps)
        ctx.save_for_backward(x, weight, mean, rstd)
        return ((xf - mean) * rstd).to(x.dtype) * weight

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, None]:
        x, weight, mean, rstd = ctx.saved_tensors
        if x.device.type == "meta":
            return torch.empty_like(x), torch.empty_like(weight), None
        xhat = (_wide(x) - mean) * rstd
        gf = _wide(grad)
        gw = gf * _wide(weight)
        dx = rstd * (gw - gw.mean(-1, keepdim=True) - xhat * (gw * xhat).mean(-1, keepdim=True))
        dw = (gf * xhat).reshape(-1, x.shape[-1]).sum(0)
        return dx.to(x.dtype), dw.to(weight.dtype), None


class _MetaFlashAttention(torch.autograd.Function):
    """Shapes and saved tensors of FlashAttention-2 on the meta device (no arithmetic)."""

    @staticmethod
    def forward(ctx: Any, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        b, a, s, _ = q.shape
        dv = v.shape[-1]
        # The CUDA kernel writes its output as [b, s, a, dv]; callers see a [b, a, s, dv] view.
        out = torch.empty((b, s, a, dv), dtype=q.dtype, device=q.device).transpose(1, 2)
        lse = torch.empty((b, a, s), dtype=torch.float32, device=q.device)
        ctx.save_for_backward(q, k, v, out, lse)
        return out

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        q, k, v, _, _ = ctx.saved_tensors
        return torch.empty_like(q), torch.empty_like(k), torch.empty_like(v)


# ---------------------------------------------------------------------------------------------


class Norm(nn.Module):
    """LayerNorm or RMSNorm with a scale and no bias (count_params counts h per norm)."""

    def __init__(self, hidden: int, kind: str, eps: float = 1e-5) -> None:
        super().__init__()
        self.kind = kind
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(hidden))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        fn = _FusedRMSNorm if self.kind == "rmsnorm" else _FusedLayerNorm
        out: torch.Tensor = fn.apply(x, self.weight, self.eps)
        return out


def _rotate(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    half = x.shape[-1] // 2
    x1, x2 = x[..., :half], x[..., half:]
    return x * cos + torch.cat([-x2, x1], dim=-1) * sin


def _attend(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, flash: bool) -> torch.Tensor:
    """Causal attention of q [b, a, s, dqk] over k [b, g, s, dqk], v [b, g, s, dv]."""
    a, g = q.shape[1], k.shape[1]
    if flash and q.device.type == "meta":
        out: torch.Tensor = _MetaFlashAttention.apply(q, k, v)
        return out
    if flash:
        return F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=g != a)
    # Unfused: the s x s scores are materialised (scaled inside the softmax, as Megatron's
    # fused scale-mask-softmax, so the scaled copy of q is not kept).
    rep = a // g
    k2 = k.repeat_interleave(rep, dim=1) if rep > 1 else k
    v2 = v.repeat_interleave(rep, dim=1) if rep > 1 else v
    s = q.shape[2]
    mask = torch.ones(s, s, dtype=torch.bool, device=q.device).triu(1)
    scores = (q @ k2.transpose(-1, -2)).masked_fill(mask, float("-inf"))
    return torch.softmax(scores * (1.0 / math.sqrt(q.shape[-1])), dim=-1) @ v2


class Attention(nn.Module):
    """Grouped-query attention: Q [h, a d], K and V [h, g d], O [a d, h]."""

    def __init__(self, arch: ModelArch, flash: bool) -> None:
        super().__init__()
        h, a, g, d = arch.hidden, arch.heads, arch.kv_heads, arch.head_dim
        self.a, self.g, self.d, self.flash = a, g, d, flash
        self.wq = nn.Linear(h, a * d, bias=False)
        self.wk = nn.Linear(h, g * d, bias=False)
        self.wv = nn.Linear(h, g * d, bias=False)
        self.wo = nn.Linear(a * d, h, bias=False)

    def forward(self, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
        b, s, _ = x.shape
        q = self.wq(x).view(b, s, self.a, self.d).transpose(1, 2)
        k = self.wk(x).view(b, s, self.g, self.d).transpose(1, 2)
        v = self.wv(x).view(b, s, self.g, self.d).transpose(1, 2)
        o = _attend(_rotate(q, cos, sin), _rotate(k, cos, sin), v, self.flash)
        out: torch.Tensor = self.wo(o.transpose(1, 2).reshape(b, s, self.a * self.d))
        return out


class LatentAttention(nn.Module):
    """Multi-head latent attention (DeepSeek-V2 section 2.1, V3 config.json): queries through
    an optional q_lora latent, keys and values through the cached kv_lora latent plus one
    shared rotary key of width r; per head, queries and keys are d + r wide, values dv."""

    def __init__(self, arch: ModelArch, flash: bool) -> None:
        super().__init__()
        h, a, d = arch.hidden, arch.heads, arch.head_dim
        self.a, self.d, self.flash = a, d, flash
        self.r = arch.qk_rope_head_dim or 0
        self.dv = arch.v_head_dim or d
        self.kv_lora = arch.kv_lora_rank or 0
        q_lora = arch.q_lora_rank
        dqk = d + self.r
        if q_lora:
            self.q_a: nn.Module = nn.Linear(h, q_lora, bias=False)
            self.q_norm: nn.Module = Norm(q_lora, "rmsnorm")
            self.q_b = nn.Linear(q_lora, a * dqk, bias=False)
        else:
            self.q_a, self.q_norm = nn.Identity(), nn.Identity()
            self.q_b = nn.Linear(h, a * dqk, bias=False)
        self.kv_a = nn.Linear(h, self.kv_lora + self.r, bias=False)
        self.kv_norm = Norm(self.kv_lora, "rmsnorm")
        self.kv_b = nn.Linear(self.kv_lora, a * (d + self.dv), bias=False)
        self.wo = nn.Linear(a * self.dv, h, bias=False)

    def forward(self, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
        b, s, _ = x.shape
        a, d, r = self.a, self.d, self.r
        q = self.q_b(self.q_norm(self.q_a(x))).view(b, s, a, d + r).transpose(1, 2)
        q_nope, q_rope = q.split([d, r], dim=-1)
        latent, k_rope = self.kv_a(x).split([self.kv_lora, r], dim=-1)
        kv = self.kv_b(self.kv_norm(latent)).view(b, s, a, d + self.dv).transpose(1, 2)
        k_nope, v = kv.split([d, self.dv], dim=-1)
        rc, rs = cos[..., :r], sin[..., :r]
        k_rope = _rotate(k_rope.unsqueeze(1), rc, rs).expand(b, a, s, r)
        q = torch.cat([q_nope, _rotate(q_rope, rc, rs)], dim=-1)
        k = torch.cat([k_nope, k_rope], dim=-1)
        o = _attend(q, k, v.contiguous(), self.flash)
        out: torch.Tensor = self.wo(o.transpose(1, 2).reshape(b, s, a * self.dv))
        return out


class MLP(nn.Module):
    def __init__(self, hidden: int, inner: int, kind: str) -> None:
        super().__init__()
        self.kind = kind
        self.up = nn.Linear(hidden, (2 if kind == "swiglu" else 1) * inner, bias=False)
        self.down = nn.Linear(inner, hidden, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out: torch.Tensor = self.down(_activate(self.up(x), self.kind))
        return out


def _activate(u: torch.Tensor, kind: str) -> torch.Tensor:
    if kind == "swiglu":
        out: torch.Tensor = _FusedSwiGLU.apply(u)
        return out
    return F.gelu(u, approximate="tanh")


class MoE(nn.Module):
    """Top-k routed experts with grouped weights (Megatron-LM's GroupedMLP: one [E, h, .]
    tensor per matrix), plus shared experts. Tokens are sorted by expert and each expert
    runs on its contiguous slice. On the meta device, where routing cannot be computed,
    tokens are spread evenly over the experts (the analytic model's balanced load) and all
    experts run as one batched matrix multiply."""

    def __init__(self, arch: ModelArch) -> None:
        super().__init__()
        f = arch.expert_ffn_hidden or arch.ffn_hidden
        e, h = arch.experts, arch.hidden
        self.k, self.kind = arch.experts_per_token, arch.mlp
        self.router = nn.Linear(h, e, bias=False)
        self.w_up = nn.Parameter(torch.empty(e, h, (2 if arch.mlp == "swiglu" else 1) * f))
        self.w_down = nn.Parameter(torch.empty(e, f, h))
        for wt in (self.w_up, self.w_down):
            nn.init.normal_(wt, std=0.02)
        self.shared = MLP(h, f * arch.shared_experts, arch.mlp) if arch.shared_experts else None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, s, h = x.shape
        flat = x.reshape(-1, h)
        t, e = flat.shape[0], self.w_up.shape[0]
        probs = torch.softmax(self.router(flat).float(), dim=-1)
        weight, chosen = probs.topk(self.k, dim=-1)
        weight = (weight / weight.sum(-1, keepdim=True)).to(x.dtype)
        if x.device.type == "meta":
            order = torch.empty(t * self.k, dtype=torch.long, device=x.device)
        else:
            order = chosen.reshape(-1).argsort()
        routed = flat.index_select(0, order // self.k)
        if x.device.type == "meta" and (t * self.k) % e == 0:
            grouped = routed.view(e, t * self.k // e, h)
            out = torch.bmm(_activate(torch.bmm(grouped, self.w_up), self.kind), self.w_down)
            expert_out = out.reshape(t * self.k, h)
        else:
            if x.device.type == "meta":
                counts = [t * self.k // e + (1 if i < (t * self.k) % e else 0) for i in range(e)]
            else:
                counts = torch.bincount(chosen.reshape(-1), minlength=e).tolist()
            outs = [
                _activate(chunk @ self.w_up[i], self.kind) @ self.w_down[i]
                for i, chunk in enumerate(routed.split(counts, dim=0))
                if chunk.shape[0]
            ]
            expert_out = torch.cat(outs, dim=0)
        # Un-permute (an index gather keeps only its index), then weight each token's k
        # expert outputs by its router probabilities and sum them.
        unsorted = expert_out.index_select(0, order.argsort())
        y = (unsorted.view(t, self.k, h) * weight.unsqueeze(-1)).sum(1)
        if self.shared is not None:
            y = y + self.shared(flat)
        return y.view(b, s, h)


class Block(nn.Module):
    def __init__(self, arch: ModelArch, moe: bool, flash: bool) -> None:
        super().__init__()
        self.norm1 = Norm(arch.hidden, arch.norm)
        self.attn: nn.Module = LatentAttention(arch, flash) if arch.is_mla else Attention(arch, flash)
        self.norm2 = Norm(arch.hidden, arch.norm)
        self.mlp: nn.Module = MoE(arch) if moe else MLP(arch.hidden, arch.ffn_hidden, arch.mlp)

    def forward(self, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.norm1(x), cos, sin)
        out: torch.Tensor = x + self.mlp(self.norm2(x))
        return out


class Decoder(nn.Module):
    """The whole model; `forward(tokens [b, s]) -> logits [b, s, V]`."""

    def __init__(self, arch: ModelArch, flash: bool = True) -> None:
        super().__init__()
        self.arch = arch
        self.vocab_size = arch.vocab
        self.embed = nn.Embedding(arch.vocab, arch.hidden)
        self.layers = nn.ModuleList(
            Block(arch, moe=arch.is_moe and i >= arch.dense_layers, flash=flash) for i in range(arch.layers)
        )
        self.norm = Norm(arch.hidden, arch.norm)
        self.head = None if arch.tied_embeddings else nn.Linear(arch.hidden, arch.vocab, bias=False)

    def _rope(self, s: int, like: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        d = self.arch.qk_rope_head_dim if self.arch.is_mla else self.arch.head_dim
        d = max(2, d or 2)
        inv = 1.0 / (10000.0 ** (torch.arange(0, d, 2, device=like.device, dtype=torch.float32) / d))
        ang = torch.arange(s, device=like.device, dtype=torch.float32)[:, None] * inv[None, :]
        ang = torch.cat([ang, ang], dim=-1)
        return ang.cos().to(like.dtype), ang.sin().to(like.dtype)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        x = self.embed(tokens)
        with torch.no_grad():
            cos, sin = self._rope(tokens.shape[1], x)
        for layer in self.layers:
            x = layer(x, cos, sin)
        x = self.norm(x)
        weight = self.embed.weight if self.head is None else self.head.weight
        return F.linear(x, weight)


def build_decoder(
    arch: ModelArch,
    device: str | torch.device = "cpu",
    dtype: torch.dtype = torch.float32,
    flash: bool = True,
    seed: int | None = 0,
) -> Decoder:
    """The decoder for `arch` on `device` (use "meta" for models too large to hold)."""
    if seed is not None and str(device) != "meta":
        torch.manual_seed(seed)
    with torch.device(device):
        model = Decoder(arch, flash=flash)
    return model.to(dtype=dtype)


def lm_loss(logits: torch.Tensor, tokens: torch.Tensor) -> torch.Tensor:
    """Next-token cross-entropy, computed in fp32 as Megatron-LM does."""
    v = logits.shape[-1]
    return F.cross_entropy(logits[:, :-1].reshape(-1, v).float(), tokens[:, 1:].reshape(-1))


def param_count(model: nn.Module) -> int:
    return sum(p.numel() for p in model.parameters())
