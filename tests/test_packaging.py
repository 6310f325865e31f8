"""The package as a user outside this repository gets it: built, installed in a clean venv, run.

The wheel is built as the README's Install section says (`pip wheel --no-deps -w dist .`), the
sdist by `python -m build --sdist`; the wheel is installed, with its dependencies from the
package index, into a venv of its own that has nothing else: no extra, no checkout on the
path. There the command must run, say its version, complete in a shell, and meet every
missing extra with one line naming the install.

Installing also prints nothing a new user must read before the demo: `make demo` logs its
install to .venv/install.log and shows it only on failure, and the build backend itself must
not warn (a deprecated `project.license` table once made setuptools print a screenful).
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
import tarfile
import tomllib
import uuid
import zipfile
from dataclasses import dataclass
from pathlib import Path

import pytest

import s3claim
from s3claim.extras import EXTRAS
from tests._s3 import moto_client

ROOT = Path(__file__).parent.parent
VERSION = s3claim.__version__
_TIMEOUT = 300


@dataclass(frozen=True)
class Dist:
    wheel: Path
    sdist: Path
    log: str


@dataclass(frozen=True)
class Venv:
    root: Path
    wheel: Path

    @property
    def python(self) -> Path:
        return self.root / "bin" / "python"

    def run(
        self, *argv: str, env: dict[str, str] | None = None
    ) -> subprocess.CompletedProcess[str]:
        """A command of the venv, in an environment that knows nothing of this checkout."""
        sealed = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL"))}
        binary = argv[0] if argv[0].startswith("/") else str(self.root / "bin" / argv[0])
        return subprocess.run(
            [binary, *argv[1:]],
            cwd=self.root,  # not the checkout: `import s3claim` must find the installed copy
            env={**sealed, **(env or {})},
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )


def _run(argv: list[str], cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        argv, cwd=cwd, capture_output=True, text=True, timeout=_TIMEOUT, check=False
    )
    assert done.returncode == 0, f"{' '.join(argv)}\n{(done.stdout + done.stderr)[-3000:]}"
    return done


@pytest.fixture(scope="module")
def dist(tmp_path_factory: pytest.TempPathFactory) -> Dist:
    out = tmp_path_factory.mktemp("dist")
    wheel_log = _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-v", "-w", str(out), "."])
    sdist = [sys.executable, "-m", "build", "--sdist", "--no-isolation", "--outdir", str(out), "."]
    sdist_log = _run(sdist)
    (wheel,) = out.glob("*.whl")
    (sdist,) = out.glob("*.tar.gz")
    return Dist(wheel, sdist, "".join(d.stdout + d.stderr for d in (wheel_log, sdist_log)))


@pytest.fixture(scope="module")
def venv(tmp_path_factory: pytest.TempPathFactory, dist: Dist) -> Venv:
    """The wheel and its dependencies from the index, installed by uv (as `make` installs the
    dev venv: the same wheels pip would pick, in a fraction of its time) into a venv with no
    pip and nothing else."""
    root = tmp_path_factory.mktemp("clean") / "venv"
    _run([sys.executable, "-m", "venv", "--without-pip", str(root)])
    uv = Path(sys.executable).parent / "uv"  # `make` puts it into the dev venv
    _run([str(uv), "pip", "install", "--quiet", "--python", str(root / "bin" / "python"),
          str(dist.wheel)])  # fmt: skip
    return Venv(root, dist.wheel)


def test_the_package_builds_without_a_warning_from_its_build_backend(dist: Dist) -> None:
    assert f"Successfully built {dist.sdist.name}" in dist.log
    backend = [
        line
        for line in dist.log.splitlines()
        if "Warning" in line and "WARNING: Location" not in line  # the machine's pip config
    ]
    assert backend == []


def test_the_wheel_and_sdist_carry_the_version_and_the_licence(dist: Dist) -> None:
    assert dist.wheel.name == f"s3claim-{VERSION}-py3-none-any.whl"
    assert dist.sdist.name == f"s3claim-{VERSION}.tar.gz"
    licence = (ROOT / "LICENSE").read_text(encoding="utf-8")
    assert "Apache License" in licence and "Version 2.0, January 2004" in licence
    info = f"s3claim-{VERSION}.dist-info"
    with zipfile.ZipFile(dist.wheel) as wheel:
        names = set(wheel.namelist())
        assert wheel.read(f"{info}/licenses/LICENSE").decode() == licence
        metadata = wheel.read(f"{info}/METADATA").decode()
    assert {"s3claim/py.typed", "s3claim/version.py", "s3claim/cli/demo/_command.py"} <= names
    dev_only = ("devkit/", "benchmarks/", "tests/")  # the checkout's own: never shipped
    assert not [name for name in names if name.startswith(dev_only)]
    assert f"\nVersion: {VERSION}\n" in metadata
    assert "\nLicense-Expression: Apache-2.0\n" in metadata
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    for extra in pyproject["project"]["optional-dependencies"]:
        assert f"\nProvides-Extra: {extra}\n" in metadata
    with tarfile.open(dist.sdist) as sdist:
        top = f"s3claim-{VERSION}/"
        members = set(sdist.getnames())
        assert {top + "LICENSE", top + "pyproject.toml", top + "s3claim/version.py"} <= members
    # the sdist carries tests/test*.py (setuptools' default), never what they import from
    assert not [n for n in members if n.startswith((top + "devkit/", top + "benchmarks/"))]


def test_the_wheel_runs_in_a_clean_venv(venv: Venv) -> None:
    version = venv.run("s3claim", "--version")
    assert (version.returncode, version.stdout) == (0, f"s3claim {VERSION}\n")
    demo = venv.run("s3claim", "demo", "--help")
    assert demo.returncode == 0, demo.stderr
    assert "Usage: s3claim demo" in " ".join(demo.stdout.split())
    where = venv.run("python", "-c", "import s3claim; print(s3claim.__file__)")
    assert where.stdout.startswith(str(venv.root)), where.stdout + where.stderr
    # Nothing but the core: every extra's modules are absent.
    absent = [m for _, modules in EXTRAS.values() for m in modules]
    probe = f"import importlib.util as u; print([m for m in {absent!r} if u.find_spec(m)])"
    assert venv.run("python", "-c", probe).stdout == "[]\n"


def test_the_core_installs_in_at_most_110_mb_without_numpy(venv: Venv) -> None:
    """The wheel with no extra and its dependencies, as a clean venv holds them on disk (about
    168 MB while numpy was a core dependency)."""
    used = sum(
        (Path(folder) / name).lstat().st_blocks * 512
        for folder, _, names in os.walk(venv.root)
        for name in names
    )
    assert used <= 110 * 1024**2, f"{used / 1024**2:.0f} MiB"
    probe = "import importlib.util as u; print(u.find_spec('numpy'))"
    assert venv.run("python", "-c", probe).stdout == "None\n"


def test_the_command_completes_in_a_shell(venv: Venv) -> None:
    env = {"_S3CLAIM_COMPLETE": "complete_bash", "COMP_WORDS": "s3claim d", "COMP_CWORD": "1"}
    completed = venv.run("s3claim", env=env)
    assert completed.stdout.split() == ["demo", "doctor"], completed.stderr
    # Typer finds the shell by walking up the process tree (shellingham), not from $SHELL or
    # an argument: typed in bash, as a user does, the script is bash's whatever ran the suite.
    s3claim = venv.root / "bin" / "s3claim"
    script = venv.run("/bin/bash", "-c", f"{s3claim} --show-completion; exit $?")  # no exec
    assert "_S3CLAIM_COMPLETE=complete_bash" in script.stdout, script.stderr


def _installs(venv: Venv, extra: str) -> str:
    """What the message must name: this wheel, with the extra (it was installed from a file)."""
    return f"pip install {shlex.quote(f'{venv.wheel}[{extra}]')}"


def _last_line(text: str) -> str:
    return text.strip().splitlines()[-1]


@pytest.mark.parametrize(
    ("extra", "argv"),
    [
        ("demo", ["s3claim", "demo"]),
        ("mcp", ["s3claim", "mcp-proxy", "--tenant", "acme", "--", "true"]),
    ],
)
def test_a_command_without_its_extra_says_what_to_install_in_one_line(
    venv: Venv, extra: str, argv: list[str]
) -> None:
    done = venv.run(*argv)
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stderr.count("\n") == 1, done.stderr
    line = done.stderr.rstrip("\n")
    assert line.startswith(f"s3claim: error: {EXTRAS[extra][0]} needs the {extra} extra (")
    assert _installs(venv, extra) in line


@pytest.mark.parametrize(
    ("extra", "code"),
    [
        ("mcp", "import s3claim.mcp"),
        ("openai-agents", "import s3claim.integrations.openai_agents"),
        ("langchain", "import s3claim.integrations.langchain"),
        ("pydantic-ai", "import s3claim.integrations.pydantic_ai"),
    ],
)
def test_the_library_without_an_extra_fails_at_first_use_naming_the_install(
    venv: Venv, extra: str, code: str
) -> None:
    done = venv.run("python", "-c", code)
    assert done.returncode == 1
    feature, (module, *_) = EXTRAS[extra]
    assert _last_line(done.stderr) == (
        f"s3claim.extras.MissingExtraError: {feature} needs the {extra} extra "
        f"({module} is not installed): {_installs(venv, extra)}"
    )
    assert "anyio" not in done.stderr  # the SDK's absence, not one of its dependencies'
    assert "During handling" not in done.stderr


ASYNC_S3 = """
import asyncio
from s3claim import S3ClaimCheckStore, Scope, ThreadedAsyncStore

async def main():
    astore = ThreadedAsyncStore(S3ClaimCheckStore.from_settings())
    scope = Scope("acme", "r")
    handle = await astore.put(scope, "x" * 10_000, ttl_seconds=60)
    window = await astore.fetch(scope, handle, 8192)
    print(window.text == "x" * 1808, await astore.forget(tenant="acme"))

asyncio.run(main())
"""


def test_the_async_face_reads_s3_with_no_extra(venv: Venv, moto_endpoint: str) -> None:
    """An async user of the S3 store needs the core alone: the threaded face over it."""
    bucket = f"packaging-{uuid.uuid4().hex}"
    moto_client(moto_endpoint).create_bucket(Bucket=bucket)
    env = {
        "S3CLAIM_BUCKET": bucket,
        "S3CLAIM_HANDLE_KEY": "packaging-handle-key-0123456789",
        "S3CLAIM_ENDPOINT_URL": moto_endpoint,
    }
    done = venv.run("python", "-c", ASYNC_S3, env=env)
    assert (done.returncode, done.stdout) == (0, "True 1\n"), done.stderr


def test_the_install_named_is_one_pip_takes_as_it_is(venv: Venv) -> None:
    argv = shlex.split(_installs(venv, "mcp"))
    assert argv[:2] == ["pip", "install"]
    # This venv's pip acting on the clean one (which has no pip of its own): pip, not uv,
    # since the message names pip.
    pip = [sys.executable, "-m", "pip", "--python", str(venv.python)]
    dry = [*pip, "install", "--dry-run", "--no-deps", "--ignore-installed", *argv[2:]]
    done = _run(dry)
    assert re.search(rf"Would install s3claim-{re.escape(VERSION)}", done.stdout), done.stdout


def test_the_readme_installs_this_version() -> None:
    install = (ROOT / "README.md").read_text(encoding="utf-8").split("\n## Install\n", 1)[1]
    assert "pip wheel --no-deps -w dist ." in install  # what the `dist` fixture runs
    assert f"pip install 'dist/s3claim-{VERSION}-py3-none-any.whl[mcp]'" in install
    assert "pip install -e '.[mcp]'" in install


def _older_python(path: Path) -> Path:
    """A stand-in for Python 3.10: it answers the Makefile's version question, runs nothing."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text('#!/bin/sh\ncase "$*" in *print*) echo 3.10;; esac\nexit 1\n')
    path.chmod(0o755)
    return path


def _make(*args: str) -> subprocess.CompletedProcess[str]:
    """make as a user types it (not as a sub-make of `make test`'s)."""
    env = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MAKELEVEL", "MFLAGS")}
    return subprocess.run(
        ["make", "--no-print-directory", *args], cwd=ROOT, env=env, capture_output=True,
        text=True, timeout=60, check=False,
    )  # fmt: skip


def test_make_demo_under_an_older_python_is_one_line_and_leaves_no_venv(tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    done = _make("demo", f"PYTHON={_older_python(tmp_path / 'python3')}", f"VENV={venv}")
    assert done.returncode != 0
    (line,) = [line for line in done.stderr.splitlines() if not line.startswith("make")]
    assert line.startswith("s3claim needs Python 3.11 or later;") and "is 3.10" in line
    assert not venv.exists()


@pytest.mark.parametrize("target", ["demo", "test"])
def test_an_older_python_leaves_a_working_venv_as_it_was(tmp_path: Path, target: str) -> None:
    venv = tmp_path / "venv"
    python = venv / "bin" / "python"  # a venv of Python 3.11: it answers 3.11, runs nothing
    python.parent.mkdir(parents=True)
    python.write_text('#!/bin/sh\ncase "$*" in *print*) echo 3.11;; esac\nexit 1\n')
    python.chmod(0o755)
    done = _make(target, f"PYTHON={_older_python(tmp_path / 'python3')}", f"VENV={venv}")
    assert done.returncode != 0
    (line,) = [line for line in done.stderr.splitlines() if not line.startswith("make")]
    assert line.startswith("s3claim needs Python 3.11 or later;") and "is 3.10" in line
    assert "making it anew" not in done.stdout
    assert python.exists()


def test_a_venv_another_python_made_is_made_anew(tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    _older_python(venv / "bin" / "python")
    done = _make("-n", "demo", f"VENV={venv}")  # -n: say what it would run, install nothing
    assert f"{venv} was made by Python 3.10; making it anew" in done.stdout, done.stderr
    assert not venv.exists()
