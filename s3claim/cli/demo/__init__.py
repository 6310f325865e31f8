"""`s3claim demo`: the counsel scenario, run with and without the claim check, measured.

The scenario and its contract are the ones the benchmarks and the tests measure too.
"""

from s3claim.cli.demo._command import demo
from s3claim.cli.demo._contract import PARTIES, contract
from s3claim.cli.demo._scenario import (
    AGENT,
    QUESTION,
    SYSTEM,
    TENANT,
    Scenario,
    baseline_script,
    counsel_runner,
    counsel_script,
    prefill_by_turn,
    read_contract_tool,
    run_scenario,
)

__all__ = [
    "AGENT",
    "PARTIES",
    "QUESTION",
    "SYSTEM",
    "TENANT",
    "Scenario",
    "baseline_script",
    "contract",
    "counsel_runner",
    "counsel_script",
    "demo",
    "prefill_by_turn",
    "read_contract_tool",
    "run_scenario",
]
