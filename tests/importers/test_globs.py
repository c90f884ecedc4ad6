"""Globs mean what they meant in the tool that owned the rule, and texts name paths."""

from __future__ import annotations

from fnmatch import fnmatchcase

import pytest
from hypothesis import given
from hypothesis import strategies as st

from keel.importers.globs import (
    Dialect,
    GlobError,
    GlobSet,
    escape,
    expand_braces,
    split_globs,
)


def matches(dialect: Dialect, patterns: list[str], path: str) -> bool:
    return GlobSet.of(dialect, patterns).matches_path(path)


# ---- each dialect ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("pattern", "path", "expected"),
    [
        pytest.param("*.py", "setup.py", True, id="a name pattern matches at the root"),
        pytest.param("*.py", "src/pkg/mod.py", True, id="and at any depth, as in .gitignore"),
        pytest.param("src/*.py", "src/a.py", True, id="a pattern with a slash is anchored"),
        pytest.param("src/*.py", "lib/src/a.py", False, id="so it does not match deeper"),
        pytest.param("src/*.py", "src/pkg/a.py", False, id="and * stays inside one segment"),
        pytest.param("src/**", "src/a/b/c.ts", True, id="** takes any number of segments"),
        pytest.param("src/**/*.ts", "src/a.ts", True, id="**/ takes none too"),
        pytest.param("**/*.test.ts", "a/b/x.test.ts", True, id="a leading **/ at any depth"),
        pytest.param("/*.md", "README.md", True, id="a leading / anchors at the root"),
        pytest.param("/*.md", "docs/a.md", False, id="and only there"),
        pytest.param("docs/", "docs/guide/a.md", True, id="a trailing / is the directory"),
        pytest.param("docs/", "site/docs/a.md", True, id="a directory name at any depth"),
        pytest.param("Makefile", "tools/Makefile", True, id="a literal name at any depth"),
        pytest.param("*.PY", "a.py", False, id="case counts"),
        pytest.param("./src/*.ts", "src/a.ts", True, id="a leading ./ is the root"),
        pytest.param("*.{ts,tsx}", "ui/a.tsx", True, id="braces are alternatives"),
        pytest.param("{src,lib}/**", "lib/x/y.rb", True, id="braces with slashes"),
        pytest.param("file?.txt", "file1.txt", True, id="? is one character"),
        pytest.param("file?.txt", "file10.txt", False, id="and only one"),
        pytest.param("[a-c]*.md", "b.md", True, id="a class"),
        pytest.param("[!a-c]*.md", "b.md", False, id="a negated class"),
        pytest.param("*", "a/b/.env", True, id="* matches names starting with a dot"),
    ],
)
def test_cursor_reads_globs_like_gitignore(pattern: str, path: str, expected: bool) -> None:
    assert matches("cursor", [pattern], path) is expected


def test_windsurf_reads_globs_as_cursor_does() -> None:
    for path in ("a.js", "src/a.js", "src/x/b.ts", "lib/src/b.ts"):
        assert matches("windsurf", ["*.js", "src/**/*.ts"], path) == matches(
            "cursor", ["*.js", "src/**/*.ts"], path
        )


@pytest.mark.parametrize(
    ("pattern", "path", "expected"),
    [
        pytest.param("*.md", "README.md", True, id="a name pattern matches the root"),
        pytest.param("*.md", "docs/a.md", False, id="and only the root, as Claude Code's docs say"),
        pytest.param("**/*.ts", "a/b/c.ts", True, id="**/ for any depth"),
        pytest.param("src/**/*", "src/a/b.py", True, id="everything under src"),
        pytest.param("src/components/*.tsx", "src/components/Button.tsx", True, id="one folder"),
        pytest.param("src/components/*.tsx", "src/components/ui/B.tsx", False, id="not deeper"),
        pytest.param("src/**/*.{ts,tsx}", "src/a/b.tsx", True, id="braces"),
        pytest.param("frontend/**", "frontend/src/app.vue", True, id="a folder's files"),
        pytest.param("frontend/**", "backend/app.py", False, id="not another folder's"),
    ],
)
def test_claude_anchors_every_pattern_at_the_root(pattern: str, path: str, expected: bool) -> None:
    assert matches("claude", [pattern], path) is expected


@pytest.mark.parametrize(
    ("pattern", "path", "expected"),
    [
        pytest.param("*.py", "a/b/c.py", True, id="VS Code puts **/ in front: any depth"),
        pytest.param("src/*.py", "src/a.py", True, id="a relative pattern at the root"),
        pytest.param("src/*.py", "pkg/src/a.py", True, id="and under any folder (**/ again)"),
        pytest.param("src/*.py", "src/pkg/a.py", False, id="* stays inside one segment"),
        pytest.param("**/subdir/**/*.py", "x/subdir/y/z.py", True, id="GitHub's example"),
        pytest.param("**/*.TS", "src/app.ts", True, id="case is ignored"),
        pytest.param("/src/*.py", "src/a.py", True, id="a leading / is read as the root"),
        pytest.param("/src/*.py", "pkg/src/a.py", False, id="and only the root"),
        pytest.param("**", "anything/at/all.txt", True, id="** is every file"),
        pytest.param("*", "deep/file.txt", True, id="so is * alone"),
    ],
)
def test_copilot_reads_apply_to_as_vs_code_does(pattern: str, path: str, expected: bool) -> None:
    assert matches("copilot", [pattern], path) is expected


def test_copilot_marks_its_match_everything_patterns() -> None:
    assert GlobSet.of("copilot", ["**/*"]).everything
    assert not GlobSet.of("copilot", ["**/*.py"]).everything
    assert not GlobSet.of("cursor", ["**"]).everything


def test_a_negated_pattern_excludes_what_it_matches() -> None:
    globs = GlobSet.of("cursor", ["src/**/*.ts", "!**/generated/**"])
    assert globs.matches_path("src/app.ts")
    assert not globs.matches_path("src/generated/api.ts")
    assert not GlobSet.of("cursor", ["!*.ts"]).matches_path("a.py"), "exclusions alone match none"


def test_an_escaped_character_is_literal() -> None:
    folder = escape("app/[id]")
    assert folder == "app/\\[id\\]"
    assert matches("claude", [f"{folder}/**"], "app/[id]/page.tsx")
    assert not matches("claude", [f"{folder}/**"], "app/i/page.tsx")


# ---- what cannot be matched ------------------------------------------------------------


@pytest.mark.parametrize(
    ("dialect", "patterns", "message"),
    [
        pytest.param("cursor", [" "], "is an empty pattern", id="empty"),
        pytest.param("cursor", ["!"], "is an empty pattern", id="only a negation"),
        pytest.param("gitlab", ["*.py"], "unknown glob dialect 'gitlab'", id="dialect"),
        pytest.param(
            "claude",
            ["{a,b,c,d,e,f}{a,b,c,d,e,f}{a,b,c,d,e,f}{a,b,c,d,e,f}/x"],
            "expands to more than 1000 patterns",
            id="too many alternatives",
        ),
    ],
)
def test_patterns_that_cannot_be_matched_say_why(
    dialect: str, patterns: list[str], message: str
) -> None:
    with pytest.raises(GlobError, match=message):
        GlobSet.of(dialect, patterns)


# ---- lists and braces ------------------------------------------------------------------


def test_a_comma_list_splits_outside_braces_and_brackets_only() -> None:
    assert split_globs(" *.{ts,tsx}, src/** ,[a,b].py,, ") == ("*.{ts,tsx}", "src/**", "[a,b].py")
    assert split_globs("a\\,b,c") == ("a\\,b", "c")


def test_braces_expand_nested_and_leave_single_options_alone() -> None:
    assert expand_braces("{a,b{c,d}}/x{1,2}") == [
        "a/x1",
        "a/x2",
        "bc/x1",
        "bc/x2",
        "bd/x1",
        "bd/x2",
    ]
    assert expand_braces("{only}/x") == ["{only}/x"]
    assert expand_braces("\\{a,b}") == ["\\{a,b}"]


# ---- the paths a text names ------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param("fix src/app.test.ts please", ("src/app.test.ts",), id="a plain path"),
        pytest.param("see `./src/a.test.ts:12`.", ("src/a.test.ts",), id="quoted, ./ and line"),
        pytest.param("in (tests/unit/x.py#L3-L9)", ("tests/unit/x.py",), id="markdown and anchor"),
        pytest.param("@tests/conftest.py", ("tests/conftest.py",), id="an @ mention"),
        pytest.param("C:\\work\\shop\\tests\\a.py", ("work/shop/tests/a.py",), id="windows"),
        pytest.param(
            "/home/me/shop/tests/b.py failed", ("home/me/shop/tests/b.py",), id="absolute"
        ),
        pytest.param(
            "https://github.com/o/shop/blob/main/tests/c.py",
            ("o/shop/blob/main/tests/c.py",),
            id="a url",
        ),
        pytest.param("nothing to see here", (), id="no path"),
    ],
)
def test_a_text_names_the_paths_in_it(text: str, expected: tuple[str, ...]) -> None:
    assert GlobSet.of("cursor", ["**"]).matching_paths(text) == expected


def test_an_absolute_path_is_tried_by_every_tail() -> None:
    globs = GlobSet.of("claude", ["tests/**"])
    assert globs.matches_text("/home/me/shop/tests/b.py failed")
    assert globs.matches_text("C:\\work\\shop\\tests\\a.py")
    assert not globs.matches_text("work/shop/tests/a.py"), "a relative path is taken as written"


def test_a_bare_word_names_only_a_literal_file_name() -> None:
    assert GlobSet.of("cursor", ["Dockerfile"]).matches_text("update the Dockerfile")
    assert not GlobSet.of("cursor", ["*"]).matches_text("update the Dockerfile")
    assert not GlobSet.of("cursor", ["src/**"]).matches_text("look in src")


def test_a_text_links_only_when_a_named_path_matches() -> None:
    globs = GlobSet.of("cursor", ["**/*.test.ts", "tests/**"])
    assert globs.matches_text("why does web/cart.test.ts fail?")
    assert globs.matches_text("run tests/e2e/checkout.spec.js")
    assert not globs.matches_text("how should tests be named?")
    assert not globs.matches_text("edit web/cart.ts")


# ---- against a plain reference ---------------------------------------------------------


def reference(pattern: list[str], path: list[str]) -> bool:
    """Segment by segment with fnmatch, `**` taking any number of segments."""
    if not pattern:
        return not path
    head, rest = pattern[0], pattern[1:]
    if head == "**":
        return any(reference(rest, path[i:]) for i in range(len(path) + 1))
    return bool(path) and fnmatchcase(path[0], head) and reference(rest, path[1:])


# Segments of only dots are not names (`./x` is read as the root's `x`), so none here.
segment = (
    st.lists(st.sampled_from(["a", "b", ".", "*", "?", "[ab]", "[!a]"]), min_size=1, max_size=4)
    .map("".join)
    .filter(lambda s: "**" not in s and s.strip("."))
)
pattern_parts = st.lists(st.one_of(segment, st.just("**")), min_size=1, max_size=4)
name = st.text(alphabet="ab.", min_size=1, max_size=4).filter(lambda s: s.strip("."))
path_parts = st.lists(name, min_size=1, max_size=5)


@given(pattern=pattern_parts, path=path_parts)
def test_anchored_globs_agree_with_a_segmentwise_reference(
    pattern: list[str], path: list[str]
) -> None:
    compiled = GlobSet.of("claude", ["/".join(pattern)])
    assert compiled.matches_path("/".join(path)) == reference(pattern, path)


@given(pattern=st.lists(segment, min_size=1, max_size=1), path=path_parts)
def test_cursor_name_patterns_agree_with_any_depth(pattern: list[str], path: list[str]) -> None:
    compiled = GlobSet.of("cursor", pattern)
    assert compiled.matches_path("/".join(path)) == reference(["**", *pattern], path)


@pytest.mark.parametrize("dialect", ["cursor", "windsurf", "copilot", "claude"])
@pytest.mark.parametrize(
    ("pattern", "text", "linked"),
    [
        pytest.param("frontend/**", "work in frontend/ today", True, id="folder-glob"),
        pytest.param("/frontend/**", "see `frontend/`", True, id="rooted-folder-glob"),
        pytest.param("frontend/", "frontend/ only", True, id="folder-pattern"),
        pytest.param("frontend/**/*.ts", "work in frontend/ today", False, id="typed-files"),
        pytest.param("frontend/**", "the frontend folder", False, id="no-slash-no-folder"),
        pytest.param("backend/**", "work in frontend/ today", False, id="another-folder"),
    ],
)
def test_a_folder_named_in_prose_links_the_rules_for_all_of_its_files(
    dialect: str, pattern: str, text: str, linked: bool
) -> None:
    assert GlobSet.of(dialect, [pattern]).matches_text(text) is linked


def test_a_folder_in_prose_is_no_file_of_its_own() -> None:
    globs = GlobSet.of("cursor", ["frontend/**"])
    assert globs.matching_paths("work in frontend/ today") == ("frontend",)
    assert not GlobSet.of("cursor", ["*.ts"]).matches_text("work in frontend/ today")
