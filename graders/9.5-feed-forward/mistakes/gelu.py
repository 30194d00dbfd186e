"""Planted mistake: GELU (BERT's and GPT's choice) instead of the paper's ReLU."""
# expect: wrong-activation


class FeedForward(FeedForward):
    def forward(self, x):
        return self.linear_2(self.dropout(torch.nn.functional.gelu(self.linear_1(x))))
