"""The rich console the commands print their tables with. On a terminal it is the terminal's
width; written to a file or a pipe it is :data:`FILE_WIDTH` columns, so a table is written whole
(rich would take the width of whichever standard stream is a terminal, or 80, and cut the
table's cells to fit). ``COLUMNS`` set in the environment still decides."""
from __future__ import annotations

from rich.console import Console, ConsoleDimensions

FILE_WIDTH = 1000


class OutputConsole(Console):
    """A rich Console whose width, when it does not write to a terminal, is :data:`FILE_WIDTH`
    (decided at each print: a test's captured stdout is a file too)."""

    @property
    def size(self) -> ConsoleDimensions:
        size = Console.size.fget(self)
        if self._width is None and not self.is_terminal and not self._environ.get("COLUMNS"):
            return ConsoleDimensions(FILE_WIDTH, size.height)
        return size

    @size.setter
    def size(self, new_size) -> None:
        Console.size.fset(self, new_size)
