"""Planted mistake: the head's projections built with bias=False."""
# expect: bias-missing


class AttentionHead(AttentionHead):
    def __init__(self, d_model: int, d_head: int):
        super().__init__(d_model, d_head)
        self.w_q = nn.Linear(d_model, d_head, bias=False)
        self.w_k = nn.Linear(d_model, d_head, bias=False)
        self.w_v = nn.Linear(d_model, d_head, bias=False)
