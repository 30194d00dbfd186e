"""Our encoder/decoder blocks and stacks <-> PyTorch's `nn.Transformer*` layers, for graders.

Katas 9.6 (encoder), 9.7 (decoder) and 9.9 (the full model) compare the student's modules with
PyTorch's own on equal terms: the same weights, eval mode, dropout 0, `batch_first=True`, the same
`norm_first` and eps, no nested tensors. This module holds what that takes:

Names. The course's contract (course.md) fixes the parameter names, so one mapping serves every kata:

    ours                                      torch
    <p>self_attn.w_q/w_k/w_v.weight|bias      <p>self_attn.in_proj_weight|in_proj_bias  (rows: q, k, v)
    <p>self_attn.w_o.weight|bias              <p>self_attn.out_proj.weight|bias
    <p>cross_attn.<as self_attn>              <p>multihead_attn.<as self_attn>
    <p>ffn.linear_1.weight|bias               <p>linear1.weight|bias
    <p>ffn.linear_2.weight|bias               <p>linear2.weight|bias
    <p>norm_1|norm_2|norm_3.gamma|beta        <p>norm1|norm2|norm3.weight|bias
    <p>norm.gamma|beta  (a stack's final)     <p>norm.weight|bias

`<p>` is any prefix (`layers.3.`, `encoder.layers.0.`, ...), so blocks, stacks and whole models map
alike. `to_torch_state` and `from_torch_state` translate whole name -> tensor mappings (parameters,
or their gradients) in either direction; `to_torch_name` / `from_torch_names` translate names.

Modules. `torch_encoder_layer`, `torch_decoder_layer`, `torch_encoder`, `torch_decoder` build the
PyTorch module that should equal one of ours and load our weights into it with `strict=True`; a
module whose parameters do not follow the contract raises `WeightMappingError`, whose message names
the missing and unexpected parameters in OUR names (fit to show a student).

Masks. Ours are bool, True = may attend, broadcastable to (batch, heads, q_len, k_len); torch's are
True = blocked. `torch_attn_mask` turns any of ours into torch's 3-D per-head form
(batch * heads, q_len, k_len), which `nn.MultiheadAttention` accepts as `attn_mask`, so padding,
causal and combined masks all go through one path. `torch_encoder_forward` / `torch_decoder_forward`
call a torch layer or stack with our masks.

Helpers. `randomize_` fills every parameter with reproducible random values (gammas near 1, betas and
biases near 0, weights scaled by fan-in), so that two norms or two projections swapped by mistake
give different outputs; `count_parameters`, `encoder_block_size`, `decoder_block_size` give exact
parameter counts.

Traps avoided here (checked on torch 2.13, see notes/torch-references.md): `nn.TransformerEncoder`
defaults to nested tensors (padded positions come out as zeros): built with
`enable_nested_tensor=False`; a post-norm stack has no final norm in the paper (torch's
`nn.Transformer` always adds one): built with `norm=None`; a 2-D attention mask equal to the causal
one may be detected as `is_causal`: masks are passed in 3-D form. The layers' inference fast path is
not taken while autograd records (parameters require grad), which is how graders call them.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping

import torch
from torch import nn

from kata.toolkit import remote

__all__ = [
    "WeightMappingError", "count_parameters", "decoder_block_size", "encoder_block_size", "from_torch_names",
    "from_torch_state", "named_parameters", "randomize_", "summarise_names", "to_torch_name", "to_torch_state",
    "torch_attn_mask",
    "torch_decoder", "torch_decoder_forward", "torch_decoder_layer", "torch_encoder", "torch_encoder_forward",
    "torch_encoder_layer",
]

LAYER_NORM_EPS = 1e-5  # LayerNorm's default eps in the contract (kata 9.2), and torch's

_ATTENTION = {"self_attn": "self_attn", "cross_attn": "multihead_attn"}
_ATTENTION_BACK = {v: k for k, v in _ATTENTION.items()}
_QKV = ("q", "k", "v")

# ours -> torch, for every name except the q/k/v projections (which merge into in_proj_*).
_OURS = re.compile(
    r"^(?P<p>(?:.*\.)?)(?:"
    r"(?P<attn>self_attn|cross_attn)\.w_o\.(?P<attn_kind>weight|bias)"
    r"|ffn\.linear_(?P<lin>[12])\.(?P<lin_kind>weight|bias)"
    r"|norm_(?P<norm>[123])\.(?P<norm_kind>gamma|beta)"
    r"|norm\.(?P<final_kind>gamma|beta)"
    r")$")
_OURS_QKV = re.compile(r"^(?P<p>(?:.*\.)?)(?P<attn>self_attn|cross_attn)\.w_(?P<which>[qkv])\.(?P<kind>weight|bias)$")
_NORM_KIND = {"gamma": "weight", "beta": "bias"}
_NORM_KIND_BACK = {v: k for k, v in _NORM_KIND.items()}

# torch -> ours.
_THEIRS = re.compile(
    r"^(?P<p>(?:.*\.)?)(?:"
    r"(?P<attn>self_attn|multihead_attn)\.(?:in_proj_(?P<in_kind>weight|bias)|out_proj\.(?P<out_kind>weight|bias))"
    r"|linear(?P<lin>[12])\.(?P<lin_kind>weight|bias)"
    r"|norm(?P<norm>[123]?)\.(?P<norm_kind>weight|bias)"
    r")$")


class WeightMappingError(ValueError):
    """Our module's parameters do not map onto the torch module's: names missing, extra or misshapen.

    `missing` and `unexpected` are OUR parameter names; the message lists them for the student.
    """

    def __init__(self, message: str, missing: Iterable[str] = (), unexpected: Iterable[str] = ()):
        super().__init__(message)
        self.missing = tuple(missing)
        self.unexpected = tuple(unexpected)


# ----------------------------------------------------------------------------------------------------------
# Names and state mappings


def to_torch_name(name: str) -> str | None:
    """torch's name for one of our parameter names, or None when it has no counterpart.

    The q/k/v projections all map to the same `in_proj_weight` / `in_proj_bias` (stacked by rows).
    """
    m = _OURS_QKV.match(name)
    if m:
        return f"{m['p']}{_ATTENTION[m['attn']]}.in_proj_{m['kind']}"
    m = _OURS.match(name)
    if not m:
        return None
    if m["attn"]:
        return f"{m['p']}{_ATTENTION[m['attn']]}.out_proj.{m['attn_kind']}"
    if m["lin"]:
        return f"{m['p']}linear{m['lin']}.{m['lin_kind']}"
    if m["norm"]:
        return f"{m['p']}norm{m['norm']}.{_NORM_KIND[m['norm_kind']]}"
    return f"{m['p']}norm.{_NORM_KIND[m['final_kind']]}"


def from_torch_names(name: str) -> tuple[str, ...]:
    """Our names for one of torch's parameter names (three for an `in_proj_*`), () when none."""
    m = _THEIRS.match(name)
    if not m:
        return ()
    p = m["p"]
    if m["attn"]:
        attn = _ATTENTION_BACK[m["attn"]]
        if m["in_kind"]:
            return tuple(f"{p}{attn}.w_{which}.{m['in_kind']}" for which in _QKV)
        return (f"{p}{attn}.w_o.{m['out_kind']}",)
    if m["lin"]:
        return (f"{p}ffn.linear_{m['lin']}.{m['lin_kind']}",)
    suffix = f"_{m['norm']}" if m["norm"] else ""
    return (f"{p}norm{suffix}.{_NORM_KIND_BACK[m['norm_kind']]}",)


def named_parameters(module: nn.Module | remote.RemoteObject | Mapping[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """name -> parameter of a module (here, or the student's: by value, with its gradient), listing a module
    reused under several names once per name (as `state_dict` does), or a copy of a mapping given as is.
    Buffers are not included."""
    if isinstance(module, nn.Module) or remote.is_a(module, "Module"):
        return dict(module.named_parameters(remove_duplicate=False))
    return dict(module)


def to_torch_state(state: nn.Module | Mapping[str, torch.Tensor], *, strict: bool = True) -> dict[str, torch.Tensor]:
    """Translate our name -> tensor mapping (a module's parameters, or their gradients) to torch's names.

    w_q, w_k, w_v of one attention are concatenated by rows into in_proj_weight (3 d_model, d_model) and
    in_proj_bias (3 d_model,). With strict=True a name without a torch counterpart, or an attention
    without all three of w_q, w_k, w_v, raises WeightMappingError; with strict=False such names pass
    through unchanged (embeddings and generators of a full model, say). Tensors are not copied, except
    by the concatenation; a None (a missing gradient) maps to None, and makes its in_proj None.
    """
    named = named_parameters(state)
    out: dict[str, torch.Tensor | None] = {}
    qkv: dict[str, dict[str, torch.Tensor | None]] = {}
    unknown = []
    for name, tensor in named.items():
        m = _OURS_QKV.match(name)
        if m:
            qkv.setdefault(to_torch_name(name), {})[m["which"]] = tensor
            continue
        target = to_torch_name(name)
        if target is None:
            if strict:
                unknown.append(name)
            else:
                out[name] = tensor
            continue
        out[target] = tensor
    incomplete = []
    for target, parts in qkv.items():
        if set(parts) != set(_QKV):
            ours = from_torch_names(target)
            incomplete.extend(n for n, which in zip(ours, _QKV, strict=True) if which not in parts)
            continue
        out[target] = None if any(parts[w] is None for w in _QKV) else torch.cat([parts[w] for w in _QKV], dim=0)
    if unknown or incomplete:
        lines = []
        if incomplete:
            lines.append("missing: " + ", ".join(incomplete))
        if unknown:
            lines.append("not in the contract: " + ", ".join(unknown))
        raise WeightMappingError("the parameters do not follow the contract's names (" + "; ".join(lines) + ")",
                                 missing=incomplete, unexpected=unknown)
    return out


def from_torch_state(state: nn.Module | Mapping[str, torch.Tensor], *, strict: bool = True) -> dict[str, torch.Tensor]:
    """Translate torch's name -> tensor mapping to our names (the inverse of `to_torch_state`).

    in_proj_weight / in_proj_bias are split by rows into w_q, w_k, w_v (views, not copies). Names without
    a counterpart (dropout-free torch layers have none) raise WeightMappingError when strict, else pass.
    """
    out: dict[str, torch.Tensor] = {}
    unknown = []
    for name, tensor in named_parameters(state).items():
        ours = from_torch_names(name)
        if not ours:
            if strict:
                unknown.append(name)
            else:
                out[name] = tensor
        elif len(ours) == 3:
            for our_name, part in zip(ours, tensor.chunk(3, dim=0), strict=True):
                out[our_name] = part
        else:
            out[ours[0]] = tensor
    if unknown:
        raise WeightMappingError("torch parameters without a counterpart in the contract: " + ", ".join(unknown),
                                 unexpected=unknown)
    return out


def summarise_names(names: Iterable[str]) -> str:
    """Names joined for a message, one entry per name with its layer indices gathered:
    `layers.{0,1,2}.norm_1.gamma` instead of three names."""
    groups: dict[str, list[str]] = {}
    for name in names:
        key = re.sub(r"(^|\.)layers\.(\d+)\.", r"\1layers.{}.", name, count=1)
        index = re.search(r"(?:^|\.)layers\.(\d+)\.", name)
        groups.setdefault(key, []).append(index.group(1) if index else "")
    parts = []
    for key, indices in groups.items():
        if "{}" not in key:
            parts.append(key)
        else:
            parts.append(key.replace("{}", indices[0] if len(indices) == 1 else "{" + ",".join(indices) + "}"))
    return ", ".join(parts)


def _load_into_torch(target: nn.Module, ours: nn.Module | Mapping[str, torch.Tensor], what: str) -> None:
    """Load our parameters into a torch module, strictly; explain a mismatch in our names."""
    expected_ours = [n for name in target.state_dict() for n in from_torch_names(name)]
    given = named_parameters(ours)
    missing = [n for n in expected_ours if n not in given]
    unexpected = [n for n in given if n not in expected_ours]
    if missing or unexpected:
        parts = []
        if missing:
            parts.append("missing " + summarise_names(missing))
        if unexpected:
            parts.append("unexpected " + summarise_names(unexpected))
        raise WeightMappingError(f"the parameters do not match {what}'s, as the contract names them: "
                                 + "; ".join(parts), missing=missing, unexpected=unexpected)
    mapped = to_torch_state(given)
    reference_state = target.state_dict()
    wrong = [f"{name} {tuple(mapped[name].shape)} (expected {tuple(t.shape)})"
             for name, t in reference_state.items() if mapped[name].shape != t.shape]
    if wrong:
        raise WeightMappingError(f"parameter shapes do not match {what}'s (torch names): " + ", ".join(wrong))
    with torch.no_grad():
        target.load_state_dict({k: v.detach() for k, v in mapped.items()}, strict=True)


# ----------------------------------------------------------------------------------------------------------
# Torch modules equal to ours


def _factory(ours: nn.Module | Mapping[str, torch.Tensor]) -> dict:
    first = next(iter(named_parameters(ours).values()), None)
    if first is None:
        raise WeightMappingError("the module has no parameters")
    return {"device": first.device, "dtype": first.dtype}


def _sizes(ours: nn.Module | Mapping[str, torch.Tensor], prefix: str = "") -> tuple[int, int]:
    """(d_model, d_ff) read from the first feed-forward network's first linear layer."""
    named = named_parameters(ours)
    for name, tensor in named.items():
        if name.startswith(prefix) and name.endswith("ffn.linear_1.weight") and tensor.dim() == 2:
            d_ff, d_model = tensor.shape
            return int(d_model), int(d_ff)
    raise WeightMappingError("no ffn.linear_1.weight of shape (d_ff, d_model) among the parameters",
                             missing=("ffn.linear_1.weight",))


def _layer_kwargs(ours, n_heads: int, norm_first: bool, eps: float) -> dict:
    d_model, d_ff = _sizes(ours)
    return dict(d_model=d_model, nhead=n_heads, dim_feedforward=d_ff, dropout=0.0, activation="relu",
                layer_norm_eps=eps, batch_first=True, norm_first=norm_first, **_factory(ours))


def torch_encoder_layer(block: nn.Module | Mapping[str, torch.Tensor], n_heads: int, *, norm_first: bool,
                        eps: float = LAYER_NORM_EPS) -> nn.TransformerEncoderLayer:
    """`nn.TransformerEncoderLayer` holding `block`'s weights: equal to our EncoderBlock in eval.

    Args:
        block:      our EncoderBlock (or its name -> parameter mapping); d_model and d_ff, the device and
                    dtype are read from its parameters.
        n_heads:    the block's number of heads (weights do not tell it).
        norm_first: the block's norm placement.
        eps:        LayerNorm eps (the contract's default).

    Returns the layer in eval mode: dropout 0, ReLU, batch_first=True. Raises WeightMappingError
    when the block's parameters do not follow the contract.
    """
    layer = nn.TransformerEncoderLayer(**_layer_kwargs(block, n_heads, norm_first, eps))
    _load_into_torch(layer, block, "nn.TransformerEncoderLayer")
    return layer.eval()


def torch_decoder_layer(block: nn.Module | Mapping[str, torch.Tensor], n_heads: int, *, norm_first: bool,
                        eps: float = LAYER_NORM_EPS) -> nn.TransformerDecoderLayer:
    """`nn.TransformerDecoderLayer` holding `block`'s weights: equal to our DecoderBlock in eval.

    Same arguments as `torch_encoder_layer`; `cross_attn` becomes torch's `multihead_attn`.
    """
    layer = nn.TransformerDecoderLayer(**_layer_kwargs(block, n_heads, norm_first, eps))
    _load_into_torch(layer, block, "nn.TransformerDecoderLayer")
    return layer.eval()


def _n_layers(ours) -> int:
    indices = {int(m.group(1)) for name in named_parameters(ours) if (m := re.match(r"^layers\.(\d+)\.", name))}
    if not indices:
        raise WeightMappingError("no parameters under layers.<i>.", missing=("layers.0.*",))
    return max(indices) + 1


def _has_final_norm(ours) -> bool:
    return any(name in ("norm.gamma", "norm.beta") for name in named_parameters(ours))


def torch_encoder(encoder: nn.Module | Mapping[str, torch.Tensor], n_heads: int, *, norm_first: bool,
                  final_norm: bool | None = None, eps: float = LAYER_NORM_EPS) -> nn.TransformerEncoder:
    """`nn.TransformerEncoder` holding `encoder`'s weights: equal to our Encoder in eval.

    Args:
        encoder:    our Encoder (or its name -> parameter mapping: layers.<i>.*, norm.*).
        n_heads, norm_first, eps: as for `torch_encoder_layer`.
        final_norm: whether torch's stack gets a final LayerNorm. None (default): exactly when
                    `encoder` has norm.gamma / norm.beta. The contract wants one iff norm_first; pass
                    `final_norm=norm_first` to build the stack the contract describes.

    The number of layers is read from the parameter names. Nested tensors are disabled, so padded
    positions are computed like the others. Returns the stack in eval mode.
    """
    if final_norm is None:
        final_norm = _has_final_norm(encoder)
    kwargs = _layer_kwargs(encoder, n_heads, norm_first, eps)
    norm = nn.LayerNorm(kwargs["d_model"], eps=eps, device=kwargs["device"], dtype=kwargs["dtype"]) \
        if final_norm else None
    stack = nn.TransformerEncoder(nn.TransformerEncoderLayer(**kwargs), _n_layers(encoder), norm=norm,
                                  enable_nested_tensor=False)
    _load_into_torch(stack, encoder, "nn.TransformerEncoder")
    return stack.eval()


def torch_decoder(decoder: nn.Module | Mapping[str, torch.Tensor], n_heads: int, *, norm_first: bool,
                  final_norm: bool | None = None, eps: float = LAYER_NORM_EPS) -> nn.TransformerDecoder:
    """`nn.TransformerDecoder` holding `decoder`'s weights: equal to our Decoder in eval.

    Same arguments as `torch_encoder`.
    """
    if final_norm is None:
        final_norm = _has_final_norm(decoder)
    kwargs = _layer_kwargs(decoder, n_heads, norm_first, eps)
    norm = nn.LayerNorm(kwargs["d_model"], eps=eps, device=kwargs["device"], dtype=kwargs["dtype"]) \
        if final_norm else None
    stack = nn.TransformerDecoder(nn.TransformerDecoderLayer(**kwargs), _n_layers(decoder), norm=norm)
    _load_into_torch(stack, decoder, "nn.TransformerDecoder")
    return stack.eval()


# ----------------------------------------------------------------------------------------------------------
# Masks and forwards


def torch_attn_mask(mask: torch.Tensor | None, *, batch: int, n_heads: int, q_len: int,
                    k_len: int) -> torch.Tensor | None:
    """Our mask (bool, True = may attend, broadcastable to (batch, n_heads, q_len, k_len)) as torch's
    `attn_mask`: bool (batch * n_heads, q_len, k_len), True = blocked. None stays None."""
    if mask is None:
        return None
    if mask.dtype != torch.bool:
        raise TypeError(f"masks are bool (True = may attend), got {mask.dtype}")
    full = mask.expand(batch, n_heads, q_len, k_len)
    return ~full.reshape(batch * n_heads, q_len, k_len)


def torch_encoder_forward(module: nn.TransformerEncoderLayer | nn.TransformerEncoder, x: torch.Tensor,
                          mask: torch.Tensor | None = None, *, n_heads: int) -> torch.Tensor:
    """Run a torch encoder layer or stack on x (batch, seq, d_model) with OUR mask convention."""
    batch, seq, _ = x.shape
    attn_mask = torch_attn_mask(mask, batch=batch, n_heads=n_heads, q_len=seq, k_len=seq)
    return module(x, attn_mask)


def torch_decoder_forward(module: nn.TransformerDecoderLayer | nn.TransformerDecoder, x: torch.Tensor,
                          memory: torch.Tensor, src_mask: torch.Tensor | None = None,
                          tgt_mask: torch.Tensor | None = None, *, n_heads: int) -> torch.Tensor:
    """Run a torch decoder layer or stack with OUR masks: tgt_mask for self-attention (torch's
    `tgt_mask`), src_mask for cross-attention (torch's `memory_mask`)."""
    batch, tgt_len, _ = x.shape
    src_len = memory.shape[1]
    self_mask = torch_attn_mask(tgt_mask, batch=batch, n_heads=n_heads, q_len=tgt_len, k_len=tgt_len)
    cross_mask = torch_attn_mask(src_mask, batch=batch, n_heads=n_heads, q_len=tgt_len, k_len=src_len)
    return module(x, memory, tgt_mask=self_mask, memory_mask=cross_mask)


# ----------------------------------------------------------------------------------------------------------
# Parameters


def randomize_(module: nn.Module | remote.RemoteObject, seed: int = 0, scale: float = 0.3):
    """Fill every parameter of `module` (here, or the student's) with reproducible random values, in place
    (through `load_state_dict(strict=False)`: a parameter shared under two names is filled once); returns
    `module`.

    Norm gains (`gamma`, 1-D `weight`s of norms) get 1 + scale * N(0, 1); other 1-D parameters (betas,
    biases) scale * N(0, 1); matrices N(0, 1) / sqrt(fan_in), which keeps activations O(1). Values are
    drawn on the CPU from `seed` in parameter order, so they do not depend on the device.
    """
    generator = torch.Generator().manual_seed(seed)
    filled = {}
    for name, p in module.named_parameters():
        values = torch.randn(p.shape, generator=generator, dtype=torch.float64)
        leaf = name.rsplit(".", 1)[-1]
        if p.dim() == 1 and (leaf == "gamma" or (leaf == "weight" and "norm" in name)):
            values = 1 + scale * values
        elif p.dim() == 1:
            values = scale * values
        elif p.dim() >= 2:
            values = values / math.sqrt(p[0].numel())
        filled[name] = values.to(p.dtype)
    module.load_state_dict(filled, strict=False)
    return module


def count_parameters(module: nn.Module | remote.RemoteObject) -> int:
    """Trainable scalars, each shared tensor counted once (as an optimiser sees them)."""
    return sum(p.numel() for p in module.parameters())


def encoder_block_size(d_model: int, d_ff: int) -> int:
    """Parameters of one encoder block: 4 attention projections with biases, the feed-forward network,
    two norms. 3,152,384 for the paper's base model (d_model 512, d_ff 2048)."""
    attention = 4 * (d_model * d_model + d_model)
    ffn = d_model * d_ff + d_ff + d_ff * d_model + d_model
    return attention + ffn + 2 * 2 * d_model


def decoder_block_size(d_model: int, d_ff: int) -> int:
    """Parameters of one decoder block: the encoder block's plus cross-attention and a third norm.
    4,204,032 for the paper's base model."""
    return encoder_block_size(d_model, d_ff) + 4 * (d_model * d_model + d_model) + 2 * d_model
