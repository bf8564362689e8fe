"""`python -m desk` runs the desk command."""

from desk.cli import main

main()
