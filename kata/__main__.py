"""`python -m kata` is the `kata` command."""

from kata.cli import main

main()
