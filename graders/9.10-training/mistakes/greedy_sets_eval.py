"""Planted mistake: greedy_decode switches the model to eval mode itself, and leaves it there."""
# expect: greedy-changes-mode

_decode_greedily = greedy_decode  # the loop itself is right


def greedy_decode(model, src, max_len, bos_id, eos_id, src_mask=None):
    model.eval()  # dropout off for decoding, never switched back
    return _decode_greedily(model, src, max_len, bos_id, eos_id, src_mask)
