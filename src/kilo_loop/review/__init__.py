"""The review loop: reviewer findings, the blocking count, the retry budget, the gate, the ledger."""
