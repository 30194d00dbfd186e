"""Planted mistake: target_mask calls causal_mask(tgt_len) without device=, so the triangle is made on the default
device (the CPU) whatever tgt's: right on the CPU, a device mismatch on a GPU."""
# expect: tensor-on-default-device


def target_mask(tgt, pad_id=None):
    causal = causal_mask(tgt.size(1))
    if pad_id is None:
        return causal
    return padding_mask(tgt, pad_id) & causal
