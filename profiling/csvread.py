"""Reading profiler CSV files: find the header by the columns it must have (some tools print progress
lines first), map columns by name through aliases, parse numbers as the tools write them
(scientific notation, thousands separators, quotes), and fail with the file, line and column."""
import csv
import decimal
import io
import pathlib
import re

from profiling.table import FormatError


def read_text(path):
    p = pathlib.Path(path)
    try:
        data = p.read_bytes()
    except OSError as e:
        raise FormatError(f"{path}: cannot read ({e.strerror})") from None
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise FormatError(f"{path}: not a text file (expected CSV)") from None


class Table:
    """The data rows of one CSV file below its header; `get` maps a wanted column through its
    aliases, so no code ever depends on a column's position."""

    def __init__(self, path, header, rows):
        self.path = str(path)
        self.header = [h.strip() for h in header]
        self.rows = rows  # (file line number, cells)
        self._index = {h: i for i, h in enumerate(self.header)}

    def has(self, *aliases):
        return any(a in self._index for a in aliases)

    def column(self, *aliases, required=True):
        for a in aliases:
            if a in self._index:
                return self._index[a]
        if required:
            raise FormatError(f"{self.path}: no column {' or '.join(repr(a) for a in aliases)} "
                              f"(header: {', '.join(self.header)})")
        return None

    def records(self):
        """(line number, cells) of each data row, cells padded to the header's width."""
        for line, cells in self.rows:
            if len(cells) > len(self.header) and any(c.strip() for c in cells[len(self.header):]):
                raise FormatError(f"{self.path}:{line}: {len(cells)} cells where the header has "
                                  f"{len(self.header)} (an unquoted comma in a name?)")
            if len(cells) < len(self.header):
                cells = cells + [""] * (len(self.header) - len(cells))
            yield line, cells

    def text(self, cells, col):
        return "" if col is None else cells[col].strip()

    def number(self, cells, col, line, blank=None):
        raw = self.text(cells, col)
        if raw == "" and blank is not None:
            return blank
        return parse_number(raw, self.path, line, self.header[col])

    def integer(self, cells, col, line, blank=None):
        raw = self.text(cells, col)
        if raw == "" and blank is not None:
            return blank
        return parse_int(raw, self.path, line, self.header[col])


_NUMBER = re.compile(r"^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$")
_THOUSANDS = re.compile(r"^[+-]?\d{1,3}(,\d{3})+(\.\d*)?$")


def parse_number(raw, path, line, column):
    s = raw.strip().strip('"').strip()
    if _THOUSANDS.match(s):
        s = s.replace(",", "")
    if not _NUMBER.match(s):
        raise FormatError(f"{path}:{line}: column {column!r} holds {raw!r}, expected a number")
    return float(s)


def parse_int(raw, path, line, column):
    """Integers exactly (absolute nanosecond timestamps exceed a double's 53 bits); values written
    in scientific notation are accepted when they are whole numbers."""
    s = raw.strip().strip('"').strip()
    if _THOUSANDS.match(s):
        s = s.replace(",", "")
    if re.match(r"^[+-]?\d+$", s):
        return int(s)
    parse_number(s, path, line, column)  # the same error for anything that is no number at all
    v = decimal.Decimal(s)  # exact: 1.7320000002e+18 is a whole number of nanoseconds
    if v != v.to_integral_value():
        raise FormatError(f"{path}:{line}: column {column!r} holds {raw!r}, expected a whole number")
    return int(v)


def split_lines(text, delimiter=",", path=""):
    try:
        return list(csv.reader(io.StringIO(text), delimiter=delimiter))
    except csv.Error as e:
        raise FormatError(f"{path}: not readable as CSV ({e})") from None


def find_table(path, text, must_have, delimiter=",", what="CSV"):
    """The first line whose cells contain every name in each group of `must_have` (a list of
    alias tuples) is the header; rows below it are the data. Blank lines are skipped."""
    lines = split_lines(text, delimiter, path)
    for i, cells in enumerate(lines):
        names = {c.strip() for c in cells}
        if all(any(a in names for a in group) for group in must_have):
            # Blank lines (and lines of empty cells) carry nothing.
            rows = [(i + 2 + k, c) for k, c in enumerate(lines[i + 1:]) if any(x.strip() for x in c)]
            return Table(path, cells, rows)
    wanted = "; ".join(" or ".join(repr(a) for a in g) for g in must_have)
    raise FormatError(f"{path}: no header line found for {what} (expected columns {wanted})")

