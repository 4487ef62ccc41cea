"""What the sandbox's lifecycle asks people to read: the bot's new comments and their length as GitHub shows them.

`sweepbot serve` without credentials walks one PR through its whole lifecycle (bot/app/sandbox.py `lifecycle`)
and writes every text in full to a transcript. From it this prints:

- the new comments the bot posted (each one a notification to everyone watching the PR);
- the visible characters of the final version of each of the bot's comments: rendered with cmark-gfm (GitHub's
  parser, `tests/rendered.py`), HTML comments and text inside collapsed `<details>` not counted, whitespace runs
  as one, both languages together; and their raw characters.

Goals (words issue): at most 6 new comments and 5,000 visible characters in all.

    .venv/bin/python bench/comments.py [--transcript PATH]   # PATH: an existing transcript instead of a new walk
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import io
import re
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
for _path in (str(ROOT), str(ROOT / "tests")):
    if _path not in sys.path:
        sys.path.insert(0, _path)

from rendered import visible_text  # noqa: E402

from bot.app import cli  # noqa: E402
from bot.core.config import Settings  # noqa: E402

ENTRY = re.compile(
    r"^#### (POST|PATCH) (\S+) -> \d+  comment\[([^\]]+)\], [\d,]+ chars\n\nbody:\n\n~~~~~~markdown\n"
    r"(.*?)\n~~~~~~$",
    re.S | re.M,
)
GOAL_COMMENTS, GOAL_VISIBLE = 6, 5_000


def walk(folder: Path) -> str:
    """The sandbox walked once, as `make serve` walks it (its label settle off): the transcript's text."""
    transcript = folder / "transcript.md"
    settings = dataclasses.replace(Settings.from_env({"SWEEPBOT_SETTLE_SECONDS": "0"}, dotenv=False), port=0)
    assert asyncio.run(cli.serve(settings, io.StringIO(), transcript=transcript, until_walked=True)) == 0
    return transcript.read_text(encoding="utf-8")


def measure(transcript: str) -> dict:
    """New comments, and each comment's final version (by its purpose) with its visible and raw length."""
    new, final = [], {}
    for method, _path, purpose, body in ENTRY.findall(transcript):
        if method == "POST":
            new.append(purpose)
        final[purpose] = body
    rows = {purpose: (len(visible_text(body)), len(body)) for purpose, body in final.items()}
    return {
        "new": new,
        "rows": rows,
        "visible": sum(v for v, _ in rows.values()),
        "raw": sum(r for _, r in rows.values()),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--transcript", type=Path, help="a transcript to measure instead of walking the sandbox")
    args = parser.parse_args(argv)
    if args.transcript is not None:
        text = args.transcript.read_text(encoding="utf-8")
    else:
        with tempfile.TemporaryDirectory() as folder:
            text = walk(Path(folder))
    found = measure(text)
    print(f"new comments: {len(found['new'])} (goal <= {GOAL_COMMENTS}): {', '.join(found['new'])}")
    print("| comment (final version) | visible chars | raw chars |")
    print("| --- | ---: | ---: |")
    for purpose, (shown, raw) in found["rows"].items():
        print(f"| {purpose} | {shown:,} | {raw:,} |")
    print(f"| all | {found['visible']:,} (goal <= {GOAL_VISIBLE:,}) | {found['raw']:,} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
