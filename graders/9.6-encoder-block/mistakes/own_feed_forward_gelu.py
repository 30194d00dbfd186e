"""Planted mistake: a feed-forward network of the student's own, with GELU where the paper has ReLU."""
# expect: fault-in-feed-forward
# also: fault-in-encoder-block

class GeluFeedForward(FeedForward):
    def forward(self, x):
        return self.linear_2(self.dropout(torch.nn.functional.gelu(self.linear_1(x))))


class EncoderBlock(EncoderBlock):
    def __init__(self, d_model, n_heads, d_ff, dropout=0.1, norm_first=False):
        super().__init__(d_model, n_heads, d_ff, dropout, norm_first)
        self.ffn = GeluFeedForward(d_model, d_ff, dropout)
