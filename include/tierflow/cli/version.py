"""tierflow's version, read without loading any command: ``tierflow --version`` answers in
the time Python takes to start."""

from __future__ import annotations

from pathlib import Path


def version() -> str:
    """The installed distribution's version; a source checkout's pyproject otherwise. Its
    imports are here: importlib.metadata costs a command that never asks for the version
    (``tierflow status``) a twentieth of a second."""
    import tomllib
    from importlib import metadata

    try:
        return metadata.version("tierflow")
    except metadata.PackageNotFoundError:
        pyproject = Path(__file__).resolve().parents[3] / "pyproject.toml"
        with pyproject.open("rb") as file:
            return str(tomllib.load(file)["project"]["version"])
