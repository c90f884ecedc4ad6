"""FAULT code.load: the export is misspelt (`contxt`), so the context's code does nothing."""

from keel.code import define_context


def match(turn):
    return {} if "?" in turn.input else None


contxt = define_context(match=match)
