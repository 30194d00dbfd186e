"""Alternative: the Noam rate as a sympy expression of the paper's formula, compiled once (on first use) by lambdify."""
import functools


@functools.cache
def _noam_formula():
    import sympy  # imported on the first call, as the schedule is first needed

    step, d_model, warmup, factor = sympy.symbols("step d_model warmup factor", positive=True)
    rate = factor * d_model ** sympy.Rational(-1, 2) * sympy.Min(step ** sympy.Rational(-1, 2),
                                                                 step * warmup ** sympy.Rational(-3, 2))
    return sympy.lambdify((step, d_model, warmup, factor), rate, modules="math")


def noam_lr(step, d_model, warmup_steps, factor=1.0):
    return float(_noam_formula()(max(step, 1), d_model, warmup_steps, factor))
