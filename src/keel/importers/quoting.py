"""Text from outside — file names, descriptions, globs — as a literal, or as a line to print.

A repository's names and rule texts are data: a folder may be called
`x\\nentity: __import__('os')...`, a file name may carry bytes that are not UTF-8 (which
Python hands over as lone surrogates). Whatever `keel import` writes into a brain file that
is code or YAML goes through `quoted`, and whatever it prints goes through `shown`, so no
character of such a name can end a line, open a new key or statement, or crash a write.

`quoted` gives one double-quoted literal that YAML (1.1 and 1.2) and Python both read back
as exactly the text given: `"` and `\\` are escaped, and so is every character that is not
printable (C0 and C1 controls, DEL, U+0085, U+2028, U+2029, other separators and format
characters, surrogates, unassigned code points). `unquoted` reads such a literal back.
"""

from __future__ import annotations

import re

_SHORT = {"\n": "\\n", "\t": "\\t", "\r": "\\r"}
_UNESCAPED = {"\\": "\\", '"': '"', "n": "\n", "t": "\t", "r": "\r"}
_ESCAPE = r'\\(?:[\\"ntr]|x[0-9a-fA-F]{2}|u[0-9a-fA-F]{4}|U[0-9a-fA-F]{8})'
_LITERAL = re.compile(rf'"((?:[^"\\]|{_ESCAPE})*)"')
_ESCAPES = re.compile(_ESCAPE)


def _escape(char: str) -> str:
    if char in _SHORT:
        return _SHORT[char]
    point = ord(char)
    if point <= 0xFF:
        return f"\\x{point:02x}"
    if point <= 0xFFFF:
        return f"\\u{point:04x}"
    return f"\\U{point:08x}"


def _printable(char: str) -> bool:
    # Surrogates are never printable; `isprintable` keeps every line break out too.
    return char == " " or char.isprintable()


def quoted(text: str) -> str:
    """`text` as a double-quoted literal that YAML and Python read back exactly."""
    out = ['"']
    for char in text:
        if char in '"\\':
            out.append("\\" + char)
        elif _printable(char):
            out.append(char)
        else:
            out.append(_escape(char))
    out.append('"')
    return "".join(out)


def unquoted(literal: str) -> str | None:
    """The text of a literal `quoted` wrote; None when `literal` is not one."""
    found = _LITERAL.fullmatch(literal)
    if found is None:
        return None
    return _ESCAPES.sub(_unescape, found.group(1))


def _unescape(found: re.Match[str]) -> str:
    escape = found.group()[1:]
    if escape in _UNESCAPED:
        return _UNESCAPED[escape]
    return chr(int(escape[1:], 16))


def shown(text: str) -> str:
    """`text` as one printable line: bytes that were not UTF-8 as `\\xNN`, and every other
    character that is not printable (a newline, a control) escaped as in `quoted`."""
    out: list[str] = []
    for char in text:
        if "\udc80" <= char <= "\udcff":  # a byte os.fsdecode could not decode
            out.append(f"\\x{ord(char) - 0xDC00:02x}")
        elif _printable(char):
            out.append(char)
        else:
            out.append(_escape(char))
    return "".join(out)
