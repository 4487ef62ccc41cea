"""The master configs and runner pools, read from upstream's real files and from small edge cases."""

from __future__ import annotations

import pytest
from conftest import REAL_DATA

from bot.rules.master_config import (
    changed_keys,
    covered,
    keys_matching,
    pools_of,
    read_master_configs,
    read_runner_pools,
)


@pytest.fixture(scope="module")
def upstream():
    return read_master_configs(
        {name: (REAL_DATA / name).read_text(encoding="utf-8") for name in ("amd-master.yaml", "nvidia-master.yaml")}
    )


def test_upstream_files_read_whole(upstream):
    assert upstream.problems == ()
    assert len(upstream.blocks) == 208
    assert upstream.sources["dsr1-fp4-mi355x-sglang"] == "amd-master.yaml"


@pytest.mark.parametrize(
    "pattern, expected",
    [
        ("dsr1-fp4-mi355x-sglang", ["dsr1-fp4-mi355x-sglang"]),
        (
            "dsr1-fp4-mi355x-sglang-*",
            [
                "dsr1-fp4-mi355x-sglang-mtp",
                "dsr1-fp4-mi355x-sglang-disagg",
                "dsr1-fp4-mi355x-sglang-disagg-8k1k-mtp",
                "dsr1-fp4-mi355x-sglang-disagg-mtp",
            ],
        ),
        ("dsr1-fp4-mi355x-ato?", ["dsr1-fp4-mi355x-atom"]),
        ("DSR1-fp4-mi355x-sglang", []),  # case-sensitive, as the sweep generator
        ("no-such-key", []),
    ],
)
def test_keys_a_config_keys_value_names(upstream, pattern, expected):
    assert keys_matching(pattern, upstream.keys()) == expected


def test_pools_of_upstream_keys(upstream):
    pools = pools_of(["dsr1-fp4-mi355x-sglang", "dsr1-fp4-mi355x-atom", "no-such-key"], upstream)
    assert pools == {"mi355x": ["dsr1-fp4-mi355x-sglang", "dsr1-fp4-mi355x-atom"]}


def test_upstream_runner_pools():
    pools = read_runner_pools((REAL_DATA / "runners.yaml").read_text(encoding="utf-8"))
    assert (pools["mi355x"], pools["gb200"], pools["h100-multinode"]) == (9, 3, 4)


@pytest.mark.parametrize(
    "base, head, expected",
    [
        ("a: {runner: x, tp: 4}\n", "a: {runner: x, tp: 8}\n", ["a"]),
        ("a: {runner: x}\n", "# a comment\na:\n  runner: x\n", []),
        ("a: {runner: x}\n", "a: {runner: x}\nb: {runner: y}\n", ["b"]),
        ("a: {runner: x}\nb: {runner: y}\n", "b: {runner: y}\n", ["a"]),
    ],
)
def test_changed_keys(base, head, expected):
    assert changed_keys(read_master_configs({"m": base}), read_master_configs({"m": head})) == expected


@pytest.mark.parametrize(
    "files, problem",
    [
        ({"m": "a: [unclosed\n"}, "m: not YAML"),
        ({"m": "- a\n- b\n"}, "m: not a mapping of config keys"),
        ({"m": "a: {runner: x}\n", "n": "a: {runner: y}\n"}, "n: `a` is also defined in m"),
    ],
)
def test_files_that_cannot_be_read_say_why(files, problem):
    configs = read_master_configs(files)
    assert any(p.startswith(problem) for p in configs.problems), configs.problems


def test_a_file_over_the_cap_is_not_parsed():
    configs = read_master_configs({"m": "a: {runner: x}\n" * 10}, max_bytes=20)
    assert configs.blocks == {} and "larger than 20 bytes" in configs.problems[0]


def test_covered_with_wildcards():
    assert covered("dsr1-fp4-mi355x-sglang", ["gpt*", "dsr1-*-mi355x-*"])
    assert not covered("dsr1-fp4-mi355x-sglang", ["dsr1-fp8-*"])
