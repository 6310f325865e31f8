"""What README.md and docs/*.md promise that code can check, their code blocks first.

Every ```python block runs as written, each in a fresh namespace, as a script whose
tracebacks name the page and line. A block with `#> ` lines must print exactly those lines,
in order. Blocks that need S3 find a fresh bucket on a moto server and the S3CLAIM_*
variables set, as a reader's shell would have them. Nothing is exempt: a block that is not
Python meant to run is fenced with its real language (json, sh, text). Then the tables and
links: the settings table is the settings, the command table the commands, the adapter
table the extras, and every relative link leads somewhere.
"""

from __future__ import annotations

import json
import re
import tomllib
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from s3claim import S3ClaimSettings
from s3claim.cli import app
from tests._s3 import moto_client

ROOT = Path(__file__).parent.parent
README = ROOT / "README.md"
PAGES = [README, *sorted((ROOT / "docs").glob("*.md"))]
_FENCE = re.compile(r"(?P<indent> *)(?P<fence>```+)(?P<lang>\S*)")


@dataclass(frozen=True)
class Block:
    """One fenced code block: its page, the line its code starts on, and what it shows."""

    page: Path
    line: int
    lang: str
    code: str
    heading: str

    @property
    def name(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"

    @property
    def shown_output(self) -> list[str]:
        """The `#> ` lines: what the block says it prints."""
        lines = [line.strip() for line in self.code.splitlines()]
        return [line[3:] if line.startswith("#> ") else "" for line in lines if line[:2] == "#>"]


def parse(page: Path) -> tuple[list[Block], list[str]]:
    """The page's code blocks, and its lines outside them (prose, tables, headings)."""
    blocks: list[Block] = []
    prose: list[str] = []
    heading = ""
    opened: tuple[re.Match[str], int, list[str]] | None = None
    for number, line in enumerate(page.read_text(encoding="utf-8").splitlines(), 1):
        if opened is None:
            fence = _FENCE.fullmatch(line)
            if fence is None:
                prose.append(line)
                heading = line.lstrip("#").strip() if line.startswith("#") else heading
            else:
                opened = (fence, number, [])
        elif line.strip() == opened[0]["fence"]:
            fence, start, body = opened
            code = "".join(f"{text[len(fence['indent']) :]}\n" for text in body)
            blocks.append(Block(page, start + 1, fence["lang"], code, heading))
            opened = None
        else:
            opened[2].append(line)
    assert opened is None, f"{page.name}:{opened[1]}: a code block never closes"
    return blocks, prose


BLOCKS = [block for page in PAGES for block in parse(page)[0]]
PYTHON = [block for block in BLOCKS if block.lang == "python"]
PROCESS_WIDE = [block for block in PYTHON if "set_tracer_provider(" in block.code]
"""Blocks that set OpenTelemetry's providers, which a process sets once: each runs in a fresh
interpreter (as the reader's script would), exporting to a receiver of the test's own."""
IN_PROCESS = [block for block in PYTHON if block not in PROCESS_WIDE]


def run(block: Block) -> dict[str, Any]:
    """Run a block as the script it is: line numbers in tracebacks are the page's own."""
    code = compile("\n" * (block.line - 1) + block.code, str(block.page), "exec", dont_inherit=True)
    namespace: dict[str, Any] = {"__name__": "__main__"}
    exec(code, namespace)
    return namespace


def block_under(page: Path, heading: str, lang: str = "python") -> Block:
    (block,) = [b for b in parse(page)[0] if b.heading == heading and b.lang == lang]
    return block


def prose_of(page: Path) -> str:
    return "\n".join(parse(page)[1])


@pytest.fixture
def doc_env(moto_endpoint: str, monkeypatch: pytest.MonkeyPatch) -> str:
    """What a reader of the S3 pages has: a bucket, its endpoint and a handle key."""
    bucket = f"docs-{uuid.uuid4().hex}"
    moto_client(moto_endpoint).create_bucket(Bucket=bucket)
    monkeypatch.setenv("S3CLAIM_BUCKET", bucket)
    monkeypatch.setenv("S3CLAIM_HANDLE_KEY", "docs-handle-key-of-32-characters")
    monkeypatch.setenv("S3CLAIM_ENDPOINT_URL", moto_endpoint)
    return bucket


@pytest.mark.parametrize("block", IN_PROCESS, ids=lambda block: block.name)
def test_every_python_block_runs_and_prints_what_it_shows(
    block: Block,
    doc_env: str,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(tmp_path)  # a reader's folder, not the checkout: no block may need it
    run(block)
    printed = capsys.readouterr().out.splitlines()
    if block.shown_output:
        assert printed == block.shown_output


@pytest.mark.slow
@pytest.mark.parametrize("block", PROCESS_WIDE, ids=lambda block: block.name)
def test_every_block_that_sets_up_opentelemetry_exports_what_it_shows(
    block: Block, doc_env: str, tmp_path: Path
) -> None:
    import os
    import subprocess
    import sys

    from tests.telemetry.test_otlp import receiving

    script = tmp_path / "block.py"
    script.write_text("\n" * (block.line - 1) + block.code, encoding="utf-8")
    with receiving() as receiver:
        host, port = receiver.server_address[:2]
        env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
        env["OTEL_EXPORTER_OTLP_ENDPOINT"] = f"http://{host!s}:{port}"
        env["NO_PROXY"] = env["no_proxy"] = "127.0.0.1"
        done = subprocess.run(
            [sys.executable, str(script)], capture_output=True, text=True, env=env,
            cwd=str(ROOT), timeout=120, check=False,
        )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == block.shown_output
    names = {s.name for r in receiver.traces for rs in r.resource_spans for ss in rs.scope_spans
             for s in ss.spans}  # fmt: skip
    assert {"s3claim.check_in", "s3claim.fetch"} <= names
    metrics = {m.name for r in receiver.metrics for rm in r.resource_metrics
               for sm in rm.scope_metrics for m in sm.metrics}  # fmt: skip
    assert {"s3claim.claims", "s3claim.fetches"} <= metrics


@pytest.mark.slow
@pytest.mark.parametrize("block", PROCESS_WIDE, ids=lambda block: block.name)
def test_every_block_that_sets_up_opentelemetry_ends_soon_with_no_receiver(
    block: Block, doc_env: str, tmp_path: Path
) -> None:
    import os
    import subprocess
    import sys
    import time

    from devkit.servers import free_port

    script = tmp_path / "block.py"
    script.write_text(block.code, encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    env["OTEL_EXPORTER_OTLP_ENDPOINT"] = f"http://127.0.0.1:{free_port()}"  # nothing listens
    env["NO_PROXY"] = env["no_proxy"] = "127.0.0.1"
    began = time.monotonic()
    done = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, env=env,
        cwd=str(tmp_path), timeout=60, check=False,
    )  # fmt: skip
    took = time.monotonic() - began
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == block.shown_output
    assert took < 10, f"{took:.1f} s"  # 15 s of the exporters' retries at their default timeout


def test_every_block_names_its_language_and_the_json_parses() -> None:
    assert [block.name for block in BLOCKS if not block.lang] == []
    for block in BLOCKS:
        if block.lang == "json":
            json.loads(block.code)


def test_the_readme_opens_with_the_two_set_up_commands() -> None:
    first = BLOCKS[0]
    assert (first.page, first.lang) == (README, "sh")
    assert [line.split("#")[0].strip() for line in first.code.splitlines()] == [
        "make demo",
        "make test",
    ]


def test_every_terraform_apply_shown_follows_its_init() -> None:
    # A fresh checkout has no module installed: `apply` alone is "Error: Module not installed".
    pages = [*PAGES, ROOT / "terraform" / "README.md"]
    shown = [
        b for p in pages for b in parse(p)[0] if b.lang == "sh" and "terraform apply" in b.code
    ]
    assert shown
    for block in shown:
        before = block.code.split("terraform apply", 1)[0]
        assert "terraform init" in before, block.name


def test_the_readme_says_what_make_test_needs_and_how_long_it_takes() -> None:
    said = " ".join(prose_of(README).split("## What it is", 1)[0].split())
    assert "`make test` needs more, and takes about seven minutes" in said
    for need in ("Terraform on PATH", "npm", "`S3CLAIM_TF_PLUGIN_DIR`, default `/opt/tf-plugins`"):
        assert need in said, need
    terraform_tests = (ROOT / "tests" / "test_terraform.py").read_text(encoding="utf-8")
    assert 'os.environ.get("S3CLAIM_TF_PLUGIN_DIR", "/opt/tf-plugins")' in terraform_tests


def test_every_fixed_line_the_docs_quote_is_the_codes_word_for_word() -> None:
    """A fixed line of s3claim.wording quoted in prose (its first 24 characters found) is
    quoted whole, as the code writes it (the proxy's repeat-read line once drifted)."""
    import s3claim.wording as wording

    lines = {
        name: value
        for name, value in vars(wording).items()
        if name.isupper() and isinstance(value, str) and len(value) > 40 and "{" not in value
    }
    assert "REUSED_LINE" in lines
    drifted = []
    for page in PAGES:
        prose = " ".join(prose_of(page).split())
        for name, value in lines.items():
            said = " ".join(value.split())
            start = prose.find(said[:24])
            while start >= 0:
                if prose[start : start + len(said)] != said:
                    drifted.append(f"{page.name}: {name}")
                start = prose.find(said[:24], start + 1)
    assert drifted == []


def test_the_readme_is_a_front_door() -> None:
    assert len(README.read_text(encoding="utf-8").splitlines()) <= 200
    linked = set(re.findall(r"\]\(docs/([\w-]+\.md)\)", prose_of(README)))
    assert linked == {page.name for page in PAGES[1:]}  # every docs page, from the README


def test_the_library_quickstart_prints_what_the_readme_shows(
    capsys: pytest.CaptureFixture[str],
) -> None:
    quickstart = block_under(README, "Library quickstart (memory store)")
    namespace = run(quickstart)
    printed = capsys.readouterr().out
    result = namespace["result"]
    assert result.output == "Clause 1 sets the terms."
    assert [e.kind for e in result.events] == [
        "model_called",
        "tool_result_stored",
        "model_called",
        "claim_fetched",
        "model_called",
        "run_finished",
    ]
    assert f"[{len(namespace['CONTRACT'])} characters, " in result.messages[2].content
    # The README shows the output with clauses left out ("...") and the handle, which differs
    # on every run, elided ("claim:1d0695…" stands for any handle of the same width).
    shown = block_under(README, "Library quickstart (memory store)", lang="text").code
    elided = r"(claim:[124])[0-9a-f]{0,31}…"
    assert re.search(elided, shown)
    pattern = r"\n(?:.*\n)*?".join(re.escape(part) for part in shown.split("\n...\n"))
    assert re.fullmatch(re.sub(elided, r"\1[0-9a-f]{32}", pattern), printed)


def test_every_handle_shown_is_one_the_format_can_produce() -> None:
    """`claim:`, a width digit (1, 2 or 4), 32 lowercase hex digits; or a prefix of one, elided."""
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        for handle in re.findall(r"claim:[0-9A-Za-z]+…?", text):
            assert re.fullmatch(r"claim:[124]([0-9a-f]{32}|[0-9a-f]{0,31}…)", handle), (
                f"{page.name}: {handle}"
            )


def test_the_search_example_prints_the_match_and_its_window(
    capsys: pytest.CaptureFixture[str],
) -> None:
    search = block_under(ROOT / "docs" / "reading.md", "`search_result`: searching inside a claim")
    assert search.code.startswith("# search_result:")
    run(search)
    assert capsys.readouterr().out.splitlines() == [
        "{'kind': 'claim_searched', 'pattern_chars': 10, 'matches': 1, 'total_matches': 1}",
        "1 120085 2718",
        "term 2718.",
        "Clause 2719. The parties agre",
    ]
    assert search.shown_output[1:] == [
        "1 120085 2718",
        "term 2718.",
        "Clause 2719. The parties agre",
    ]


@pytest.mark.parametrize("framework", ["OpenAI Agents SDK", "LangChain", "pydantic-ai"])
def test_each_framework_snippet_runs_as_written(framework: str) -> None:
    seen = run(block_under(ROOT / "docs" / "adapters.md", framework))["seen"]
    assert isinstance(seen, str)
    assert seen.startswith("Clause 1. The parties agree to term 1.\n\n")
    assert re.search(
        r"\[135740 characters, \d+ not shown\. Call fetch_result with handle='claim:", seen
    )
    assert len(seen) < 700


def test_the_agents_sdk_snippet_prints_only_what_it_shows_without_an_openai_key(
    tmp_path: Path,
) -> None:
    """Run as a reader would, in a fresh interpreter: what it shows, and no trace-export
    notice at exit."""
    import os
    import subprocess
    import sys

    block = block_under(ROOT / "docs" / "adapters.md", "OpenAI Agents SDK")
    script = tmp_path / "agents_snippet.py"
    script.write_text(block.code, encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI_")}
    done = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=120
    )
    shown = "".join(f"{line}\n" for line in block.shown_output)
    assert (done.returncode, done.stdout, done.stderr) == (0, shown, "")


def test_the_adapter_table_names_each_framework_hook_and_its_extra() -> None:
    table = prose_of(ROOT / "docs" / "adapters.md")
    rows = re.findall(r"^\| (.+?) \(`s3claim\[([a-z-]+)\]`\) \| (.+?) \|", table, re.MULTILINE)
    assert [(name, extra) for name, extra, _ in rows] == [
        ("OpenAI Agents SDK", "openai-agents"),
        ("LangChain v1", "langchain"),
        ("pydantic-ai", "pydantic-ai"),
    ]
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert {"openai-agents", "langchain", "pydantic-ai"} <= set(
        pyproject["project"]["optional-dependencies"]
    )


def test_every_setting_is_in_the_table_and_nothing_else() -> None:
    table = prose_of(ROOT / "docs" / "s3.md")
    documented = set(re.findall(r"^\| `(S3CLAIM_[A-Z_]+)` \|", table, re.MULTILINE))
    assert documented == {f"S3CLAIM_{name.upper()}" for name in S3ClaimSettings.model_fields}


@pytest.mark.slow
def test_the_inspector_cli_line_runs_as_written(tmp_path: Path, moto_endpoint: str) -> None:
    """The Inspector's CLI line of docs/mcp-proxy.md, run with the pinned Inspector and
    filesystem server in place of npx's, and its bucket on moto (the line's --store s3): its
    arguments, in their order, are what the Inspector takes."""
    import shlex
    import subprocess
    import sys

    from devkit.third_party import install_filesystem, install_inspector

    (block,) = [b for b in parse(ROOT / "docs" / "mcp-proxy.md")[0] if "inspector --cli" in b.code]
    line = " ".join(block.code.split("npx @modelcontextprotocol/inspector --cli", 1)[1].split())
    words = shlex.split(line.replace("\\ ", " "))
    server = ["npx", "-y", "@modelcontextprotocol/server-filesystem", "~/docs"]
    assert words[-len(server) :] == server and words.count("s3claim") == 1
    assert words[-len(server) - 3 : -len(server) - 1] == ["--store", "s3"]
    words[-len(server) :] = [str(install_filesystem()), str(tmp_path)]
    bucket = f"inspector-{uuid.uuid4().hex}"
    moto_client(moto_endpoint).create_bucket(Bucket=bucket)
    given = {
        "S3CLAIM_BUCKET=my-claims": f"S3CLAIM_BUCKET={bucket}",
        "S3CLAIM_HANDLE_KEY=...": f"S3CLAIM_HANDLE_KEY={'k' * 32}",
    }
    assert set(given) <= set(words)
    words = [given.get(w, w) for w in words]
    method = words.index("--method")
    aws = ["AWS_ACCESS_KEY_ID=testing", "AWS_SECRET_ACCESS_KEY=testing"]  # the credentials' source
    for setting in (f"S3CLAIM_ENDPOINT_URL={moto_endpoint}", *aws):
        words[method:method] = ["-e", setting]
    at = words.index("s3claim")
    argv = [*install_inspector(), *words[:at], sys.executable, "-m", *words[at:]]
    done = subprocess.run(
        argv, capture_output=True, text=True, timeout=60, cwd=tmp_path, check=False
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert '"fetch_result"' in done.stdout


def test_every_command_is_documented() -> None:
    commands = {c.name or c.callback.__name__ for c in app.registered_commands if c.callback}
    table = prose_of(ROOT / "docs" / "operations.md")
    assert set(re.findall(r"^\| `s3claim ([\w-]+)", table, re.MULTILINE)) == commands


def _anchors(page: Path) -> set[str]:
    """GitHub's heading anchors: lower case, punctuation dropped, spaces as hyphens."""
    headings = [line.lstrip("#").strip() for line in parse(page)[1] if line.startswith("#")]
    return {re.sub(r"[^\w\- ]", "", h.lower()).replace(" ", "-") for h in headings}


@pytest.mark.parametrize("page", PAGES, ids=lambda page: page.name)
def test_every_relative_link_leads_somewhere(page: Path) -> None:
    prose = re.sub(r"`[^`\n]*`", "", prose_of(page))  # inline code is not a link
    for target in re.findall(r"\]\(([^)\s]+)\)", prose):
        if re.match(r"[a-z]+:", target):
            continue  # https:, mailto:
        path, _, anchor = target.partition("#")
        linked = (page.parent / path).resolve() if path else page
        assert linked.exists(), f"{page.name}: {target}"
        if anchor and linked.suffix == ".md":
            assert anchor in _anchors(linked), f"{page.name}: {target}"


def test_the_layout_section_comes_last_and_names_paths_that_exist() -> None:
    text = README.read_text(encoding="utf-8")
    assert re.findall(r"^## (.+)$", text, re.MULTILINE)[-1] == "Layout"
    layout = text.split("\n## Layout\n", 1)[1]
    paths = [p for p in re.findall(r"`([\w./]+)`", layout) if p.endswith(("/", ".py"))]
    assert {"s3/", "_reading/", "_boundary/", "hosting.py", "wording.py"} <= set(paths)
    for path in paths:
        where = ROOT / path if path.startswith("s3claim/") else ROOT / "s3claim" / path
        assert where.exists(), path
