"""Planted mistake: call PyTorch's fused attention instead of writing it."""
# expect: forbidden


def scaled_dot_product_attention(q, k, v, mask=None):
    out = torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    weights = softmax(q @ k.transpose(-2, -1) / math.sqrt(q.size(-1)), dim=-1)
    return out, weights
