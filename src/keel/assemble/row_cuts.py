"""A role's state render as it is fitted: a header, its rows (top first), a footer.

Rows are cut from the bottom (`keel.assemble.fitting` decides how many), and a cut is
always visible: a notice, counted inside the budget, says how many rows are not shown and
which budget to raise.
"""

from __future__ import annotations

from dataclasses import dataclass

from keel.assemble.measure import Count, Measured, Notices


@dataclass(frozen=True, slots=True, kw_only=True)
class RenderInput:
    """A state view to render: a header, its rows (top first), a footer."""

    view: str
    header: str
    rows: tuple[str, ...]
    footer: str = ""
    total: int | None = None  # rows the view holds in all, when more were not fetched


def rows_notice(hidden: int) -> str:
    """What a render shows in place of the rows it left out; the knob to raise is for the
    operator, in the section's warning."""
    noun = "row" if hidden == 1 else "rows"
    return f"({hidden} more {noun} not shown)"


@dataclass(slots=True)
class RenderCut:
    """A render being fitted: how many of its rows are shown, and what that costs."""

    source: RenderInput
    section_id: str
    rows: Measured  # each row with its newline
    notice: Notices
    base_tokens: int = 0  # header and footer
    cap: int = 0  # the most rows the section's own budget allows
    shown: int = 0
    total: int = 0  # rows the view holds, shown or not

    @classmethod
    def of(cls, source: RenderInput, count: Count) -> RenderCut:
        total = len(source.rows) if source.total is None else source.total
        section_id = f"render.{source.view}"
        return cls(
            source=source,
            section_id=section_id,
            rows=Measured([f"{row}\n" for row in source.rows]),
            notice=Notices(text=lambda n: rows_notice(n) + "\n", count=count, most=total),
            cap=len(source.rows),
            total=total,
        )

    def frame_units(self) -> list[str]:
        """The texts the base cost is made of: header, then footer."""
        return [self.source.header + "\n", self.source.footer]

    def set_frame(self, header: int, footer: int) -> None:
        self.base_tokens = header + (footer if self.source.footer else 0)

    @property
    def hidden(self) -> int:
        return self.total - self.shown

    def least(self, shown: int) -> int:
        """What `shown` rows cost at least: without the notice."""
        return self.base_tokens + self.rows.sums[shown]

    def tokens(self, shown: int | None = None) -> int:
        n = self.shown if shown is None else shown
        return self.base_tokens + self.rows.sums[n] + self.notice.tokens(self.total - n)

    def text(self) -> str:
        lines = [self.source.header, *self.source.rows[: self.shown]]
        if self.hidden > 0:
            lines.append(rows_notice(self.hidden))
        if self.source.footer:
            lines.append(self.source.footer)
        return "\n".join(filter(None, lines))
