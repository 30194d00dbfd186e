"""Planted mistake: the ReLU as a maximum with zeros made by torch.zeros(shape), on the default device (the CPU),
whatever the input's device: right on the CPU, a device mismatch on a GPU."""
# expect: tensor-on-default-device


class FeedForward(FeedForward):
    def forward(self, x):
        h = self.linear_1(x)
        h = torch.maximum(h, torch.zeros(h.shape, dtype=h.dtype))
        return self.linear_2(self.dropout(h))
