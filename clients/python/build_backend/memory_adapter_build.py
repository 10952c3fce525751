"""A PEP 517 build backend for this package, standard library only.

It exists so that ``pip install ./clients/python`` needs nothing from a package index: pip's
isolated build environment gets ``requires = []`` and this module. It builds a pure-Python
wheel of ``src/memory_adapter_client`` (and an sdist of the directory), with the metadata
from pyproject.toml's [project] table, which it reads with tomllib (Python 3.11+) or, on
3.10, with the few lines below that the file's simple layout needs.
"""

from __future__ import annotations

import base64
import hashlib
import io
import os
import re
import tarfile
import zipfile

_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_PKG = "memory_adapter_client"


def _project() -> dict:
    with open(os.path.join(_ROOT, "pyproject.toml"), "rb") as f:
        data = f.read()
    try:
        import tomllib

        return tomllib.loads(data.decode("utf-8"))["project"]
    except ImportError:  # Python 3.10: name, version, description and requires-python only
        text = data.decode("utf-8").split("[project]", 1)[1].split("\n[", 1)[0]
        return {k: v for k, v in re.findall(r'^([a-z-]+) = "([^"]*)"$', text, re.M)}


def _metadata(p: dict) -> str:
    lines = ["Metadata-Version: 2.1", f"Name: {p['name']}", f"Version: {p['version']}", f"Summary: {p.get('description', '')}"]
    if "requires-python" in p:
        lines.append(f"Requires-Python: {p['requires-python']}")
    for extra, reqs in (p.get("optional-dependencies") or {}).items():
        lines.append(f"Provides-Extra: {extra}")
        lines += [f'Requires-Dist: {r}; extra == "{extra}"' for r in reqs]
    readme = os.path.join(_ROOT, "README.md")
    if os.path.exists(readme):
        lines.append("Description-Content-Type: text/markdown")
        with open(readme, encoding="utf-8") as f:
            return "\n".join(lines) + "\n\n" + f.read()
    return "\n".join(lines) + "\n"


def _dist(p: dict) -> str:
    return f"{re.sub(r'[-_.]+', '_', p['name'])}-{p['version']}"


def _sources():
    base = os.path.join(_ROOT, "src")
    for dirpath, dirnames, filenames in os.walk(os.path.join(base, _PKG)):
        dirnames[:] = sorted(d for d in dirnames if d != "__pycache__")
        for name in sorted(filenames):
            if name.endswith(".py") or name == "py.typed":
                path = os.path.join(dirpath, name)
                yield path, os.path.relpath(path, base).replace(os.sep, "/")


def _record_line(arcname: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{arcname},sha256={digest},{len(data)}"


def _wheel(wheel_directory: str, editable: bool) -> str:
    p = _project()
    dist = _dist(p)
    name = f"{dist}-py3-none-any.whl"
    info = f"{dist}.dist-info"
    files: list[tuple[str, bytes]] = []
    if editable:
        files.append((f"{_PKG}.pth", (os.path.join(_ROOT, "src") + "\n").encode()))
    else:
        for path, arc in _sources():
            with open(path, "rb") as f:
                files.append((arc, f.read()))
    files.append((f"{info}/METADATA", _metadata(p).encode("utf-8")))
    files.append((f"{info}/WHEEL", b"Wheel-Version: 1.0\nGenerator: memory_adapter_build\nRoot-Is-Purelib: true\nTag: py3-none-any\n"))
    record = [_record_line(a, d) for a, d in files] + [f"{info}/RECORD,,"]
    files.append((f"{info}/RECORD", ("\n".join(record) + "\n").encode()))
    with zipfile.ZipFile(os.path.join(wheel_directory, name), "w", zipfile.ZIP_DEFLATED) as z:
        for arc, data in files:
            zi = zipfile.ZipInfo(arc, date_time=(2020, 1, 1, 0, 0, 0))
            zi.external_attr = 0o644 << 16
            z.writestr(zi, data, zipfile.ZIP_DEFLATED)
    return name


def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_sdist(config_settings=None):
    return []


def get_requires_for_build_editable(config_settings=None):
    return []


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    return _wheel(wheel_directory, editable=False)


def build_editable(wheel_directory, config_settings=None, metadata_directory=None):
    return _wheel(wheel_directory, editable=True)


def build_sdist(sdist_directory, config_settings=None):
    p = _project()
    dist = _dist(p)
    name = f"{dist}.tar.gz"
    with tarfile.open(os.path.join(sdist_directory, name), "w:gz") as t:
        for rel in ("pyproject.toml", "README.md", "build_backend/memory_adapter_build.py"):
            path = os.path.join(_ROOT, rel)
            if os.path.exists(path):
                t.add(path, f"{dist}/{rel}")
        for path, arc in _sources():
            t.add(path, f"{dist}/src/{arc}")
        pkg_info = _metadata(p).encode("utf-8")
        ti = tarfile.TarInfo(f"{dist}/PKG-INFO")
        ti.size = len(pkg_info)
        t.addfile(ti, io.BytesIO(pkg_info))
    return name
