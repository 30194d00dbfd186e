"""Planted mistake: batch norm's habit in a layer norm: running statistics gathered in training, used in eval mode
instead of each position's own."""
# expect: mode-dependent


class LayerNorm(LayerNorm):
    running_mean, running_var = 0.0, 1.0

    def forward(self, x):
        if self.training:
            self.running_mean = 0.9 * self.running_mean + 0.1 * x.mean().item()
            self.running_var = 0.9 * self.running_var + 0.1 * x.var(dim=-1, unbiased=False).mean().item()
            return layer_norm(x, self.gamma, self.beta, self.eps)
        return self.gamma * (x - self.running_mean) / (self.running_var + self.eps) ** 0.5 + self.beta
