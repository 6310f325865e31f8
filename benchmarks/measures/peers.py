"""Measure: side by side with the peers (issue 19), three tasks on three documents.

s3claim (two policies, see `benchmarks.peers.s3claim_side`) against pydantic-ai-harness's
`ToolOutputLimits`, LangChain Deep Agents' large-result eviction and Strands'
`ContextOffloader`, each in a venv of its own (`make bench-peers-venvs`), each driven by a
scripted policy with its own read tools (`benchmarks.peers.*_peer`). Per task: the characters
that entered the model's context (the preview and every tool result), the read calls, the
bytes read from storage, and whether the answer is exact.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from importlib.metadata import version
from pathlib import Path
from typing import Any

from benchmarks.context import Bench
from benchmarks.peers import s3claim_side
from benchmarks.peers.documents import Document, Task, documents
from benchmarks.report import Section, Table
from benchmarks.stats import fmt_bytes, fmt_int
from s3claim.policy import ClaimCheckPolicy

__all__ = ["PEERS", "peer_results", "run"]

ROOT = Path(__file__).resolve().parents[2]
PEER_VENVS = ROOT / ".venv-peers"
PEERS = {
    "harness": ("pydantic-ai-harness", "pydantic-ai-harness", "benchmarks.peers.harness_peer"),
    "deepagents": ("Deep Agents", "deepagents", "benchmarks.peers.deepagents_peer"),
    "strands": ("Strands", "strands-agents", "benchmarks.peers.strands_peer"),
}
SYSTEMS = ("s3claim (issue 19 modes)", "s3claim (offset + search)", *(p[0] for p in PEERS.values()))


def _exact(task: Task, doc: Document, answer: str | None) -> bool:
    if answer is None:
        return False
    if task.unit == "record":
        try:
            return bool(json.loads(answer) == json.loads(task.expected))
        except ValueError:
            return False
    if task.id == "tail":  # line readers cannot show a final newline: the text before it counts
        return answer in (task.expected, doc.text.rstrip("\n")[-len(task.expected) :])
    return answer == task.expected


def peer_results(
    name: str, spec_path: Path, module: str | None = None
) -> tuple[list[dict[str, Any]] | None, str]:
    """What `python -m module < spec_path` prints (JSON) in the peer `name`'s own venv (its
    side-by-side module by default) and the peer's version; or None and why not."""
    _, package, default = PEERS[name]
    module = module or default
    python = PEER_VENVS / name / "bin" / "python"
    if not python.exists():
        return None, f"no venv at {python.relative_to(ROOT)}: run `make bench-peers-venvs`"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    with spec_path.open() as spec:
        done = subprocess.run(  # noqa: S603  (our own interpreter and module)
            [str(python), "-m", module],
            stdin=spec,
            capture_output=True,
            text=True,
            env=env,
            cwd=spec_path.parent,
            timeout=1800,
            check=False,
        )
    if done.returncode != 0:
        return None, f"failed ({done.returncode}): {done.stderr.strip().splitlines()[-1:]}"
    found = subprocess.run(  # noqa: S603
        [str(python), "-c", f"from importlib.metadata import version; print(version({package!r}))"],
        capture_output=True,
        text=True,
        check=False,
    )
    results: list[dict[str, Any]] = json.loads(done.stdout)
    return results, found.stdout.strip()


def _spec(docs: tuple[Document, ...], workdir: Path) -> Path:
    entries = []
    for doc in docs:
        path = workdir / f"{doc.name}.txt"
        path.write_text(doc.text, encoding="utf-8")
        tasks = [{"id": t.id, "spec": t.spec} for t in doc.tasks]
        entries.append({"name": doc.name, "kind": doc.kind, "path": str(path), "tasks": tasks})
    spec = workdir / "spec.json"
    spec.write_text(json.dumps({"workdir": str(workdir), "documents": entries}))
    return spec


def _cell(result: dict[str, Any] | None, exact: bool) -> str:
    if result is None:
        return "—"
    if result["note"]:
        return result["note"].split(":", 1)[0]
    return f"{fmt_int(result['context_chars'])} · {result['calls']} · {'yes' if exact else 'no'}"


def run(bench: Bench) -> Section:
    docs = documents()
    results: dict[str, dict[tuple[str, str], dict[str, Any]]] = {s: {} for s in SYSTEMS}
    notes: list[str] = []
    versions = [f"s3claim {version('s3claim')}"]
    for system, policy in zip(SYSTEMS[:2], s3claim_side.POLICIES, strict=True):
        for r in s3claim_side.run(bench, docs, policy):
            results[system][(r["document"], r["task"])] = r
    with tempfile.TemporaryDirectory(prefix="s3claim-peers-") as tmp:
        spec = _spec(docs, Path(tmp))
        for name, (label, package, _) in PEERS.items():
            print(f"  peers: running {label}...", file=sys.stderr, flush=True)
            got, said = peer_results(name, spec)
            if got is None:
                notes.append(f"{label}: {said}")
                continue
            versions.append(f"{package} {said}")
            for r in got:
                results[label][(r["document"], r["task"])] = r
    modes = s3claim_side.capabilities(s3claim_side.claim_check_tool(_memory_store()))
    if "tail_chars" in ClaimCheckPolicy.model_fields:
        modes.add("ClaimCheckPolicy(tail_chars)")
    summary_rows: list[list[str]] = []
    detail: list[Table] = []
    exact_count = dict.fromkeys(SYSTEMS, 0)
    cheapest = 0  # tasks where s3claim, exact, put fewer characters in than every exact peer
    for doc in docs:
        rows: list[list[str]] = []
        for task in doc.tasks:
            cells = []
            for system in SYSTEMS:
                r = results[system].get((doc.name, task.id))
                exact = r is not None and _exact(task, doc, r["answer"])
                cells.append(_cell(r, exact))
                if r is None:
                    continue
                rows.append(
                    [
                        task.id,
                        system,
                        r["note"].split(":", 1)[0] if r["note"] else fmt_int(r["context_chars"]),
                        fmt_int(r["preview_chars"]),
                        "—" if r["note"] else fmt_int(r["calls"]),
                        "—" if r["note"] else fmt_bytes(r["bytes_read"]),
                        "—" if r["note"] else ("yes" if exact else "no"),
                        r["note"].split(": ", 1)[-1] if r["note"] else r["how"].replace("|", "\\|"),
                    ]
                )
            summary_rows.append([doc.name, task.title, *cells])
            exact_here = {
                system: r["context_chars"]
                for system in SYSTEMS
                if (r := results[system].get((doc.name, task.id))) is not None
                and not r["note"]
                and _exact(task, doc, r["answer"])
            }
            for system in exact_here:
                exact_count[system] += 1
            ours = exact_here.get(SYSTEMS[0])
            peers = [c for system, c in exact_here.items() if system not in SYSTEMS[:2]]
            if ours is not None and all(ours < c for c in peers):
                cheapest += 1
        detail.append(
            Table(
                title=f"{doc.name}: {doc.title} ({len(doc.text):,} characters)",
                headers=[
                    "task",
                    "system",
                    "context chars",
                    "preview",
                    "read calls",
                    "bytes read",
                    "exact",
                    "how",
                ],
                rows=rows,
                align_left=2,
            )
        )
    summary = Table(
        title="Characters into the context · read calls · exact answer",
        headers=["document", "task", *SYSTEMS],
        rows=summary_rows,
        align_left=2,
    )
    notes += [
        "Versions: " + ", ".join(versions) + ". Issue-19 modes the installed s3claim "
        f"has: {', '.join(sorted(modes)) or 'none'}. Both s3claim arms check in with the "
        "default `ClaimCheckPolicy` (no tail in the preview), as every peer runs on its "
        "defaults.",
        "Context characters count the preview the system left in place of the document plus "
        "every read result, as the model received them; read calls leave out the tool that "
        "produced the document. Bytes read: s3claim's GetObject response bodies on moto "
        "(botocore event hooks); the peers' own backends hand each read the whole stored "
        "file (harness: its file store; Deep Agents: the state backend; Strands: its "
        "in-memory storage), which is what is counted for them.",
        "A line reader cannot show whether a text ends with a newline: for the tail, the last "
        "2,000 characters before a final newline count as exact too.",
    ]
    tasks = sum(len(doc.tasks) for doc in docs)
    headline = (
        f"Side by side with the peers ({tasks} tasks on 4 documents): exact answers "
        + ", ".join(f"{system} {exact_count[system]}" for system in SYSTEMS)
        + f"; s3claim (issue 19 modes) puts fewer characters into the context than every "
        f"peer with an exact answer on {cheapest} of {tasks}."
    )
    return Section(
        headlines=[headline],
        title="Side by side with the peers",
        intro=(
            "The same three tasks on each document (find a named clause, record or error "
            "line; read the last 2,000 characters; read clause 37, record 1,500 or log line "
            "37,500), through s3claim and three peers, each with its own read tools and a "
            "scripted policy (no model): `benchmarks/peers/`. `not available` marks a task "
            "whose issue-19 reading mode the installed s3claim does not have yet; `no such mode`, "
            "a task the spec's two tools (offset reads and search) cannot address."
        ),
        tables=[summary, *detail],
        notes=notes,
    )


def _memory_store() -> Any:
    from s3claim.memory import MemoryClaimCheckStore

    return MemoryClaimCheckStore()
