"""OpenTelemetry traces of every run: where they go (``destinations``) and what they hold (``RunTracer``)."""
