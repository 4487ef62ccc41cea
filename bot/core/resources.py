"""Where the data that ships beside the code is found at run time: app.yaml and the templates.

Both stay at the top of the repository. pyproject.toml maps each onto a data-only package, so a
wheel carries them and an editable install points at the checkout:

    sweepbot_app        the repository's top level, of which only app.yaml is package data
    sweepbot_templates  templates/

Neither folder has an ``__init__.py`` (they hold data, not code), so both are namespace packages.
On Python 3.11 ``importlib.resources.files()`` cannot open a namespace package of a setuptools
editable install: the install adds a placeholder entry to the package's ``__path__`` and
``MultiplexedPath`` raises NotADirectoryError on it. The directory is therefore taken from the
package's ``__path__``, the entry that really holds the file asked for, which works the same for
editable and normal installs.
"""

from __future__ import annotations

import importlib
from pathlib import Path

APP_PACKAGE = "sweepbot_app"
TEMPLATES_PACKAGE = "sweepbot_templates"


class ResourceMissing(FileNotFoundError):
    """A data file that the installed sweepbot does not have: a broken or partial install."""


def resource_dir(package: str, holding: str) -> Path:
    """The directory of the data package `package` that holds the file `holding`."""
    try:
        module = importlib.import_module(package)
    except ImportError:
        module = None
    for entry in getattr(module, "__path__", ()):
        directory = Path(entry)
        if (directory / holding).is_file():
            return directory.resolve()
    raise ResourceMissing(
        f"{holding} not found: the data package {package} is not installed or does not hold it."
        " Install sweepbot with `pip install .` (or `pip install -e .` in a checkout)."
    )


def resource_file(package: str, name: str) -> Path:
    """The path of the data file `name` in the data package `package`."""
    return resource_dir(package, name) / name
