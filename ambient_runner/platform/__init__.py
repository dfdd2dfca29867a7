"""The ambient-code platform's side of the runner: its operator's env vars, the first turn through its backend."""
