"""CODEOWNERS parsing, GitHub's matching rules, owned files, and the real InferenceX file."""

import pathspec
import pytest

from bot.rules.codeowners import CodeOwners, Match, Problem, Rule, handles, is_handle, owned_files, parse

# (pattern, path, matches) — one rule at a time.
MATCHING = [
    # unanchored: any depth
    ("*.js", "app.js", True),
    ("*.js", "src/deep/app.js", True),
    ("*.js", "app.jsx", False),
    ("MODELS.md", "MODELS.md", True),
    ("MODELS.md", "docs/MODELS.md", True),
    ("MODELS.md", "MODELS.md.bak", False),
    # a leading `/` anchors to the root
    ("/build.sh", "build.sh", True),
    ("/build.sh", "tools/build.sh", False),
    # a `/` in the middle anchors too
    ("configs/amd.yaml", "configs/amd.yaml", True),
    ("configs/amd.yaml", "x/configs/amd.yaml", False),
    # trailing `/`: a directory and everything under it, at any depth when unanchored
    ("logs/", "logs/a.txt", True),
    ("logs/", "logs/deep/a.txt", True),
    ("logs/", "x/logs/a.txt", True),
    ("logs/", "logs", False),
    ("logs/", "logslog/a.txt", False),
    ("/exp/op/", "exp/op/a/b.py", True),
    ("/exp/op/", "x/exp/op/a.py", False),
    # bare directory name: itself anywhere and its contents
    ("apps", "apps", True),
    ("apps", "apps/web/index.js", True),
    ("apps", "src/apps/x.py", True),
    ("apps", "myapps/x.py", False),
    # `*` does not cross `/`
    ("docs/*.md", "docs/a.md", True),
    ("docs/*.md", "docs/sub/a.md", False),
    ("/docs/*", "docs/getting-started.md", True),
    ("/docs/*", "docs/build-app/troubleshooting.md", False),
    # `**` does
    ("docs/**", "docs/a/b/c.md", True),
    ("**/logs", "logs", True),
    ("**/logs", "a/b/logs/x.txt", True),
    ("a/**/b.py", "a/b.py", True),
    ("a/**/b.py", "a/x/y/b.py", True),
    ("a/**/b.py", "x/a/b.py", False),
    # `?` is one character other than `/`
    ("v?.txt", "v1.txt", True),
    ("v?.txt", "v10.txt", False),
    # catch-all
    ("*", "README.md", True),
    ("*", "a/b/c.py", True),
    # escapes
    (r"\#notes.md", "#notes.md", True),
    (r"my\ file.txt", "my file.txt", True),
    (r"my\ file.txt", "my", False),
    # no character classes: `[` is literal
    ("[ab].txt", "[ab].txt", True),
    ("[ab].txt", "a.txt", False),
    # case-sensitive paths
    ("README.md", "readme.md", False),
]


@pytest.mark.parametrize("pattern,path,matches", MATCHING)
def test_matching(pattern, path, matches):
    codeowners = parse(f"{pattern} @owner\n")
    assert codeowners.problems == ()
    assert (codeowners.owners_of(path) is not None) is matches


# Where pathspec's gitignore matcher (per rule) disagrees with GitHub's CODEOWNERS; every other case agrees.
PATHSPEC_DIFFERS = {("[ab].txt", "[ab].txt"), ("[ab].txt", "a.txt")}


@pytest.mark.parametrize("pattern,path,matches", MATCHING)
def test_pathspec_differences(pattern, path, matches):
    theirs = pathspec.PathSpec.from_lines("gitignore", [pattern]).match_file(path)
    assert (theirs != matches) is ((pattern, path) in PATHSPEC_DIFFERS)


# (file, path, winning line or None)
PRECEDENCE = [
    ("* @all\n/docs/ @docs\n", "docs/a.md", 2),
    ("* @all\n/docs/ @docs\n", "src/a.py", 1),
    # the last matching rule wins, even over a more specific earlier one
    ("/docs/api.md @api\n/docs/ @docs\n", "docs/api.md", 2),
    ("/docs/ @docs\n/docs/api.md @api\n", "docs/api.md", 2),
    # a rule with no owners un-owns the path
    ("* @all\n/vendor/\n", "vendor/lib.c", 2),
    ("/src/ @src\n", "README.md", None),
]


@pytest.mark.parametrize("text,path,line", PRECEDENCE)
def test_last_rule_wins(text, path, line):
    match = parse(text).owners_of(path)
    assert (match.rule.line if match else None) == line


def test_rule_without_owners_has_empty_owners():
    assert parse("* @all\n/vendor/\n").owners_of("vendor/x").rule.owners == ()


def test_parse_rules_comments_and_owner_forms():
    text = (
        "# a comment\n"
        "\n"
        "   # indented comment\n"
        "*.py @alice @Org/Team-1 dev@example.com # trailing comment\n"
        "docs/#notes @bob\n"
        "\\#hash @carol\n"
    )
    assert parse(text) == CodeOwners(
        rules=(
            Rule(4, "*.py", ("@alice", "@Org/Team-1", "dev@example.com")),
            Rule(5, "docs/#notes", ("@bob",)),
            Rule(6, "\\#hash", ("@carol",)),
        ),
        problems=(),
    )


PROBLEMS = [
    ("*.py alice\n", "invalid owner 'alice'"),
    ("*.py @alice @bad/\n", "invalid owner '@bad/'"),
    ("*.py @-x\n", "invalid owner '@-x'"),
    ("!*.py @alice\n", "negation (!) is not supported in CODEOWNERS"),
    ("/ @alice\n", "empty pattern"),
    ("foo\\\n", "trailing backslash"),
]


@pytest.mark.parametrize("text,reason", PROBLEMS)
def test_parse_problems(text, reason):
    codeowners = parse("* @all\n" + text + "/ok/ @ok\n")
    assert codeowners.problems == (Problem(2, reason),)
    assert [rule.line for rule in codeowners.rules] == [1, 3]  # the bad line is skipped, never raised


FILE = "* @Org/Core\n/docs/ @Alice dev@example.com\n/vendor/\n/ops/ @org/ops @bob\n"
FILES = ["src/a.py", "docs/x.md", "vendor/lib.c", "ops/run.sh"]

OWNED = [
    ("alice", {}, ["docs/x.md"]),
    ("ALICE", {}, ["docs/x.md"]),  # logins are case-insensitive
    ("bob", {}, ["ops/run.sh"]),
    ("carol", {"carol": {"org/core"}}, ["src/a.py"]),  # team resolution; the catch-all loses to later rules
    ("carol", {"carol": {"org/core", "org/ops"}}, ["src/a.py", "ops/run.sh"]),
    ("dave", {"dave": {"other/core"}}, []),
    ("dev@example.com", {}, []),  # an email owner is not a login
    ("Carol", {"Carol": {"org/ops"}}, ["ops/run.sh"]),
]


@pytest.mark.parametrize("login,teams,expected", OWNED)
def test_owned_files(login, teams, expected):
    owned = owned_files(parse(FILE), FILES, login, teams)
    assert [path for path, _ in owned] == expected
    assert all(isinstance(rule, Rule) for _, rule in owned)


def test_handles_are_the_login_and_its_teams_lower_cased():
    assert handles("Carol", ["Org/Core", "org/ops"]) == {"@carol", "@org/core", "@org/ops"}


@pytest.mark.parametrize(
    "owner,expected",
    [
        ("@alice", True),
        ("@org/team-a", True),
        ("alice", False),
        ("org/team", False),
        ("dev@example.com", False),  # an owner CODEOWNERS accepts, but it names no account
        ("@", False),
        ("@-x", False),
    ],
)
def test_is_handle(owner, expected):
    assert is_handle(owner) is expected


def test_owned_files_reports_the_winning_rule():
    [(path, rule)] = owned_files(parse(FILE), ["docs/x.md"], "alice", {})
    assert (path, rule.line) == ("docs/x.md", 2)


REAL_OWNERS = [
    ("README.md", 1, ("@InferenceX/core",)),
    ("benchmarks/run.py", 1, ("@InferenceX/core",)),
    ("configs/amd-master.yaml", 4, ("@billishyahao", "@chunfangamd", "@seungrokj", "@yctseng0211", "@1am9trash")),
    ("configs/nvidia-master.yaml", 7, ("@ankur-singh", "@kedarpotdar-nv", "@InferenceX/core")),
    ("configs/other.yaml", 1, ("@InferenceX/core",)),
    ("MODELS.md", 10, ("@ankur-singh", "@chunfangamd", "@InferenceX/core")),
    ("MODELS_zh.md", 11, ("@ankur-singh", "@chunfangamd", "@InferenceX/core")),
    ("experimental/operatorx/kernels/a.py", 14, ("@hbarclay",)),
    ("experimental/other.py", 1, ("@InferenceX/core",)),
]


@pytest.fixture(scope="module")
def real(real_data):
    return parse((real_data / "CODEOWNERS").read_text())


def test_real_file_parses_without_problems(real):
    assert real.problems == ()
    assert len(real.rules) == 6


@pytest.mark.parametrize("path,line,owners", REAL_OWNERS)
def test_real_file_owners(real, path, line, owners):
    match = real.owners_of(path)
    assert isinstance(match, Match)
    assert (match.rule.line, match.rule.owners) == (line, owners)


def test_real_file_owned_files(real):
    files = ["configs/amd-master.yaml", "MODELS.md", "experimental/operatorx/x.py", "README.md"]
    assert [p for p, _ in owned_files(real, files, "chunfangamd", {})] == ["configs/amd-master.yaml", "MODELS.md"]
    core = {"someone": {"inferencex/core"}}
    assert [p for p, _ in owned_files(real, files, "someone", core)] == ["MODELS.md", "README.md"]


def test_repeated_double_stars_mean_one_and_cost_no_more():
    """Regression: `**/` written twelve times compiled to twelve nested optional groups, and matching a path
    twelve directories deep against it backtracked for 0.1 s (each more `**/` doubled that)."""
    many = parse("/".join(["**"] * 40) + "/x.yaml @owner\n")
    one = parse("**/x.yaml @owner\n")
    for path in ("x.yaml", "a/x.yaml", "/".join(["d"] * 40) + "/x.yaml", "/".join(["d"] * 40) + "/y.yaml"):
        assert (many.owners_of(path) is None) == (one.owners_of(path) is None), path


def test_each_rule_is_compiled_once_per_file_however_many_paths_are_asked():
    owners = parse("".join(f"dir{i}/ @o{i}\n" for i in range(3000)))
    assert owners.owners_of("dir0/a") and owners.owners_of("dir0/b")
    assert len(owners._compiled) == 3000 and owners == parse("".join(f"dir{i}/ @o{i}\n" for i in range(3000)))
