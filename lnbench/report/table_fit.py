"""A rich table laid out for a terminal's width with every cell readable (:func:`fit`): no word
cut, every value within two lines where the width allows, one block per row where even the
narrowest layout is too wide."""

from __future__ import annotations

from rich.console import RenderableType
from rich.table import Table
from rich.text import Text


def _cell_text(x) -> Text:
    return Text.from_markup(x) if isinstance(x, str) else x if isinstance(x, Text) else Text(str(x))


def _wrapped_lines(text: str, width: int) -> int:
    """The lines ``text`` takes wrapped greedily at its spaces into ``width`` columns (as rich wraps it)."""
    from rich.cells import cell_len

    n = 0
    for line in text.splitlines() or [""]:
        n, used = n + 1, 0
        for word in line.split():
            w = cell_len(word)
            if used and used + 1 + w > width:
                n, used = n + 1, w
            else:
                used += w + (1 if used else 0)
    return n


def _widths(column) -> tuple[int, int, int, int]:
    """A column's content widths: the narrowest (a wrapping column: its longest word, so that no
    word is ever cut; a no-wrap one: its longest line), the narrowest at which every value takes at
    most two lines, its values' longest line, and its longest line with the header."""
    from rich.cells import cell_len

    header, *cells = [_cell_text(x).plain for x in [column.header, *column.cells]]
    lines = lambda texts: max((cell_len(line) for t in texts for line in t.splitlines()), default=1)  # noqa: E731
    words = max((cell_len(word) for t in [header, *cells] for word in t.split()), default=1)
    narrowest = max(lines([header, *cells]) if column.no_wrap else words, column.min_width or 0)
    values = max(narrowest, lines(cells))
    two = next(w for w in range(narrowest, values + 1) if all(_wrapped_lines(c, w) <= 2 for c in cells))
    return narrowest, two, values, max(values, lines([header]))


def _compact(table: Table, gap: int) -> Table:
    """``table`` without its outer edge and column rules (a rule under the header stays): ``gap``
    + 1 spaces between columns, for a width its boxed layout would wrap past two lines a row."""
    import copy

    from rich import box

    compact = copy.copy(table)
    compact.box, compact.show_edge, compact.pad_edge = box.SIMPLE_HEAD, False, False
    compact.padding = (0, gap, 0, 0)
    return compact


def fit(table: Table, width: int) -> RenderableType:
    """``table`` laid out for ``width`` columns with every cell readable: each column at least as
    wide as its longest word (a no-wrap column: its longest line); the rest of the width goes first
    to keeping every value within two lines, then as many columns' values on one line as it can,
    then their headers, then shared out. Where the boxed table's values would need more than two
    lines, it loses its column rules, and then one of the two spaces between columns (:func:`_compact`). One block per row (``header: value``
    lines) when even the narrowest layout is wider than ``width``. rich alone shrinks columns
    below their words and cuts them ("Transform…"), or squeezes whole columns away.

    Returns:
        ``table`` itself when it fits as it is, a copy with column widths set, or a
        :class:`rich.console.Group` of blocks.
    """
    import copy

    ranges = [_widths(c) for c in table.columns]

    def extra_of(t: Table) -> int:
        return t._extra_width + sum(t._get_padding_width(k) for k in range(len(t.columns)))

    if sum(hi for *_, hi in ranges) + extra_of(table) <= width:
        return table
    two_lines = sum(two for _, two, *_ in ranges)
    for gap in (1, 0):  # the boxed table's values need more than two lines: two spaces between columns, then one
        if two_lines + extra_of(table) > width:
            table = _compact(table, gap)
    extra = extra_of(table)
    spare = width - extra - sum(lo for lo, *_ in ranges)
    if spare < 0:
        return _blocks(table, width)
    widths = [lo for lo, *_ in ranges]
    for stage in (1, 2, 3):  # every value within two lines, then on one line, then the headers, smallest needs first
        for k in sorted(range(len(ranges)), key=lambda k: ranges[k][stage] - widths[k]):
            if 0 < ranges[k][stage] - widths[k] <= spare:
                spare -= ranges[k][stage] - widths[k]
                widths[k] = ranges[k][stage]
    slack = sum(hi - w for w, (*_, hi) in zip(widths, ranges))
    widths = [w + spare * (hi - w) // slack for w, (*_, hi) in zip(widths, ranges)]  # slack > 0: it did not fit
    fitted = copy.copy(table)
    fitted.columns = [copy.copy(c) for c in table.columns]
    for column, w in zip(fitted.columns, widths):
        column.width = w
        column.overflow = "fold"  # never used: no column is narrower than its longest word
    return fitted


def _blocks(table: Table, width: int) -> RenderableType:
    """One block per row, ``header  value`` lines (values wrap under themselves), between the
    table's title and caption."""
    from rich.console import Group
    from rich.padding import Padding

    headers = [_cell_text(c.header).plain for c in table.columns]
    key_width = min(max((len(h) for h in headers), default=1) + 1, max(8, width // 3))
    parts: list[RenderableType] = []
    if table.title:
        parts.append(_cell_text(table.title))
    columns = [list(c.cells) for c in table.columns]
    for r in range(table.row_count):
        grid = Table.grid(padding=(0, 1))
        grid.add_column(width=key_width, overflow="fold")
        grid.add_column(overflow="fold")
        for header, cells in zip(headers, columns):
            grid.add_row(Text(f"{header}:", style="dim"), _cell_text(cells[r]))
        parts.append(Padding(grid, (1 if r else 0, 0, 0, 2)))
    if table.caption:
        parts.append(_cell_text(table.caption))
    return Group(*parts)
