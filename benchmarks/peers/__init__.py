"""Side by side with the peers: the same reading tasks through s3claim and three other
systems that store oversized tool results, each driven by a scripted policy with its own
read tools. `benchmarks.measures.peers` runs it; each peer runs in a venv of its own
(`make bench-peers-venvs`), as a subprocess that prints JSON.

The peer scripts (`harness_peer`, `deepagents_peer`, `strands_peer`) import nothing from the
project but `benchmarks.peers.common`, which is standard library only.
"""
