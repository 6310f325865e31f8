"""`s3claim demo`: the counsel scenario, run with and without the claim check, measured.

The scenario (`counsel_runner`, `run_scenario`) and its contract (`contract`) are the same the
benchmarks and the tests measure; the command renders them, on an embedded S3 unless a bucket
is configured, and `--failover` kills the run's process midway and resumes it in another.
"""

from s3claim.cli.demo._command import demo
from s3claim.cli.demo._contract import ARTICLES, PARTIES, contract
from s3claim.cli.demo._scenario import (
    AGENT,
    QUESTION,
    SYSTEM,
    TENANT,
    Scenario,
    TurnRow,
    baseline_script,
    counsel_runner,
    counsel_script,
    prefill_by_turn,
    read_contract_calls,
    read_contract_tool,
    run_scenario,
)

__all__ = [
    "AGENT",
    "ARTICLES",
    "PARTIES",
    "QUESTION",
    "SYSTEM",
    "TENANT",
    "Scenario",
    "TurnRow",
    "baseline_script",
    "contract",
    "counsel_runner",
    "counsel_script",
    "demo",
    "prefill_by_turn",
    "read_contract_calls",
    "read_contract_tool",
    "run_scenario",
]
