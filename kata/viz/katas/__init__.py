"""The pictures of each kata that has some, one module per kata named after its slug (`attention.py` for
kata 9.3 attention): `SUBJECT`, `NEEDS` and `build(module)`, as `kata.viz.pictures` says."""
