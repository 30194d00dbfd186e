"""Sanity checks of kata 9.10: quick shape checks (`python sanity.py` here; the kata's notebook runs them too).

They are no grading: `kata check 9.10` checks far more.
"""

import torch
from exercise import Transformer, greedy_decode, label_smoothing_loss, make_optimizer, noam_lr

assert noam_lr(4000, 512, 4000) > noam_lr(100, 512, 4000), "the rate rises during warm-up"
assert noam_lr(4000, 512, 4000) > noam_lr(40000, 512, 4000), "and decays after it"
logits, target = torch.randn(2, 5, 11), torch.randint(0, 11, (2, 5))
loss = label_smoothing_loss(logits, target, smoothing=0.1)
assert loss.dim() == 0, f"the loss should be a scalar, got shape {tuple(loss.shape)}"
model = Transformer(12, 12, d_model=16, n_heads=4, n_layers=1, d_ff=32, dropout=0.0).eval()
optimizer = make_optimizer(model)
assert optimizer.defaults["betas"] == (0.9, 0.98), "Adam with betas (0.9, 0.98), as in the paper"
out = greedy_decode(model, torch.tensor([[3, 4, 5, 6]]), max_len=6, bos_id=1, eos_id=2)
assert out.shape[0] == 1 and out.shape[1] <= 6 and out[0, 0] == 1, "greedy_decode: (batch, n <= max_len), bos first"
print("noam_lr, label_smoothing_loss, make_optimizer, greedy_decode: they run and look right")
